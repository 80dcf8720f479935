//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Landlock access rights (the kernel's bits, as go-landlock names them).
const (
	llRead      = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	llWrite     = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
	llFileOnly  = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSReadFile
	llMaxABI    = 7 // the newest Landlock ABI this policy is written for
	llScopedAll = 1<<2 - 1
)

// llGrant gives access to the file hierarchies under paths (missing paths
// are skipped).
type llGrant struct {
	access uint64
	paths  []string
}

// landlockPolicy is the sandbox's Landlock policy for a kernel of the given
// ABI: every file system right that ABI knows is handled (so denied unless
// granted), TCP bind and connect too unless the spec allows the network,
// and then signals and abstract sockets are scoped to the sandbox. What a
// command may write it may also rename and link across directories
// ("refer", ABI 2 and later: rustc moves each crate's metadata out of a
// directory of its own, and without it every library build fails with
// EXDEV); the kernel still refuses a rename or link that would give a file
// more rights where it lands than where it was, so no file gains any.
// Device ioctls are never granted. These are the rules go-landlock's V7
// best-effort configuration applies (RODirs, RWDirs with WithRefer, RWFiles;
// PathAccess in safe mode).
func landlockPolicy(spec Spec, abi int) (llsys.RulesetAttr, []llGrant) {
	abi = min(abi, llMaxABI)
	fsBits := []int{0, 13, 14, 15, 15, 16, 16, 16}[abi] // go-landlock's ABI table
	attr := llsys.RulesetAttr{HandledAccessFS: 1<<fsBits - 1}
	if !spec.Network {
		// With namespaces the command has a network of its own (loopback
		// only), so TCP on it is free; without them, Landlock refuses TCP.
		if abi >= 4 && spec.NoNS {
			attr.HandledAccessNet = llsys.AccessNetBindTCP | llsys.AccessNetConnectTCP
		}
		if abi >= 6 {
			attr.Scoped = llScopedAll
		}
	}
	devRW := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
	if spec.NoNS {
		// No mount namespace, so no private layer: a cache is read-only
		// rather than the user's own cache written directly.
		spec.RW, spec.RO = withoutLayered(spec.RW, spec.Overlays), append(append([]string{}, spec.RO...), layeredPaths(spec.Overlays)...)
		// Nor can a credential be put over with an empty file: a tree that
		// holds one is granted as its other entries.
		spec.RO = withoutMasked(spec.RO, spec.Masked)
	}
	var refer uint64
	if abi >= 2 {
		refer = llsys.AccessFSRefer
	}
	var grants []llGrant
	if len(spec.Exec) == 0 {
		grants = append(grants, llGrant{llRead, spec.RO}, llGrant{llRead | llWrite | refer, spec.RW})
	} else {
		// Safe mode: read and write as usual, but execute only the
		// allowlisted programs (and the ELF interpreter they need).
		readNoExec := uint64(llsys.AccessFSReadFile | llsys.AccessFSReadDir)
		rwNoExec := readNoExec | llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile |
			llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSym | llsys.AccessFSMakeFifo | llsys.AccessFSMakeSock | llsys.AccessFSTruncate
		execFiles := append([]string{}, spec.Exec...)
		for _, g := range []string{"/lib*/ld-linux*", "/lib/*/ld-linux*", "/usr/lib*/ld-linux*", "/lib/ld-musl*"} {
			m, _ := filepath.Glob(g)
			execFiles = append(execFiles, m...)
		}
		grants = append(grants, llGrant{readNoExec, spec.RO}, llGrant{rwNoExec | refer, spec.RW},
			llGrant{llsys.AccessFSExecute | llsys.AccessFSReadFile, execFiles})
	}
	grants = append(grants, llGrant{(llRead | llWrite) & llFileOnly, devRW})
	return attr, grants
}

// withoutMasked replaces each tree of trees that holds a masked file (a
// credential, read as empty where there is a mount namespace) by that
// tree's entries less the masked ones: Landlock grants whole hierarchies
// and cannot take one file out of a granted one. The tree's own listing is
// then not granted; an entry made in it later is not either, nor a link
// among its entries (its target stays as out of reach as it was).
func withoutMasked(trees, masked []string) []string {
	var out []string
	for _, t := range trees {
		t = filepath.Clean(t)
		if !slices.ContainsFunc(masked, func(m string) bool { return filepath.Dir(filepath.Clean(m)) == t }) {
			out = append(out, t)
			continue
		}
		entries, _ := os.ReadDir(t)
		for _, e := range entries {
			// A link is left out: a rule is added on the path opened, so it
			// would grant the link's target, which the tree never did.
			if p := filepath.Join(t, e.Name()); !slices.Contains(masked, p) && e.Type()&fs.ModeSymlink == 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// confineThread confines the calling OS thread, from which the command is
// started (a fork copies the forking thread's confinement): Landlock where
// the mode has it; in namespaces, no capabilities, so the command cannot
// unmount or remount what the launcher mounted (without Landlock, the
// mounts are the whole boundary); no_new_privs always.
func confineThread(spec Spec) error {
	// no_new_privs first: Landlock requires it, and no setuid program may
	// give the command back what the rest takes.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %v", err)
	}
	if !spec.NoLandlock {
		if err := restrictThread(spec); err != nil {
			return fmt.Errorf("Landlock: %v", err)
		}
	}
	if !spec.NoNS {
		if err := dropCapabilities(); err != nil {
			return fmt.Errorf("dropping capabilities: %v", err)
		}
	}
	return nil
}

// dropCapabilities empties the calling thread's bounding, ambient and
// inheritable sets: a program it starts gets no capability at exec —
// neither root's (a user who is root) nor the ambient ones the launcher
// kept to mount (an ordinary user, who is themselves in the namespace).
func dropCapabilities() error {
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the kernel's last capability
			}
			return err
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	return unix.Capset(&hdr, &data[0])
}

// restrictThread applies the policy of spec to the calling OS thread only
// (confineThread has set no_new_privs, which Landlock requires): the
// caller has locked its goroutine to the thread and starts the command
// from it.
func restrictThread(spec Spec) error {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return errors.New("Landlock is not available")
	}
	if spec.LandlockABI > 0 {
		abi = min(abi, spec.LandlockABI)
	}
	attr, grants := landlockPolicy(spec, abi)
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("landlock_create_ruleset: %v", err)
	}
	defer unix.Close(fd)
	for _, g := range grants {
		for _, p := range g.paths {
			pfd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOTDIR) {
				// Missing, or out of your own reach (another account's
				// installer home named by a variable you inherited): no
				// grant, which gives the command nothing you could not reach.
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %v", p, err)
			}
			access := g.access & attr.HandledAccessFS
			var st unix.Stat_t
			if unix.Fstat(pfd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				access &= llFileOnly // a file takes only the rights that apply to files
			}
			if access != 0 {
				err = llsys.LandlockAddPathBeneathRule(fd, &llsys.PathBeneathAttr{ParentFd: pfd, AllowedAccess: access}, 0)
			}
			unix.Close(pfd)
			if err != nil {
				return fmt.Errorf("landlock_add_rule %s: %v", p, err)
			}
		}
	}
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock_restrict_self: %v", err)
	}
	return nil
}
