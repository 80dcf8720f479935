package harvey

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
// The clients say which failures are transient (transientError); the loop
// here is the same for every backend. Text a cut stream already showed is
// not shown twice.

// Retry defaults suit a Raspberry Pi: five tries over about a minute, the
// time a model load can take.
const (
	DefaultRetryAttempts = 5
	DefaultRetryMaxWait  = 30 * time.Second
	maxRetryAttempts     = 10
	maxRetryWait         = 5 * time.Minute
	firstRetryWait       = 2 * time.Second
)

// retryPolicyOf is the retry policy the config says.
func retryPolicyOf(r RetryConfig) retryPolicy {
	p := retryPolicy{attempts: DefaultRetryAttempts, maxWait: DefaultRetryMaxWait}
	switch {
	case r.Attempts < 0:
		p.attempts = 0
	case r.Attempts > 0:
		p.attempts = min(r.Attempts, maxRetryAttempts)
	}
	if r.MaxWait > 0 {
		p.maxWait = min(time.Duration(r.MaxWait), maxRetryWait)
	}
	p.idle, _ = config.ParseIdle(string(r.Idle)) // checked when the config was read
	return p
}

// describe is the policy in one line, for /status.
func (p retryPolicy) describe() string {
	idle := "; a reply that sends nothing new is never cut (retry.idle: off)"
	if p.idle > 0 {
		idle = fmt.Sprintf("; a reply that sends nothing new for %s ends (retry.idle)", p.idle)
	}
	if p.attempts == 0 {
		return "off (retry.attempts: -1)" + idle
	}
	return fmt.Sprintf("up to %d retries of a failed model call, waiting %s, %s, ... at most %s each (retry: {attempts, max_wait})%s",
		p.attempts, firstRetryWait, 2*firstRetryWait, p.maxWait, idle)
}

// transientError is a model call that failed in a way a second try can
// fix. why says what happened in words a person reads ("Ollama is not
// answering (restarting?)"); after is how long the server asked to wait.
type transientError struct {
	err   error
	why   string
	after time.Duration
}

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// transient marks err as worth another try.
func transient(err error, why string, after time.Duration) error {
	return &transientError{err: err, why: why, after: after}
}

// retryPolicy is how a model call is tried again.
type retryPolicy struct {
	attempts int           // tries after the first
	maxWait  time.Duration // the longest single wait
	idle     time.Duration // how long one try's reply may make no progress (0: no limit)
	// notify says what happened and what it waits for (nil: nothing shown).
	notify func(string)
	// sleep waits d or until ctx is done (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

// wait is the pause before retry n (1-based): exponential from
// firstRetryWait, at most maxWait; a server's Retry-After is honoured.
func (p retryPolicy) wait(n int, after time.Duration) time.Duration {
	d := firstRetryWait << (n - 1)
	if after > 0 {
		d = after
	}
	return min(d, p.maxWait)
}

// chatCall is one try of a model call under ctx, writing its text to out.
type chatCall func(ctx context.Context, out io.Writer) (ChatStats, []anyllm.ToolCall, error)

// retried is how many tries a call needed, for the trace.
type retried struct{ retries int }

// chat runs call, trying again as the policy says. Every try writes
// through one replay writer, so what a cut stream showed is not shown
// again when the next try streams the same text.
func (p retryPolicy) chat(ctx context.Context, out io.Writer, call chatCall, rt *retried) (ChatStats, []anyllm.ToolCall, error) {
	rw := &replayWriter{out: out}
	for n := 1; ; n++ {
		rw.restart()
		st, calls, err := p.try(ctx, rw, call)
		var te *transientError
		if err == nil || !errors.As(err, &te) || ctx.Err() != nil {
			return st, calls, err
		}
		if n > p.attempts {
			if p.attempts == 0 {
				return st, calls, err
			}
			return st, calls, fmt.Errorf("%w (gave up after %d retries; retry.attempts in your config)", err, p.attempts)
		}
		d := p.wait(n, te.after)
		if te.after > p.maxWait {
			return st, calls, fmt.Errorf("%w (the server asks to wait %s, more than retry.max_wait %s)", err, te.after.Round(time.Second), p.maxWait)
		}
		if p.notify != nil {
			p.notify(fmt.Sprintf("%s — retry %d of %d in %s; Ctrl-C to stop", te.why, n, p.attempts, roundWait(d)))
		}
		if rt != nil {
			rt.retries++
		}
		sleep := p.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if err := sleep(ctx, d); err != nil {
			return st, nil, fmt.Errorf("cancelled while waiting to retry: %w", err)
		}
	}
}

// try is one call, ended when its reply makes no progress for p.idle.
func (p retryPolicy) try(ctx context.Context, out io.Writer, call chatCall) (ChatStats, []anyllm.ToolCall, error) {
	cctx, stop := watchReply(ctx, p.idle)
	defer stop()
	st, calls, err := call(cctx, out)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errReplyIdle) {
		err = idleError(p.idle)
	}
	return st, calls, err
}

func roundWait(d time.Duration) string {
	if d < time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}

// sleepCtx waits d, or returns ctx's error as soon as it is done (Ctrl-C
// stops the wait at once).
func sleepCtx(ctx context.Context, d time.Duration) error {
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

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string) time.Duration {
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

// statusWithRetryAfter is an HTTP error status with the server's
// Retry-After.
type statusWithRetryAfter struct {
	err   error
	after time.Duration
}

func (e *statusWithRetryAfter) Error() string { return e.err.Error() }
func (e *statusWithRetryAfter) Unwrap() error { return e.err }

// connectionTrouble says what a transport failure means, when a second
// try can fix it: refused (the server is restarting) or dropped.
func connectionTrouble(err error) (string, bool) {
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

// ollamaLoading are the words of Ollama's errors while a model loads or
// its runner restarts.
var ollamaLoading = []string{"llama runner process has terminated", "model failed to load", "loading model", "llama runner", "runner process", "server busy", "unexpected server status", "no slots"}

// transientStatus says whether an HTTP error status is worth another try,
// and in which words: 429 and the 5xx a restart or a load answers.
func transientStatus(code int, msg string) (string, bool) {
	low := strings.ToLower(msg)
	switch {
	case code == http.StatusTooManyRequests:
		return "rate limited", true
	case code == http.StatusServiceUnavailable:
		return "busy (503)", true
	case code >= 500 && bytes.Contains([]byte(low), []byte("context")) && strings.Contains(low, "length"):
		return "", false
	case code == http.StatusInternalServerError:
		for _, w := range ollamaLoading {
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
