package runner

import (
	"syscall"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// dieWithHarvey has the started program ended when Harvey dies: a
// launcher with namespaces is killed (its PID namespace, and everything
// in it, with it); one without them (Landlock only) gets SIGTERM, on
// which it ends everything the job started itself (a SIGKILL would leave
// a setsid child of the job to init).
func dieWithHarvey(a *syscall.SysProcAttr, sp *sandbox.Spec) {
	if a == nil {
		return
	}
	a.Pdeathsig = syscall.SIGKILL
	if sp != nil && sp.NoNS {
		a.Pdeathsig = syscall.SIGTERM
	}
}

// holderProcAttr starts the session network's holder: a session of its
// own, and killed when Harvey's starter thread ends (with Harvey).
func holderProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
