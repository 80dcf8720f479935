package runner

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// Moving a command to the background (issue 76): Proc.Detach, when a
// writer arrives on it while the child runs, ends Run at once with
// Result.Moved — the child runs on, with no deadline and past the
// caller's end, its further output going to that writer (and to
// Proc.Keep) uncapped and no longer echoed — ended by Moved.Stop, by its
// own exit, or with Harvey, as a job Start started is.

// errStopped is why a moved child was stopped: its Stop.
var errStopped = errors.New("stopped")

// life is what stops a child Run started: the caller's end and its
// deadline, until it is moved; then only Moved.Stop.
type life struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	moved  bool
	free   chan struct{} // closed when the child ended or was moved
	once   sync.Once
	ran    chan struct{} // closed once the child runs (pid set)
	pid    int
	keep   func() // tells the launcher to forget its own deadline (nil: it has none)
	sig    int    // the signal that ended a program started here (0: none)
}

// newLife follows ctx and the deadline for a child that may be moved.
func newLife(ctx context.Context, timeout time.Duration) *life {
	l := &life{free: make(chan struct{}), ran: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	go func() {
		t := time.NewTimer(timeout)
		defer t.Stop()
		var why error
		select {
		case <-ctx.Done():
			why = ctx.Err()
		case <-t.C:
			why = context.DeadlineExceeded
		case <-l.free:
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.moved {
			l.cancel(why)
		}
	}()
	return l
}

// running records the child's pid once it runs, and how its launcher
// is told that it runs on past its deadline (nil: it has none).
func (l *life) running(pid int, keep func()) {
	l.pid, l.keep = pid, keep
	close(l.ran)
}

// release stops following the caller and the deadline.
func (l *life) release() { l.once.Do(func() { close(l.free) }) }

// timedOut reports whether the deadline stopped the child.
func (l *life) timedOut() bool { return errors.Is(context.Cause(l.ctx), context.DeadlineExceeded) }

// move makes the child the caller's to keep, unless it was stopped
// already (its deadline or the caller's end came first).
func (l *life) move() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return false
	}
	l.moved = true
	l.release()
	return true
}

// outcome is how the child's run ended (started false: it never ran).
type outcome struct {
	code    int
	started bool
	err     error
}

// follow runs run (which starts the child, records it with running, and
// waits for it) and returns its outcome, or, when a writer comes on
// detach while the child runs, moves it there and returns it as Moved.
func (l *life) follow(run func() outcome, detach <-chan io.Writer, w *CapWriter) (outcome, *Moved) {
	if detach == nil { // it cannot move: waited for here (a hand-off to another goroutine costs a command back to back milliseconds on a busy machine)
		oc := run()
		l.release()
		return oc, nil
	}
	fin := make(chan outcome, 1)
	go func() { fin <- run() }()
	for {
		select {
		case oc := <-fin:
			l.release()
			return oc, nil
		case to := <-detach:
			select {
			case <-l.ran:
			case oc := <-fin:
				l.release()
				return oc, nil
			}
			if !l.move() {
				continue // stopped already: its end follows
			}
			w.moveTo(to)
			if l.keep != nil {
				l.keep()
			}
			m := &Moved{l: l, done: make(chan struct{})}
			go func() {
				oc := <-fin
				m.code = oc.code
				if m.code < 0 && l.sig > 0 {
					m.code = 128 + l.sig
				}
				close(m.done)
				l.cancel(nil)
			}()
			return outcome{}, m
		}
	}
}

// Moved is a command Run moved to the background (Result.Moved): a job's
// process (internal/jobs), ended by Stop, by its own exit or with Harvey.
type Moved struct {
	l    *life
	done chan struct{}
	code int
}

// Pid is the process whose tree is the command (its launcher, in the
// sandbox).
func (m *Moved) Pid() int { return m.l.pid }

// Done is closed when the command and everything it started have ended.
func (m *Moved) Done() <-chan struct{} { return m.done }

// ExitCode is its exit status (128+N for signal N), once Done.
func (m *Moved) ExitCode() int { return m.code }

// Stop ends the command and everything it started, and waits for that
// (at most a few seconds past the stop's own grace).
func (m *Moved) Stop() {
	m.l.cancel(errStopped)
	select {
	case <-m.done:
	case <-time.After(5 * time.Second):
	}
}

// moveTo sends what the child writes from now on to to (and to keep),
// uncapped and no longer echoed: the child is a background job's.
func (w *CapWriter) moveTo(to io.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tee != nil {
		w.tee.flush()
		w.tee = nil
	}
	w.moved = to
}
