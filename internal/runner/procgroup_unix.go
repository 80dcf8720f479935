//go:build unix

package runner

import (
	"os/exec"
	"syscall"
)

// SetProcessGroup puts the child in its own session (and so its own process
// group, with no controlling terminal), so a timeout can kill every process
// it started and it cannot read the REPL's terminal.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// KillProcessGroup kills the child's whole process group.
func KillProcessGroup(cmd *exec.Cmd) error {
	return KillProcessGroupSignal(cmd, syscall.SIGKILL)
}

// KillProcessGroupSignal sends sig to the child's whole process group (to
// the child alone if the group is gone).
func KillProcessGroupSignal(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		_ = cmd.Process.Signal(sig)
	}
	return nil
}
