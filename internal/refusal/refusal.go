// Package refusal is the one kind of error that says a rule refused an
// effect, as opposed to an effect that failed: the path policy, the git
// grammar and the private git directory all refuse with it, and the audit
// log records such an error as denied.
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

type refusalError struct{ msg string }

func (e *refusalError) Error() string { return e.msg }

func (e *refusalError) Unwrap() error { return ErrRefused }

// Errorf builds a refusal.
func Errorf(format string, args ...any) error {
	return &refusalError{fmt.Sprintf(format, args...)}
}
