//go:build !linux

package harvey

// HardenProcess is a no-op where /proc/<pid>/environ does not exist.
func HardenProcess() {}
