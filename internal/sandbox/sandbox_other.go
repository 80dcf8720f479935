//go:build !linux && !darwin

package sandbox

import "syscall"

func noSandboxWhy(*State) string { return "this system has neither Landlock nor sandbox-exec" }

// probeSandbox: no sandbox outside Linux and macOS, so commands refuse
// unless the user's own config allows them unsandboxed.
func probeSandbox(*State) {}

func ProcAttr(Spec) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

func launch(Spec) int { return 126 }
