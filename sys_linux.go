//go:build linux

package harvey

import (
	"syscall"

	"github.com/harvey-agent/harvey/internal/sandbox"
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
	sandbox.CloseInheritedFDs()
}
