package harvey

import (
	"os"
	"strings"

	"golang.org/x/term"
)

// sameModel matches "llama3.2" with "llama3.2:latest".
func sameModel(a, b string) bool {
	if a == b {
		return true
	}
	trim := func(s string) string { return strings.TrimSuffix(s, ":latest") }
	return trim(a) == trim(b)
}

// isTTY reports whether x is a terminal.
func isTTY(x any) bool {
	f, ok := x.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
