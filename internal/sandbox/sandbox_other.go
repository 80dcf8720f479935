//go:build !linux && !darwin

package sandbox

import "syscall"

const noSandboxWhy = "this system has neither Landlock nor sandbox-exec: commands are NOT sandboxed"

// probeSandbox: no sandbox outside Linux and macOS, so commands run
// unconfined and Harvey says so.
func probeSandbox() (abi int, ns, seatbelt bool) { return 0, false, false }

func ProcAttr(Spec) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

func launch(Spec) int { return 126 }
