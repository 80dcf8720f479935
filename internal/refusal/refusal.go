// Package refusal is the one kind of error that says a rule refused an
// effect, as opposed to an effect that failed: the path policy, the git
// grammar and the private git directory all refuse with it, and the audit
// log records such an error as denied. ErrDenied is the other kind a
// denial has: not approved, by the user or their hook.
//
// Contract: every error Errorf makes satisfies errors.Is(err, ErrRefused)
// and reads exactly as formatted (its text should say "refused" and why).
package refusal

import (
	"errors"
	"fmt"
)

// ErrRefused marks an effect a rule refused.
var ErrRefused = errors.New("refused")

// ErrDenied marks an effect a person or their hook did not approve: the
// user declined, a headless run asks nobody, or a hook blocked it.
var ErrDenied = errors.New("not approved")

type refusalError struct{ msg string }

func (e *refusalError) Error() string { return e.msg }

func (e *refusalError) Unwrap() error { return ErrRefused }

// Errorf builds a refusal.
func Errorf(format string, args ...any) error {
	return &refusalError{fmt.Sprintf(format, args...)}
}
