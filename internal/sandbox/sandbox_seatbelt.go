package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
)

// macOS: the same rules as Landlock, written as a Seatbelt profile for
// /usr/bin/sandbox-exec. Paths never appear in the profile's text: each is
// a parameter (-D NAME=PATH) the profile names with (param "NAME"), so no
// path can change the profile's syntax. Everything is denied by default;
// the profile allows what programs need to start (process, sysctl, mach
// lookups), reads of the system and of the spec's trees, writes in the
// writable trees except agents/ and .git/, execution (in safe mode only of
// the allowlisted programs) and, only when allowed, the network.

// seatbeltBaseRead are the system trees every program needs on macOS.
var seatbeltBaseRead = []string{"/usr", "/bin", "/sbin", "/System", "/Library", "/private/etc", "/private/var/db", "/private/var/select", "/etc", "/opt", "/dev", "/Applications/Xcode.app", "/Library/Developer"}

// seatbeltDevWrite are the devices a command may write.
var seatbeltDevWrite = []string{"/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper", "/dev/urandom", "/dev/random"}

// seatbeltProfile returns the profile and the sandbox-exec arguments that
// bind its parameters (to go before the command).
func seatbeltProfile(spec Spec) (string, []string) {
	var args []string
	n := 0
	param := func(prefix, path string) string {
		name := fmt.Sprintf("%s_%d", prefix, n)
		n++
		// Seatbelt matches resolved paths (/var is /private/var).
		if r, err := filepath.EvalSymlinks(path); err == nil {
			path = r
		}
		args = append(args, "-D", name+"="+path)
		return fmt.Sprintf("(param %q)", name)
	}
	list := func(op, prefix string, paths []string) string {
		var b strings.Builder
		for _, p := range paths {
			fmt.Fprintf(&b, " (%s %s)", op, param(prefix, p))
		}
		return b.String()
	}
	var b strings.Builder
	b.WriteString("(version 1)\n(deny default)\n")
	b.WriteString("(allow process-fork)\n(allow signal (target same-sandbox))\n(allow sysctl-read)\n(allow mach-lookup)\n(allow ipc-posix-shm)\n(allow ipc-posix-sem)\n(allow pseudo-tty)\n(allow file-ioctl)\n(allow file-read-metadata)\n")
	if len(spec.Exec) == 0 {
		b.WriteString("(allow process-exec)\n")
	} else {
		fmt.Fprintf(&b, "(allow process-exec%s)\n", list("literal", "EXEC", spec.Exec))
	}
	read := append(append(append([]string{}, seatbeltBaseRead...), spec.RO...), spec.RW...)
	fmt.Fprintf(&b, "(allow file-read* (literal \"/\")%s)\n", list("subpath", "READ", read))
	if len(spec.RW) > 0 {
		fmt.Fprintf(&b, "(allow file-write* (require-all (require-any%s)", list("subpath", "WRITE", spec.RW))
		// agents/ (hidden on Linux) and .git/'s protected parts stay unwritten.
		for _, p := range append(append([]string{}, spec.ReadOnly...), spec.Hidden...) {
			fmt.Fprintf(&b, " (require-not (subpath %s))", param("KEEP", p))
		}
		b.WriteString("))\n")
	}
	fmt.Fprintf(&b, "(allow file-write*%s)\n", list("literal", "DEV", seatbeltDevWrite))
	if spec.Network {
		b.WriteString("(allow network*)\n")
	} else {
		// Local Unix sockets (a build's own helpers) but no IP traffic.
		b.WriteString("(allow network* (remote unix-socket))\n")
	}
	return b.String(), args
}

// seatbeltArgv is the sandbox-exec command line for spec.
func seatbeltArgv(spec Spec) []string {
	profile, params := seatbeltProfile(spec)
	argv := append([]string{"/usr/bin/sandbox-exec", "-p", profile}, params...)
	return append(argv, spec.Argv...)
}
