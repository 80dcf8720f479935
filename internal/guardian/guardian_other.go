//go:build !linux

package guardian

// Main starts no guardian where there is no subreaper nor parent-death
// signal to keep one (macOS): the session is the process the shell started.
func Main() (int, bool) { return 0, false }

// Guarded: no guardian here.
func Guarded() int { return 0 }

// Keep: no guardian to tell.
func Keep(int) {}
