//go:build linux

package harvey

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

const noSandboxWhy = "this kernel has no Landlock (Linux 5.13+ with landlock in the LSM list): commands are NOT sandboxed"

// probeSandbox finds the Landlock ABI and whether unprivileged user, mount
// and PID namespaces can be made (tried for real, once).
func probeSandbox() (abi int, ns, seatbelt bool) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, false, false
	}
	exe, err := os.Executable()
	if err != nil {
		return abi, false, false
	}
	cmd := exec.Command(exe, "--version")
	cmd.SysProcAttr = nsAttr()
	return abi, cmd.Run() == nil, false
}

// nsAttr starts a process in new user, mount and PID namespaces, in its own
// session, as root of the new user namespace (mapped to the user's own
// uid: it has no rights outside).
func nsAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setsid:                     true,
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
}

// sandboxProcAttr is the SysProcAttr for starting the launcher.
func sandboxProcAttr(spec sandboxSpec) *syscall.SysProcAttr {
	if spec.NoNS {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return nsAttr()
}

// launch is the launcher: read-only binds, Landlock, then the command as
// its child; its exit status is the command's.
func launch(spec sandboxSpec) int {
	if !spec.NoNS {
		if err := readOnlyBinds(spec.ReadOnly); err != nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
			return 126
		}
		// A /proc of the new PID namespace: the command sees only its own
		// processes (not the environment or command lines of the user's
		// others), and /proc/self/task is the command's own (libpsx, used
		// by Landlock in cgo builds, reads it). Where the kernel refuses a
		// new proc mount (a masked /proc in a container), the old stays.
		_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	} else {
		// No PID namespace: become the subreaper of everything the command
		// starts, so orphans are found and killed when it ends.
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	// Landlock is applied by a second stage that then becomes the command:
	// PID 1 of a namespace cannot restrict itself (psx's all-thread signal
	// never arrives), and the command must not be PID 1 either.
	b, _ := json.Marshal(spec)
	cmd := exec.Command("/proc/self/exe", sandboxExecArg, base64.StdEncoding.EncodeToString(b))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
		return 126
	}
	err := cmd.Wait()
	code := 0
	if err != nil {
		code = 1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if code < 0 {
				code = 128 + 9
			}
		}
	}
	if spec.NoNS {
		killDescendants()
	}
	// As PID 1 of the namespace, returning ends every process left in it.
	return code
}

// launchExec is the second stage: restrict this process with Landlock,
// then become the command.
func launchExec(spec sandboxSpec) int {
	if err := restrict(spec); err != nil {
		fmt.Fprintf(os.Stderr, "harvey sandbox: Landlock: %v\n", err)
		return 126
	}
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
			return 126
		}
	}
	prog := spec.Argv[0]
	if !strings.ContainsRune(prog, '/') {
		path := ""
		for _, kv := range spec.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		for _, d := range filepath.SplitList(path) {
			if d == "" || !filepath.IsAbs(d) {
				continue
			}
			if fi, err := os.Stat(filepath.Join(d, prog)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				prog = filepath.Join(d, prog)
				break
			}
		}
	}
	err := syscall.Exec(prog, spec.Argv, spec.Env)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		fmt.Fprintf(os.Stderr, "harvey sandbox: %s: not allowed to execute here\n", spec.Argv[0])
		return 126
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", spec.Argv[0], err)
	return 127
}

// readOnlyBinds makes each path read-only inside this mount namespace.
func readOnlyBinds(paths []string) error {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount namespace: %v", err)
	}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %v", p, err)
		}
		var st unix.Statfs_t
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		if unix.Statfs(p, &st) == nil {
			// Locked flags of the underlying mount must be kept.
			for _, f := range [][2]int64{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME}} {
				if st.Flags&f[0] != 0 {
					flags |= uintptr(f[1])
				}
			}
		}
		if err := unix.Mount("none", p, "", flags, ""); err != nil {
			return fmt.Errorf("read-only %s: %v", p, err)
		}
	}
	return nil
}

// restrict applies the Landlock rules of spec to this process.
func restrict(spec sandboxSpec) error {
	var rules []landlock.Rule
	devRW := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
	if len(spec.Exec) == 0 {
		rules = append(rules,
			landlock.RODirs(spec.RO...).IgnoreIfMissing(),
			landlock.RWDirs(spec.RW...).IgnoreIfMissing(),
		)
	} else {
		// Safe mode: read and write as usual, but execute only the
		// allowlisted programs (and the ELF interpreter they need).
		readNoExec := landlock.AccessFSSet(llsys.AccessFSReadFile | llsys.AccessFSReadDir)
		rwNoExec := readNoExec | landlock.AccessFSSet(llsys.AccessFSWriteFile|llsys.AccessFSRemoveDir|llsys.AccessFSRemoveFile|
			llsys.AccessFSMakeDir|llsys.AccessFSMakeReg|llsys.AccessFSMakeSym|llsys.AccessFSMakeFifo|llsys.AccessFSMakeSock|llsys.AccessFSTruncate)
		execFiles := append([]string{}, spec.Exec...)
		for _, g := range []string{"/lib*/ld-linux*", "/lib/*/ld-linux*", "/usr/lib*/ld-linux*", "/lib/ld-musl*"} {
			m, _ := filepath.Glob(g)
			execFiles = append(execFiles, m...)
		}
		rules = append(rules,
			landlock.PathAccess(readNoExec, spec.RO...).IgnoreIfMissing(),
			landlock.PathAccess(rwNoExec, spec.RW...).IgnoreIfMissing(),
			landlock.PathAccess(landlock.AccessFSSet(llsys.AccessFSExecute|llsys.AccessFSReadFile), execFiles...).IgnoreIfMissing(),
		)
	}
	rules = append(rules, landlock.RWFiles(devRW...).IgnoreIfMissing())
	cfg := landlock.V7.BestEffort()
	if spec.Network {
		return cfg.RestrictPaths(rules...)
	}
	return cfg.Restrict(rules...)
}

// killDescendants kills what the command left behind (the launcher is
// their subreaper when there is no PID namespace).
func killDescendants() {
	for round := 0; round < 5; round++ {
		kids := childrenOf(os.Getpid())
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			_ = unix.Kill(k, unix.SIGKILL)
		}
		var ws unix.WaitStatus
		for {
			if pid, _ := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}

// childrenOf lists the direct children of pid from /proc.
func childrenOf(pid int) []int {
	var out []int
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err == nil {
		var n int
		for _, f := range strings.Fields(string(data)) {
			if _, err := fmt.Sscan(f, &n); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
