//go:build linux

package sandbox

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Where a command has no PID namespace of its own (Landlock only), its
// launcher is the one process that ends what it leaves behind, and Harvey
// the one that undoes what it changed: a command that kills either
// outlives its check. So the thread that starts the command gets a seccomp
// filter, inherited by everything the command starts and never removed,
// that refuses every signal to the launcher, to Harvey and to either's
// process group, and to every process the caller may signal (kill -1);
// tkill (a thread of the launcher's by its id) and pidfd_send_signal (a
// descriptor of /proc/PID names no pid the filter can compare) are refused
// whole, and programs fall back to kill. Landlock's signal scoping (ABI 6)
// holds the same where the kernel has it; the filter holds on every kernel
// with seccomp, as root too.
//
// The filter is also the command's mark: a process with no_new_privs and
// more seccomp filters than Harvey's own can only be a command's (Marked).

// Signal-sending system calls on one architecture.
type sigCalls struct {
	arch                                      uint32
	kill, tkill, tgkill, sigqueue, tgsigqueue uint32
	pidfdSend                                 uint32
	x32                                       bool // x86-64: refuse the x32 ABI's numbers whole
}

const (
	bpfLdAbsW = 0x20 // BPF_LD|BPF_W|BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	bpfJgeK   = 0x35 // BPF_JMP|BPF_JGE|BPF_K
	bpfRetK   = 0x06 // BPF_RET|BPF_K
	secAllow  = 0x7fff0000
	secErrno  = 0x00050000
	offNr     = 0
	offArch   = 4
	offArg0Lo = 16 // the low 32 bits of the first argument (pid_t), little-endian
)

// signalFilter is the seccomp program that protects the processes whose
// pids are given (and the process groups in groups) from the command.
func signalFilter(pids, groups []int) ([]unix.SockFilter, error) {
	if len(sigArches) == 0 {
		return nil, errors.New("no seccomp numbers for this architecture")
	}
	deny := []uint32{0xffffffff} // kill(-1): every process the caller may signal
	for _, p := range pids {
		if p > 0 {
			deny = append(deny, uint32(p))
		}
	}
	for _, g := range groups {
		if g > 0 {
			deny = append(deny, uint32(-g))
		}
	}
	var prog []unix.SockFilter
	add := func(f ...unix.SockFilter) { prog = append(prog, f...) }
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: bpfRetK, K: k} }
	// The pid check, shared by every call that names a process by its
	// first argument: jumped to from each architecture's block.
	var pidCheck []unix.SockFilter
	pidCheck = append(pidCheck, unix.SockFilter{Code: bpfLdAbsW, K: offArg0Lo})
	for i, d := range deny {
		left := uint8(len(deny) - i) // the allow, after the remaining checks
		pidCheck = append(pidCheck, unix.SockFilter{Code: bpfJeqK, Jt: left, Jf: 0, K: d})
	}
	pidCheck = append(pidCheck, ret(secAllow), ret(secErrno|uint32(unix.EPERM)))
	// Each architecture's block: 1 arch test + its body.
	for _, a := range sigArches {
		body := sigBody(a)
		add(unix.SockFilter{Code: bpfLdAbsW, K: offArch}, unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: uint8(len(body)), K: a.arch})
		add(body...)
	}
	// An architecture of no table: refused.
	add(ret(secErrno | uint32(unix.EPERM)))
	// Resolve the jumps to the pid check (marked with Jt 0xff, K kept).
	check := len(prog)
	for i := range prog {
		if prog[i].Code == bpfJeqK && prog[i].Jt == 0xff {
			off := check - i - 1
			if off > 0xfe {
				return nil, errors.New("seccomp program too long")
			}
			prog[i].Jt = uint8(off)
		}
	}
	return append(prog, pidCheck...), nil
}

// sigBody is one architecture's test of the system call number: a call
// that names a process jumps to the pid check (Jt 0xff, resolved by
// signalFilter), tkill and the x32 ABI are refused, pidfd_send_signal is
// refused as a kernel without it answers, everything else is allowed.
func sigBody(a sigCalls) []unix.SockFilter {
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: bpfRetK, K: k} }
	b := []unix.SockFilter{{Code: bpfLdAbsW, K: offNr}}
	if a.x32 {
		b = append(b, unix.SockFilter{Code: bpfJgeK, Jt: 0, Jf: 1, K: 0x40000000}, ret(secErrno|uint32(unix.ENOSYS)))
	}
	for _, nr := range []uint32{a.kill, a.tgkill, a.sigqueue, a.tgsigqueue} {
		b = append(b, unix.SockFilter{Code: bpfJeqK, Jt: 0xff, Jf: 0, K: nr})
	}
	b = append(b,
		unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 1, K: a.tkill}, ret(secErrno|uint32(unix.EPERM)),
		unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 1, K: a.pidfdSend}, ret(secErrno|uint32(unix.ENOSYS)),
		ret(secAllow))
	return b
}

// protectFromCommand installs the signal filter on the calling thread
// (no_new_privs is set already), protecting the launcher and Harvey.
func protectFromCommand(harvey int) error {
	pids := []int{os.Getpid(), harvey}
	groups := []int{unix.Getpgrp()}
	if g, err := unix.Getpgid(harvey); err == nil {
		groups = append(groups, g)
	}
	prog, err := signalFilter(pids, groups)
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}

// seccompFilters is the number of seccomp filters of process pid (its
// leader thread), and whether it has no_new_privs.
func seccompFilters(pid int) (filters int, nnp bool, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "NoNewPrivs":
			nnp = v == "1"
		case "Seccomp_filters":
			filters, _ = strconv.Atoi(v)
		}
	}
	return filters, nnp, true
}
