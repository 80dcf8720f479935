// Package lazyre is a regular expression compiled at its first use, not
// when the program starts.
//
// The contract: New(expr) returns a function that compiles expr once (as
// regexp.MustCompile: an invalid expression panics, at its first use) and
// returns the same *regexp.Regexp ever after, safely from any goroutine.
//
// Why: Harvey's binary is also its sandbox launcher, started for every
// command where the sandbox has no namespaces (Landlock only) and for each
// spare launcher otherwise; every package-level regexp.MustCompile of every
// package runs at each of those starts, and the launcher uses none of them
// (issue 61: a command's cost). Package-level expressions are written
// `var nameRE = lazyre.New(...)` and used as `nameRE().MatchString(s)`;
// TestNoRegexpCompiledAtStart keeps it so.
package lazyre

import (
	"regexp"
	"sync"
)

// New is expr, compiled at the first call.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
