//go:build darwin

package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

func noSandboxWhy(*State) string { return "/usr/bin/sandbox-exec is missing" }

// probeSandbox: macOS confines commands with sandbox-exec and a generated
// Seatbelt profile (no Landlock, no namespaces).
func probeSandbox(s *State) {
	_, err := os.Stat("/usr/bin/sandbox-exec")
	s.Seatbelt = err == nil
}

func ProcAttr(Spec) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// launch becomes sandbox-exec with the profile for spec, which runs the
// command. Its process group is killed with it; a process that leaves the
// group (setsid) is not contained on macOS.
func launch(spec Spec) int {
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
			return 126
		}
	}
	argv := seatbeltArgv(spec)
	err := syscall.Exec(argv[0], argv, spec.Env)
	fmt.Fprintf(os.Stderr, "harvey sandbox: sandbox-exec: %v\n", err)
	return 126
}
