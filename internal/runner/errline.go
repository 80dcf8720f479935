package runner

import (
	"strings"

	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// ErrLine is a program's stderr as one short line (git's, an MCP server's
// that failed to start): what went wrong, never a page of text (an error
// message can quote file content), redacted.
func ErrLine(stderr []byte) string {
	s := termtext.FirstLine(string(stderr))
	s = strings.TrimPrefix(s, "fatal: ")
	s = strings.TrimPrefix(s, "error: ")
	if len(s) > 160 {
		s = strings.ToValidUTF8(s[:160], "") + "…"
	}
	if s == "" {
		s = "no message"
	}
	return secrets.RedactWindow(termtext.Flat(s))
}

// LastWords is what a program that stopped said last about why (a hook
// that failed, an MCP server that did not start), as one short line,
// redacted: the last line of its stderr that names a failure (an error,
// an exception, a refusal: Node's "Error: Cannot find module", Python's
// last traceback line), else its last line; runtimes' trailers (Node's
// stack and version, a closing brace) never win over the reason.
func LastWords(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	pick := ""
	for i := len(lines) - 1; i >= 0 && pick == ""; i-- {
		if l := strings.TrimSpace(lines[i]); namesFailure(l) {
			pick = l
		}
	}
	if pick == "" {
		pick = strings.TrimSpace(lines[len(lines)-1])
	}
	pick = termtext.OneLine(pick)
	if len(pick) > 240 {
		// A long line is mostly paths (sh's "script: 2: cannot create
		// /deep/path: ..."): its head names who, its tail why.
		pick = strings.ToValidUTF8(pick[:80], "") + "…" + strings.ToValidUTF8(pick[len(pick)-150:], "")
	}
	if pick == "" {
		return "no message"
	}
	return secrets.RedactWindow(pick)
}

// namesFailure reports whether a line of stderr says what failed (not a
// stack frame).
func namesFailure(l string) bool {
	if strings.HasPrefix(l, "at ") || strings.HasPrefix(l, "File \"") {
		return false
	}
	low := strings.ToLower(l)
	for _, w := range []string{"error", "fatal", "exception", "denied", "cannot", "can't", "not found", "no such", "failed", "refused", "not permitted", "panic"} {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}
