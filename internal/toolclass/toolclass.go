// Package toolclass names how a tool call ended, in one word a script (and
// the model) can act on: the model called it wrong, a rule or a person said
// no, it ran out of time, what it ran failed, or it met a failure that may
// pass (a server that crashed and was restarted, a connection reset).
//
// Contract:
//   - Of gives exactly one of OK, InvalidArgs, Refused, Timeout, Failed,
//     Transient for every outcome; the stream-json tool_result's "class"
//     and the model's [tool_result ... class=...] header are that word.
//   - A class is carried by the error itself (Mark), or read from what the
//     error wraps: refusal.ErrRefused and refusal.ErrDenied are Refused,
//     context.DeadlineExceeded and a network timeout are Timeout, a reset
//     or refused connection, a broken pipe and an unexpected EOF are
//     Transient. Nothing is classed by its text.
//   - Retryable reports what the executor may call once more: Transient,
//     and only for a tool whose call changes nothing (its caller decides
//     that: reads, searches, a tool of yours marked idempotent).
package toolclass

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/harvey-agent/harvey/internal/refusal"
)

// The classes.
const (
	OK          = "ok"
	InvalidArgs = "invalid_args"
	Refused     = "refused"
	Timeout     = "timeout"
	Failed      = "failed"
	Transient   = "transient"
)

type marked struct {
	class string
	err   error
}

func (m *marked) Error() string { return m.err.Error() }
func (m *marked) Unwrap() error { return m.err }

// Mark gives err the class (nil stays nil); its text is unchanged.
func Mark(class string, err error) error {
	if err == nil {
		return nil
	}
	return &marked{class: class, err: err}
}

// Of is the class of a call that returned err; when it returned none,
// hint (a result's own class: a command that timed out) or, failing
// that, Failed for what ran and failed and OK for the rest.
func Of(err error, failed bool, hint string) string {
	if err == nil {
		switch {
		case hint != "":
			return hint
		case failed:
			return Failed
		}
		return OK
	}
	var m *marked
	var ne net.Error
	switch {
	case errors.As(err, &m):
		return m.class
	case errors.Is(err, refusal.ErrRefused), errors.Is(err, refusal.ErrDenied):
		return Refused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EAGAIN):
		return Transient
	}
	return Failed
}

// Retryable reports whether a call that returned err may be made once
// more, when the tool changes nothing.
func Retryable(err error) bool { return err != nil && Of(err, false, "") == Transient }
