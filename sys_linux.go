//go:build linux

package harvey

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// hardenProcess makes the Harvey process non-dumpable, so a child started by
// run_command cannot read Harvey's original environment (API keys) from
// /proc/<ppid>/environ (security.md §5), and marks every descriptor it
// inherited beyond 0-2 close-on-exec, so none reaches a command (a shell's
// 9>file would otherwise be written by any program Harvey starts). Root is
// not stopped by this.
func hardenProcess() {
	const prSetDumpable = 4
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	closeInheritedFDs()
}

// closeInheritedFDs marks every descriptor from 3 up close-on-exec (the
// Go runtime's own already are): only 0-2, and what exec.Cmd passes
// explicitly, reach a child.
func closeInheritedFDs() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11: one descriptor at a time.
	for fd := 3; fd < 1024; fd++ {
		unix.CloseOnExec(fd)
	}
}
