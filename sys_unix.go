//go:build unix

package harvey

import (
	"os/exec"
	"syscall"
)

const (
	openNoBlock  = syscall.O_NONBLOCK
	openNoFollow = syscall.O_NOFOLLOW
)

// setProcessGroup puts the child in its own session (and so its own process
// group, with no controlling terminal), so a timeout can kill every process
// it started and it cannot read the REPL's terminal.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// killProcessGroup kills the child's whole process group.
func killProcessGroup(cmd *exec.Cmd) error {
	return killProcessGroupSignal(cmd, syscall.SIGKILL)
}

// killProcessGroupSignal sends sig to the child's whole process group (to
// the child alone if the group is gone).
func killProcessGroupSignal(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		_ = cmd.Process.Signal(sig)
	}
	return nil
}
