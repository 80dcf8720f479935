//go:build linux

package harvey

import "syscall"

// hardenProcess makes the Harvey process non-dumpable, so a child started by
// run_command cannot read Harvey's original environment (API keys) from
// /proc/<ppid>/environ (security.md §5). Root is not stopped by this.
func hardenProcess() {
	const prSetDumpable = 4
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
}
