// Package sandboxcli is `harvey sandbox`: which kernel mode this machine
// gives commands and what holds in it (status, the default, after the
// check of a command Harvey did not live to make), or the AppArmor profile
// that lets Harvey alone make user namespaces where Ubuntu refuses them to
// programs without one (apparmor). Command is the whole of it; it writes to
// the writers it is given and returns the exit status.
package sandboxcli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// Command is harvey sandbox: which mode this machine gives commands
// and what holds in it (status, the default), or the AppArmor profile that
// lets Harvey alone make user namespaces where Ubuntu refuses them to
// programs without one (apparmor).
func Command(args []string, stdout, stderr io.Writer) int {
	sub := "status"
	if len(args) > 0 {
		sub = args[0]
	}
	if sub == "apparmor" && len(args) == 3 && args[1] == "--for" && filepath.IsAbs(args[2]) {
		// The profile for Harvey installed at that path (a package's).
		fmt.Fprint(stdout, appArmorProfile(args[2]))
		return 0
	}
	if len(args) > 1 || (sub != "status" && sub != "apparmor") {
		fmt.Fprintln(stderr, "usage: harvey sandbox [status|apparmor [--for /ABSOLUTE/PATH/harvey]]")
		return 2
	}
	if sub == "apparmor" {
		return printAppArmorProfile(stdout, stderr)
	}
	cfg, _, err := configfile.LoadUser()
	var policy config.SandboxPolicy
	if err == nil && cfg != nil {
		policy = cfg.Sandbox
	}
	// The check of a command Harvey did not live to make, first.
	if wd, err := os.Getwd(); err == nil {
		for _, l := range guard.Recover(wd) {
			fmt.Fprintln(stdout, l)
		}
	}
	fmt.Fprintln(stdout, sandboxpolicy.StatusText(policy))
	sandbox.RemoveTmp()
	return 0
}

// appArmorProfile is the profile for the harvey executable at exe: it
// changes nothing but allowing user namespaces (flags=(unconfined) keeps
// every other rule as for a program without a profile), the form Ubuntu
// ships for programs that sandbox themselves.
func appArmorProfile(exe string) string {
	return "# AppArmor profile for Harvey: lets its sandbox make user namespaces\n" +
		"# (Ubuntu 23.10+ refuses them to programs without a profile).\n" +
		"abi <abi/4.0>,\ninclude <tunables/global>\n\n" +
		"profile harvey " + strconv.Quote(exe) + " flags=(unconfined) {\n  userns,\n\n  include if exists <local/harvey>\n}\n"
}

// printAppArmorProfile prints the profile for this executable on stdout
// and, on stderr, the two commands that install it.
func printAppArmorProfile(stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		fmt.Fprintf(stderr, "harvey sandbox: cannot find Harvey's own executable: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, appArmorProfile(exe))
	fmt.Fprintf(stderr, "To install it (it names %s: install it again if Harvey moves):\n  harvey sandbox apparmor | sudo tee /etc/apparmor.d/harvey >/dev/null\n  sudo apparmor_parser -r /etc/apparmor.d/harvey\n", exe)
	return 0
}
