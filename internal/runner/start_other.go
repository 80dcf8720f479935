//go:build !linux

package runner

import (
	"syscall"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// dieWithHarvey: no parent death signal here; a job's process group is
// ended when the session closes.
func dieWithHarvey(*syscall.SysProcAttr, *sandbox.Spec) {}

// holderProcAttr: there is no session network outside Linux.
func holderProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
