package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

// A reply that keeps making progress is never cut; one that stops for the
// idle time ends with a line that names the setting.
func TestIdleWatch(t *testing.T) {
	// A reply twice as long as the idle time, progressing every tenth of it
	// (wide enough margins for a loaded CI machine).
	p := RetryPolicy{Idle: 400 * time.Millisecond}
	_, _, err := p.Try(t.Context(), io.Discard, func(ctx context.Context, out io.Writer) (ChatStats, []anyllm.ToolCall, error) {
		for range 20 {
			time.Sleep(40 * time.Millisecond)
			Progressed(ctx)
		}
		return ChatStats{}, nil, ctx.Err()
	})
	if err != nil {
		t.Fatalf("a live reply was cut: %v", err)
	}
	_, _, err = p.Try(t.Context(), io.Discard, func(ctx context.Context, out io.Writer) (ChatStats, []anyllm.ToolCall, error) {
		<-ctx.Done()
		return ChatStats{}, nil, ctx.Err()
	})
	if err == nil || !strings.Contains(err.Error(), "retry.idle") {
		t.Fatalf("a silent reply: %v", err)
	}
	ctx, stop := WatchReply(t.Context(), 0)
	Progressed(ctx) // no watch: nothing to reset
	stop()
}

// The policy in a line, the waits as shown, a Retry-After header, the
// statuses worth another try.
func TestRetryWords(t *testing.T) {
	if d := (RetryPolicy{Attempts: 3, MaxWait: 30 * time.Second, Idle: time.Minute}).Describe(); !strings.Contains(d, "up to 3 retries") || !strings.Contains(d, "1m0s") {
		t.Errorf("%q", d)
	}
	if d := (RetryPolicy{}).Describe(); !strings.HasPrefix(d, "off") || !strings.Contains(d, "never cut") {
		t.Errorf("%q", d)
	}
	if RoundWait(300*time.Millisecond) != "300ms" || RoundWait(4200*time.Millisecond) != "4 s" {
		t.Error(RoundWait(300*time.Millisecond), RoundWait(4200*time.Millisecond))
	}
	if RetryAfter("7") != 7*time.Second || RetryAfter("") != 0 || RetryAfter("soon") != 0 {
		t.Error("Retry-After in seconds")
	}
	if d := RetryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); d < 59*time.Minute {
		t.Errorf("Retry-After as a date: %v", d)
	}
	for _, c := range []struct {
		code int
		msg  string
		ok   bool
	}{
		{429, "", true}, {503, "", true}, {500, "llama runner process has terminated", true},
		{500, "context length exceeded", false}, {500, "something else", true}, {502, "", true}, {400, "bad", false},
	} {
		if _, ok := TransientStatus(c.code, c.msg); ok != c.ok {
			t.Errorf("%d %q: %v", c.code, c.msg, ok)
		}
	}
	e := &StatusWithRetryAfter{Err: errors.New("429"), After: time.Second}
	if e.Error() != "429" || errors.Unwrap(e).Error() != "429" {
		t.Error("StatusWithRetryAfter")
	}
	te := Transient(errors.New("x"), "why", 0)
	if te.Error() != "x" || errors.Unwrap(te).Error() != "x" {
		t.Error("TransientError")
	}
}

// What a turn's line says, and the figures added over its calls.
func TestChatStats(t *testing.T) {
	var s ChatStats
	s.Add(ChatStats{PromptTokens: 100, ReplyTokens: 10, Elapsed: time.Second, TokensPerSec: 10})
	s.Add(ChatStats{PromptTokens: 150, ReplyTokens: 5, Elapsed: 500 * time.Millisecond, TokensPerSec: 12})
	if s.PromptTokens != 150 || s.ReplyTokens != 15 || s.Elapsed != 1500*time.Millisecond || s.TokensPerSec != 12 {
		t.Fatalf("%+v", s)
	}
	if got := s.Format(); got != "150 prompt + 15 reply tokens · 1.5s · 12.0 tok/s" {
		t.Errorf("%q", got)
	}
	if (ChatStats{Elapsed: time.Second}).Format() != "1s" {
		t.Error("a line without tokens")
	}
	if CapYes.String() != "yes" || CapNo.String() != "no" || CapUnknown.String() != "unknown" {
		t.Error("Capability")
	}
	msgs := []Message{{Role: "user", Content: strings.Repeat("a", 400)}}
	if n := EstimateTokens(msgs); n != 104 {
		t.Errorf("EstimateTokens: %d", n)
	}
	for id, ok := range map[string]bool{"call_abc-123": true, "": false, "a b": false, "x]": false, strings.Repeat("a", 65): false} {
		if ValidCallID(id) != ok {
			t.Errorf("ValidCallID(%q)", id)
		}
	}
}
