package harvey

import (
	"os"

	"golang.org/x/term"
)

// isTTY reports whether x is a terminal.
func isTTY(x any) bool {
	f, ok := x.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
