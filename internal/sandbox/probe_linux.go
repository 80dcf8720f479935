//go:build linux

package sandbox

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// noSandboxWhy says why there is no sandbox: neither Landlock nor
// namespaces.
func noSandboxWhy(s *State) string {
	return s.LandlockWhy + "; " + s.NSWhy
}

// procSys is where the kernel's settings are read (a test points it at a
// fixture).
var procSys = "/proc/sys"

// probeSandbox finds the Landlock ABI and whether the launcher can make
// its namespaces: it starts the launcher exactly as a command starts it
// (two stages, the mounts, the network, pivot_root), running the system's
// true inside. What the kernel answered is kept as the reason.
func probeSandbox(s *State) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		s.LandlockWhy = "this kernel has no Landlock (Linux 5.13+ with landlock in the LSM list)"
	} else {
		s.Landlock = abi
	}
	// Harvey's own directory is kept for --version, unless the root the
	// launcher builds in lies inside it (Harvey run from /tmp itself):
	// then only the executable is.
	own := filepath.Dir(s.self)
	if Under(s.root, []string{own}) {
		own = s.self
	}
	// The system's true where there is one (a third start of Harvey costs
	// every session's start a few milliseconds), else Harvey's --version.
	argv := []string{s.self, "--version"}
	for _, t := range []string{"/usr/bin/true", "/bin/true"} {
		if fi, err := os.Stat(t); err == nil && fi.Mode().IsRegular() {
			argv = []string{t}
			break
		}
	}
	spec := Spec{Argv: argv, Dir: "/usr", RO: []string{own, "/usr", "/bin", "/lib", "/lib64", "/lib32", "/etc"}, NoLandlock: true, Root: s.root}
	// util-linux's unshare as the first stage where it works here (it is
	// not always there, busybox's lacks --kill-child, and an AppArmor
	// profile that lets Harvey make namespaces does not cover it), else
	// Harvey's own.
	if u := utilLinuxUnshare(); u != "" {
		s.unshare = u
		if _, err := probeLaunch(s, spec); err == nil {
			s.NS = true
			return
		}
		s.unshare = ""
	}
	answer, err := probeLaunch(s, spec)
	if err == nil {
		s.NS = true
		return
	}
	s.NSWhy, s.NSFix = nsCause(answer)
}

// probeLaunch starts the launcher for spec as a command starts it, and
// returns what it said on standard error.
func probeLaunch(s *State, spec Spec) (string, error) {
	s.NS = true // as Wrap will start it once it works
	defer func() { s.NS = false }()
	argv := s.Wrap(&spec)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{}
	cmd.SysProcAttr = ProcAttr(spec)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	err := cmd.Run()
	return strings.TrimSpace(errOut.String()), err
}

// utilLinuxUnshare is util-linux's unshare in the system's directories
// (never found through PATH), or "" (HARVEY_SANDBOX_STAGE=harvey: Harvey's
// own first stage always, as the tests of that stage ask).
func utilLinuxUnshare() string {
	if os.Getenv("HARVEY_SANDBOX_STAGE") == "harvey" {
		return ""
	}
	for _, p := range []string{"/usr/bin/unshare", "/bin/unshare"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// nsCause names why the kernel refused the launcher's namespaces (its
// message is answer) and what the user can do about it.
func nsCause(answer string) (why, fix string) {
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(procSys, name))
		return strings.TrimSpace(string(b))
	}
	profile := "`harvey sandbox apparmor` prints an AppArmor profile that allows them for Harvey alone, and the command that installs it (install.sh offers it)"
	answer = strings.TrimPrefix(answer, "harvey sandbox: ")
	if answer == "" {
		answer = "no answer"
	}
	switch {
	case read("kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor refuses user namespaces to programs without a profile (Ubuntu 23.10+: kernel.apparmor_restrict_unprivileged_userns=1)", profile
	case read("kernel/unprivileged_userns_clone") == "0":
		return "unprivileged user namespaces are turned off (kernel.unprivileged_userns_clone=0)", "sudo sysctl kernel.unprivileged_userns_clone=1 turns them on"
	case read("user/max_user_namespaces") == "0":
		return "user namespaces are turned off (user.max_user_namespaces=0)", "sudo sysctl user.max_user_namespaces=10000 turns them on"
	}
	return "the kernel refused a new user namespace: " + answer, "in a container, allow user namespaces (Docker: --security-opt seccomp=unconfined, or run Harvey on the host); on Ubuntu 23.10+, " + profile
}

// nsAttr starts a process in new user, mount and PID namespaces (and a
// network namespace unless network), as root of the new user namespace
// (mapped to the user's own uid: it has no rights outside). It stays in
// the launcher's process group (Harvey ends the group), and dies with the
// launcher's thread that started it.
func nsAttr(network bool) *syscall.SysProcAttr {
	attr := asYourself(&syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
	})
	if !network {
		// A network of its own with only loopback: local servers a test
		// suite starts work, nothing else is reachable but the registry
		// proxy the launcher forwards to.
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	return attr
}

// holderAttr starts the session network's holder in new user and network
// namespaces only: it stays in the system's mount and PID namespaces (the
// commands it starts make their own), so the process ids it sees and
// names are the system's. It dies with the launcher's thread that
// started it, and its commands with it.
func holderAttr() *syscall.SysProcAttr {
	return asYourself(&syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		Pdeathsig:  syscall.SIGKILL,
	})
}

// asYourself maps the user to themselves in the new user namespace, as
// util-linux's unshare --map-current-user does (issue 76): the commands the
// launcher starts there run as the user — `id -u` is yours, and initdb,
// postgres and Chromium run as they do in your shell — where they ran as
// the namespace's root. The launcher keeps the namespace's capabilities
// across its exec as ambient ones (unshare's --keep-caps), to mount;
// before a command starts, it drops them all (dropCapabilities). Root
// stays root.
func asYourself(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	if uid != 0 {
		a.AmbientCaps = allCaps()
	}
	return a
}

// allCaps lists every capability this kernel knows.
func allCaps() []uintptr {
	last := 40 // CAP_CHECKPOINT_RESTORE, Linux 5.9
	if b, err := os.ReadFile(filepath.Join(procSys, "kernel/cap_last_cap")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n < 64 {
			last = n
		}
	}
	caps := make([]uintptr, last+1)
	for i := range caps {
		caps[i] = uintptr(i)
	}
	return caps
}

// ProcAttr is the SysProcAttr for starting the launcher: a plain child in
// a session of its own (the launcher makes the namespaces itself).
func ProcAttr(Spec) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// outer is the launcher's first stage: it starts itself again in new
// namespaces (possible here, where Harvey's non-dumpable process could
// not map an ordinary user's uid) and passes on the exit status. Standard
// input, output and error are the command's.
func outer(spec Spec, attr *syscall.SysProcAttr) int {
	spec.Inner = true
	b, _ := json.Marshal(spec)
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
		return 126
	}
	runtime.LockOSThread() // Pdeathsig follows the thread that started the child
	cmd := &exec.Cmd{Path: self, Args: []string{self, Arg, base64.StdEncoding.EncodeToString(b)}, Env: []string{},
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, SysProcAttr: attr}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "harvey sandbox: new namespaces: %v\n", unwrapExecErr(err))
		return 126
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for sig := range sigs {
			cmd.Process.Signal(sig)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 126
	}
	return 0
}
