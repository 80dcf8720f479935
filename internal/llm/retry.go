package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// A flaky server never costs a turn: a model call that fails in a way a
// second try can fix — the server restarting (connection refused or
// reset), busy or rate limited (429, honouring Retry-After; 503), failing
// while it loads a model (500 "llama runner process has terminated", 502,
// 504), or a stream cut before its last chunk — is tried again from the
// same request, with exponential backoff, up to retry.attempts times,
// each wait at most retry.max_wait. A 400, 401 or 404, or a context that is
// too long, is never retried: those get their one-line explanation at once.
// The clients say which failures are transient (TransientError); the loop
// here is the same for every backend. Text a cut stream already showed is
// not shown twice.

// Retry defaults suit a Raspberry Pi: five tries over about a minute, the
// time a model load can take.
const (
	DefaultRetryAttempts = 5
	DefaultRetryMaxWait  = 30 * time.Second
	MaxRetryAttempts     = 10
	MaxRetryWait         = 5 * time.Minute
	FirstRetryWait       = 2 * time.Second
)

// PolicyOf is the retry policy the config says.
func PolicyOf(r config.RetryConfig) RetryPolicy {
	p := RetryPolicy{Attempts: DefaultRetryAttempts, MaxWait: DefaultRetryMaxWait}
	switch {
	case r.Attempts < 0:
		p.Attempts = 0
	case r.Attempts > 0:
		p.Attempts = min(r.Attempts, MaxRetryAttempts)
	}
	if r.MaxWait > 0 {
		p.MaxWait = min(time.Duration(r.MaxWait), MaxRetryWait)
	}
	p.Idle, _ = config.ParseIdle(string(r.Idle)) // checked when the config was read
	return p
}

// Describe is the policy in one line, for /status.
func (p RetryPolicy) Describe() string {
	idle := "; a reply that sends nothing new is never cut (retry.idle: off)"
	if p.Idle > 0 {
		idle = fmt.Sprintf("; a reply that sends nothing new for %s ends (retry.idle)", p.Idle)
	}
	if p.Attempts == 0 {
		return "off (retry.attempts: -1)" + idle
	}
	return fmt.Sprintf("up to %d retries of a failed model call, waiting %s, %s, ... at most %s each (retry: {attempts, max_wait})%s",
		p.Attempts, FirstRetryWait, 2*FirstRetryWait, p.MaxWait, idle)
}

// TransientError is a model call that failed in a way a second try can
// fix. why says what happened in words a person reads ("Ollama is not
// answering (restarting?)"); after is how long the server asked to wait.
type TransientError struct {
	err   error
	why   string
	after time.Duration
}

func (e *TransientError) Error() string { return e.err.Error() }
func (e *TransientError) Unwrap() error { return e.err }

// Transient marks err as worth another try.
func Transient(err error, why string, after time.Duration) error {
	return &TransientError{err: err, why: why, after: after}
}

// RetryPolicy is how a model call is tried again.
type RetryPolicy struct {
	Attempts int           // tries after the first
	MaxWait  time.Duration // the longest single wait
	Idle     time.Duration // how long one try's reply may make no progress (0: no limit)
	// notify says what happened and what it waits for (nil: nothing shown).
	Notify func(string)
	// sleep waits d or until ctx is done (tests replace it).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Wait is the pause before retry n (1-based): exponential from
// FirstRetryWait, at most maxWait; a server's Retry-After is honoured.
func (p RetryPolicy) Wait(n int, after time.Duration) time.Duration {
	d := FirstRetryWait << (n - 1)
	if after > 0 {
		d = after
	}
	return min(d, p.MaxWait)
}

// ChatCall is one try of a model call under ctx, writing its text to out.
type ChatCall func(ctx context.Context, out io.Writer) (ChatStats, []anyllm.ToolCall, error)

// Retried is how many tries a call needed, for the trace.
type Retried struct{ Retries int }

// Chat runs call, trying again as the policy says. Every try writes
// through one replay writer, so what a cut stream showed is not shown
// again when the next try streams the same text.
func (p RetryPolicy) Chat(ctx context.Context, out io.Writer, call ChatCall, rt *Retried) (ChatStats, []anyllm.ToolCall, error) {
	rw := &replayWriter{out: out}
	for n := 1; ; n++ {
		rw.restart()
		st, calls, err := p.Try(ctx, rw, call)
		var te *TransientError
		if err == nil || !errors.As(err, &te) || ctx.Err() != nil {
			return st, calls, err
		}
		if n > p.Attempts {
			if p.Attempts == 0 {
				return st, calls, err
			}
			return st, calls, fmt.Errorf("%w (gave up after %d retries; retry.attempts in your config)", err, p.Attempts)
		}
		d := p.Wait(n, te.after)
		if te.after > p.MaxWait {
			return st, calls, fmt.Errorf("%w (the server asks to wait %s, more than retry.max_wait %s)", err, te.after.Round(time.Second), p.MaxWait)
		}
		if p.Notify != nil {
			p.Notify(fmt.Sprintf("%s — retry %d of %d in %s; Ctrl-C to stop", te.why, n, p.Attempts, RoundWait(d)))
		}
		if rt != nil {
			rt.Retries++
		}
		sleep := p.Sleep
		if sleep == nil {
			sleep = SleepCtx
		}
		if err := sleep(ctx, d); err != nil {
			return st, nil, fmt.Errorf("cancelled while waiting to retry: %w", err)
		}
	}
}

// Try is one call, ended when its reply makes no progress for p.Idle.
func (p RetryPolicy) Try(ctx context.Context, out io.Writer, call ChatCall) (ChatStats, []anyllm.ToolCall, error) {
	cctx, stop := WatchReply(ctx, p.Idle)
	defer stop()
	st, calls, err := call(cctx, out)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), ErrReplyIdle) {
		err = IdleError(p.Idle)
	}
	return st, calls, err
}

func RoundWait(d time.Duration) string {
	if d < time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}

// SleepCtx waits d, or returns ctx's error as soon as it is done (Ctrl-C
// stops the wait at once).
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// replayWriter passes a call's text on, once: a try after a cut stream
// streams the reply again from its start, and the bytes the user already
// saw are skipped while they match. A retry whose text differs (the model
// sampled another reply) is marked where it parts.
type replayWriter struct {
	out     io.Writer
	shown   []byte // what earlier tries wrote
	pos     int    // how far this try has matched shown
	parted  bool   // this try differs from what was shown
	current []byte // what this try wrote
}

// restart begins a new try.
func (r *replayWriter) restart() {
	if len(r.current) > len(r.shown) || r.parted {
		r.shown = r.current
	}
	r.pos, r.parted, r.current = 0, false, nil
}

func (r *replayWriter) Write(p []byte) (int, error) {
	n := len(p)
	r.current = append(r.current, p...)
	if !r.parted {
		k := 0
		for k < len(p) && r.pos < len(r.shown) && p[k] == r.shown[r.pos] {
			k++
			r.pos++
		}
		p = p[k:]
		if len(p) == 0 {
			return n, nil
		}
		if r.pos < len(r.shown) {
			r.parted = true
			if _, err := io.WriteString(r.out, "\n[the retried reply differs from here]\n"); err != nil {
				return 0, err
			}
		}
	}
	if _, err := r.out.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// ---- what each backend's failures mean ----

// RetryAfter reads a Retry-After header: seconds, or an HTTP date.
func RetryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// StatusWithRetryAfter is an HTTP error status with the server's
// Retry-After.
type StatusWithRetryAfter struct {
	Err   error
	After time.Duration
}

func (e *StatusWithRetryAfter) Error() string { return e.Err.Error() }
func (e *StatusWithRetryAfter) Unwrap() error { return e.Err }

// ConnectionTrouble says what a transport failure means, when a second
// try can fix it: refused (the server is restarting) or dropped.
func ConnectionTrouble(err error) (string, bool) {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused"):
		return "not answering (restarting?)", true
	case errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "connection reset"),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.EPIPE), strings.Contains(err.Error(), "broken pipe"),
		// a kept-alive connection the server closed while the request was
		// written on it
		errors.Is(err, net.ErrClosed), strings.Contains(err.Error(), "server closed idle connection"):
		return "dropped the connection", true
	}
	return "", false
}

// LoadingWords are the words of Ollama's errors while a model loads or
// its runner restarts.
var LoadingWords = []string{"llama runner process has terminated", "model failed to load", "loading model", "llama runner", "runner process", "server busy", "unexpected server status", "no slots"}

// TransientStatus says whether an HTTP error status is worth another try,
// and in which words: 429 and the 5xx a restart or a load answers.
func TransientStatus(code int, msg string) (string, bool) {
	low := strings.ToLower(msg)
	switch {
	case code == http.StatusTooManyRequests:
		return "rate limited", true
	case code == http.StatusServiceUnavailable:
		return "busy (503)", true
	case code >= 500 && bytes.Contains([]byte(low), []byte("context")) && strings.Contains(low, "length"):
		return "", false
	case code == http.StatusInternalServerError:
		for _, w := range LoadingWords {
			if strings.Contains(low, w) {
				return "loading the model (500)", true
			}
		}
		return "failed (500)", true
	case code == http.StatusBadGateway || code == http.StatusGatewayTimeout:
		return fmt.Sprintf("unreachable behind a gateway (%d)", code), true
	}
	return "", false
}
