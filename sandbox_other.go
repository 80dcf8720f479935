//go:build !linux

package harvey

import "syscall"

// probeSandbox: no Landlock outside Linux (macOS's sandbox-exec profile is
// not written yet), so commands run unconfined and Harvey says so.
func probeSandbox() (int, bool) { return 0, false }

func sandboxProcAttr(sandboxSpec) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

func launch(sandboxSpec) int { return 126 }

func launchExec(sandboxSpec) int { return 126 }
