//go:build !linux

package harvey

// hardenProcess is a no-op where /proc/<pid>/environ does not exist.
func hardenProcess() {}
