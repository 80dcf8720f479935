//go:build linux

package kernelsim

import (
	"errors"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	retAllow   = 0x7fff0000
	retErrno   = 0x00050000
	cloneNewNS = 0x10000000 // CLONE_NEWUSER
	ldAbsW     = 0x20       // BPF_LD|BPF_W|BPF_ABS
	jeqK       = 0x15       // BPF_JMP|BPF_JEQ|BPF_K
	jsetK      = 0x45       // BPF_JMP|BPF_JSET|BPF_K
	retK       = 0x06       // BPF_RET|BPF_K
	offNr      = 0
	offArch    = 4
	offArg0    = 16 // the low 32 bits of the first argument (little-endian)
)

// Filter is the seccomp program for kernel k on this architecture.
func Filter(k Kernel) ([]unix.SockFilter, error) {
	if arch == 0 {
		return nil, errors.New("kernelsim: no seccomp numbers for " + runtime.GOARCH)
	}
	if k != NoLandlock && k != NoUserNS && k != Neither {
		return nil, errors.New("kernelsim: unknown kernel " + string(k))
	}
	p := []unix.SockFilter{
		{Code: ldAbsW, K: offArch},
		{Code: jeqK, Jt: 1, Jf: 0, K: arch},
		{Code: retK, K: retAllow},
		{Code: ldAbsW, K: offNr},
	}
	answer := func(nr uint32, errno syscall.Errno) {
		p = append(p, unix.SockFilter{Code: jeqK, Jt: 0, Jf: 1, K: nr}, unix.SockFilter{Code: retK, K: retErrno | uint32(errno)})
	}
	newUser := func(nr uint32) {
		p = append(p,
			unix.SockFilter{Code: jeqK, Jt: 0, Jf: 4, K: nr},
			unix.SockFilter{Code: ldAbsW, K: offArg0},
			unix.SockFilter{Code: jsetK, Jt: 0, Jf: 1, K: cloneNewNS},
			unix.SockFilter{Code: retK, K: retErrno | uint32(unix.EPERM)},
			unix.SockFilter{Code: retK, K: retAllow})
	}
	if k == NoLandlock || k == Neither {
		for _, nr := range []uint32{sysLandlockCreateRuleset, sysLandlockAddRule, sysLandlockRestrictSelf} {
			answer(nr, unix.ENOSYS)
		}
	}
	if k == NoUserNS || k == Neither {
		answer(sysClone3, unix.ENOSYS)
		newUser(sysClone)
		newUser(sysUnshare)
	}
	return append(p, unix.SockFilter{Code: retK, K: retAllow}), nil
}

// Exec installs kernel k's filter on this thread and executes argv with
// env in its place. It returns only on failure.
func Exec(k Kernel, argv, env []string) error {
	prog, err := Filter(k)
	if err != nil {
		return err
	}
	runtime.LockOSThread() // the filter is this thread's; exec from it
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return syscall.Exec(argv[0], argv, env)
}

// Supported says why kernels cannot be simulated here (nil: they can).
func Supported() error {
	_, err := Filter(NoLandlock)
	return err
}
