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
