//go:build !linux

package runner

import (
	"syscall"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// dieWithHarvey: no parent death signal here; a job's process group is
// ended when the session closes.
func dieWithHarvey(*syscall.SysProcAttr, *sandbox.Spec) {}
