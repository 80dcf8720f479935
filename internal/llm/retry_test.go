package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// The policy: waits double from 2 s, a server's Retry-After is honoured,
// each wait stays within max_wait, a Retry-After past it gives up at once,
// attempts: -1 turns retries off, and a cancelled wait ends at once.
func TestRetryPolicy(t *testing.T) {
	p := PolicyOf(config.RetryConfig{})
	if p.Attempts != DefaultRetryAttempts || p.MaxWait != DefaultRetryMaxWait {
		t.Fatalf("defaults: %+v", p)
	}
	var waits []time.Duration
	for n := 1; n <= 5; n++ {
		waits = append(waits, p.Wait(n, 0))
	}
	if waits[0] != 2*time.Second || waits[1] != 4*time.Second || waits[3] != 16*time.Second || waits[4] != 30*time.Second {
		t.Fatalf("waits %v", waits)
	}
	if p.Wait(1, 7*time.Second) != 7*time.Second {
		t.Fatal("Retry-After not honoured")
	}
	if PolicyOf(config.RetryConfig{Attempts: -1}).Attempts != 0 || PolicyOf(config.RetryConfig{Attempts: 99}).Attempts != MaxRetryAttempts {
		t.Fatal("attempts bounds")
	}
	calls := 0
	fail := func(after time.Duration) ChatCall {
		return func(context.Context, io.Writer) (ChatStats, []anyllm.ToolCall, error) {
			calls++
			return ChatStats{}, nil, Transient(errors.New("busy"), "busy", after)
		}
	}
	q := RetryPolicy{Attempts: 3, MaxWait: time.Second, Sleep: func(context.Context, time.Duration) error { return nil }}
	if _, _, err := q.Chat(t.Context(), &bytes.Buffer{}, fail(time.Minute), nil); err == nil || calls != 1 || !strings.Contains(err.Error(), "more than retry.max_wait") {
		t.Fatalf("Retry-After past max_wait: %v after %d calls", err, calls)
	}
	calls = 0
	if _, _, err := q.Chat(t.Context(), &bytes.Buffer{}, fail(0), nil); err == nil || calls != 4 || !strings.Contains(err.Error(), "gave up after 3 retries") {
		t.Fatalf("give up: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(t.Context())
	q.Sleep = nil
	q.MaxWait = time.Hour
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	if _, _, err := q.Chat(ctx, &bytes.Buffer{}, fail(0), nil); !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("a cancelled wait: %v after %s", err, time.Since(start))
	}
}

// What a restarting server looks like to the client, each a failure a
// second try can fix; a plain error is not.
func TestConnectionTroubleClasses(t *testing.T) {
	for _, err := range []error{
		&url.Error{Op: "Post", URL: "http://x", Err: syscall.ECONNREFUSED},
		&url.Error{Op: "Post", URL: "http://x", Err: syscall.ECONNRESET},
		&url.Error{Op: "Post", URL: "http://x", Err: io.EOF},
		&url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "write", Err: net.ErrClosed}},
		io.ErrUnexpectedEOF,
	} {
		if _, ok := ConnectionTrouble(err); !ok {
			t.Errorf("%v: not retried", err)
		}
	}
	if _, ok := ConnectionTrouble(errors.New("invalid character 'x'")); ok {
		t.Error("a plain error is retried")
	}
}
