//go:build linux

package sandbox

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Where a command has no PID namespace of its own (Landlock only), its
// launcher is the one process that ends what it leaves behind, and Harvey
// the one that undoes what it changed: a command that kills either
// outlives its check. So the thread that starts the command gets a seccomp
// filter, inherited by everything the command starts and never removed,
// that refuses every signal to the launcher, to Harvey and to either's
// process group, by any of their ids:
//   - kill -1 and the two process groups are refused by the filter itself;
//   - a positive pid (kill, rt_sigqueueinfo, tgkill, rt_tgsigqueueinfo) may
//     be any thread of either (kill(2) of a thread's id signals its whole
//     process, and a Go program starts threads whenever it likes), so the
//     filter hands the call to the launcher (a seccomp user notification),
//     which reads the target's thread group and process group from /proc
//     while the caller waits, and refuses or lets the kernel go on;
//   - tkill and pidfd_send_signal (a descriptor of /proc/PID names no pid
//     a filter can compare) are refused whole, and programs fall back to
//     kill;
//   - fcntl(F_SETSIG) may choose only no signal or a real-time one: a file
//     owned (F_SETOWN) by Harvey would otherwise deliver SIGKILL to it on
//     the next read. SIGIO and the real-time signals are caught and ignored
//     by Go programs, as the launcher and Harvey are.
//
// Landlock's signal scoping (ABI 6) holds the same where the kernel has
// it; the filter holds on every kernel with seccomp, as root too. Where the
// launcher is gone, a notified call fails (ENOSYS): closed, not open.
//
// The filter is also the command's mark: a process with no_new_privs and
// more seccomp filters than Harvey's own can only be a command's (Marked).

// Signal-sending system calls on one architecture.
type sigCalls struct {
	arch                                      uint32
	kill, tkill, tgkill, sigqueue, tgsigqueue uint32
	pidfdSend                                 uint32
	fcntl                                     []uint32 // fcntl, and fcntl64 where there is one
	x32                                       bool     // x86-64: refuse the x32 ABI's numbers whole
	// The network's calls (netsuper_linux.go), and i386's multiplexer of
	// them (0: none).
	socket, bind, connect, listen, sendto, sendmsg, sendmmsg uint32
	socketcall                                               uint32
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
	offArg1Lo = 24
	offArg2Lo = 32
	fSetSig   = 10 // F_SETSIG
	sigRTMin  = 32
	toPids    = 0xff // a jump to the pid check, resolved by signalFilter
	toFcntl   = 0xfe // a jump to the fcntl check
)

// signalFilter is the seccomp program that protects the processes whose
// pids are given (and the process groups in groups) from the command; a
// call naming any other positive pid goes to the launcher's supervisor
// (supervise). With net, the network's calls go there too (netBody).
func signalFilter(pids, groups []int, net bool) ([]unix.SockFilter, error) {
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
	// Each architecture's block: 1 arch test + its body.
	for _, a := range sigArches {
		body := sigBody(a, net)
		add(unix.SockFilter{Code: bpfLdAbsW, K: offArch}, unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: uint8(len(body)), K: a.arch})
		add(body...)
	}
	// An architecture of no table: refused.
	add(ret(secErrno | uint32(unix.EPERM)))
	// The pid check, shared by every call that names a process by its
	// first argument: a protected pid or group is refused, 0 (the caller's
	// own group) is allowed, any other pid or group is asked.
	pidCheck := []unix.SockFilter{{Code: bpfLdAbsW, K: offArg0Lo}}
	for i, d := range deny {
		left := uint8(len(deny) - i + 2) // the refusal, past the remaining checks and the three below
		pidCheck = append(pidCheck, unix.SockFilter{Code: bpfJeqK, Jt: left, Jf: 0, K: d})
	}
	pidCheck = append(pidCheck,
		unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 1, K: 0},
		ret(secAllow),
		ret(unix.SECCOMP_RET_USER_NOTIF),
		ret(secErrno|uint32(unix.EPERM)))
	// The fcntl check: F_SETSIG with a signal below the real-time ones
	// (but 0, the default SIGIO) is refused.
	fcntlCheck := []unix.SockFilter{
		{Code: bpfLdAbsW, K: offArg1Lo},
		{Code: bpfJeqK, Jt: 0, Jf: 3, K: fSetSig},
		{Code: bpfLdAbsW, K: offArg2Lo},
		{Code: bpfJeqK, Jt: 1, Jf: 0, K: 0},
		{Code: bpfJgeK, Jt: 0, Jf: 1, K: sigRTMin},
		ret(secAllow),
		ret(secErrno | uint32(unix.EPERM)),
	}
	// Resolve the jumps to the two checks (marked by their Jt).
	pids0, fcntl0 := len(prog), len(prog)+len(pidCheck)
	for i := range prog {
		if prog[i].Code != bpfJeqK || (prog[i].Jt != toPids && prog[i].Jt != toFcntl) {
			continue
		}
		to := pids0
		if prog[i].Jt == toFcntl {
			to = fcntl0
		}
		off := to - i - 1
		if off > 0xfd {
			return nil, errors.New("seccomp program too long")
		}
		prog[i].Jt = uint8(off)
	}
	prog = append(prog, pidCheck...)
	return append(prog, fcntlCheck...), nil
}

// sigBody is one architecture's test of the system call number: a call
// that names a process jumps to the pid check, fcntl to the fcntl check
// (both resolved by signalFilter), tkill and the x32 ABI are refused,
// pidfd_send_signal is refused as a kernel without it answers, with net
// the network's calls are checked (netBody), everything else is allowed.
func sigBody(a sigCalls, net bool) []unix.SockFilter {
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: bpfRetK, K: k} }
	b := []unix.SockFilter{{Code: bpfLdAbsW, K: offNr}}
	if a.x32 {
		b = append(b, unix.SockFilter{Code: bpfJgeK, Jt: 0, Jf: 1, K: 0x40000000}, ret(secErrno|uint32(unix.ENOSYS)))
	}
	for _, nr := range []uint32{a.kill, a.tgkill, a.sigqueue, a.tgsigqueue} {
		b = append(b, unix.SockFilter{Code: bpfJeqK, Jt: toPids, Jf: 0, K: nr})
	}
	for _, nr := range a.fcntl {
		b = append(b, unix.SockFilter{Code: bpfJeqK, Jt: toFcntl, Jf: 0, K: nr})
	}
	if net {
		b = append(b, netBody(a)...)
	}
	b = append(b,
		unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 1, K: a.tkill}, ret(secErrno|uint32(unix.EPERM)),
		unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 1, K: a.pidfdSend}, ret(secErrno|uint32(unix.ENOSYS)),
		ret(secAllow))
	return b
}

// protectFromCommand installs the signal filter on the calling thread
// (no_new_privs is set already), protecting the launcher and Harvey, and
// starts the launcher's supervisor of the calls the filter hands it; with
// np, the network's calls too (the session's loopback, netsuper_linux.go).
func protectFromCommand(harvey int, np *netPolicy) error {
	launcher := os.Getpid()
	groups := []int{unix.Getpgrp()}
	if g, err := unix.Getpgid(harvey); err == nil {
		groups = append(groups, g)
	}
	// Harvey's parent: its guardian (internal/guardian), which ends what
	// the session leaves should it die.
	tgids := []int{launcher, harvey}
	if p, ok := statOf(harvey); ok && p.ppid > 1 {
		tgids = append(tgids, p.ppid)
	}
	prog, err := signalFilter(tgids, groups, np != nil)
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if e == unix.EBUSY {
		return errors.New("another supervisor (a container's) holds this process's seccomp notifications, so the signal filter cannot ask about a pid")
	}
	if e != 0 {
		return e
	}
	own, _, _ := seccompFilters(launcher)
	protected := protectedSet{tgids: tgids, groups: groups, harvey: harvey, filters: own}
	go supervise(int(fd), protected, np)
	return nil
}

// seccompNotif and seccompNotifResp are the kernel's struct seccomp_notif
// and struct seccomp_notif_resp (the same layout on every architecture).
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// protectedSet is what no command may signal: these thread groups (the
// launcher, Harvey, its guardian), every process in these process groups,
// and every process under Harvey that is not a command's (every launcher
// of the session — other jobs', the spare — and the session network's
// holder), so that at any Landlock ABI a command ends only commands.
type protectedSet struct {
	tgids, groups []int
	harvey        int // the session: what runs under it is its own
	filters       int // the seccomp filters a process of Harvey's has (a command's has more)
}

// protects says whether a signal to pid (a thread's id or a process's; a
// negative one names a process group) would reach the set. A pid that
// names nothing now is not protected (the kernel answers ESRCH).
func (p protectedSet) protects(pid int) bool {
	if pid < 0 {
		return p.protectsGroup(-pid)
	}
	tgid, ok := procTgid(pid)
	if !ok {
		return false
	}
	if slices.Contains(p.tgids, tgid) {
		return true
	}
	pgid, err := unix.Getpgid(tgid)
	if err == nil && slices.Contains(p.groups, pgid) {
		return true
	}
	return p.harvey > 0 && !p.command(tgid) && p.under(tgid)
}

// protectsGroup says whether process group g holds a protected process.
func (p protectedSet) protectsGroup(g int) bool {
	if slices.Contains(p.groups, g) {
		return true
	}
	for pid := range procTable() {
		if pg, err := unix.Getpgid(pid); err == nil && pg == g && p.protects(pid) {
			return true
		}
	}
	return false
}

// command reports whether process pid is a command's: the launcher's
// filter marks it (no_new_privs and more filters than Harvey's own).
func (p protectedSet) command(pid int) bool {
	n, nnp, ok := seccompFilters(pid)
	return ok && nnp && n > p.filters
}

// under reports whether process pid descends from Harvey.
func (p protectedSet) under(pid int) bool {
	for range 1 << 16 {
		st, ok := statOf(pid)
		if !ok || st.ppid <= 1 {
			return false
		}
		if st.ppid == p.harvey {
			return true
		}
		pid = st.ppid
	}
	return false
}

// procTgid is the thread group (process) of thread pid, from /proc.
func procTgid(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// supervise answers the calls the filter hands the launcher on listener
// fd. A signal call: refused (EPERM) when the target is protected, else
// the kernel goes on with the call as made; only integers are read (the
// pid), never the caller's memory, so going on is safe. A network call
// (only with np): answered by netPolicy.handle, each in a goroutine of its
// own (a connection may take a moment; signals are never kept waiting).
// It returns when the descriptor fails (the launcher is ending), or once
// no process uses the filter (its command and all it started have ended).
func supervise(fd int, protected protectedSet, np *netPolicy) {
	supervisors.Add(1)
	defer supervisors.Add(-1)
	var handlers sync.WaitGroup // the descriptor is closed once none uses it
	defer unix.Close(fd)
	defer handlers.Wait()
	for {
		var req seccompNotif
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); e != 0 {
			if e == unix.EINTR || (e == unix.ENOENT && !filterUnused(fd)) {
				continue // a signal, or the caller went away before we read it
			}
			return
		}
		if op, ok := netCallOf(req); ok && np != nil {
			handlers.Go(func() { sendResp(fd, np.handle(fd, req, op)) })
			continue
		}
		resp := seccompNotifResp{id: req.id, flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		if protected.protects(int(int32(uint32(req.args[0])))) {
			resp = seccompNotifResp{id: req.id, error: -int32(unix.EPERM)}
		}
		sendResp(fd, resp)
	}
}

// supervisors is how many supervisors run in this process (a test's
// count: each ends with its command).
var supervisors atomic.Int32

// filterUnused says whether no process uses the filter of the listener fd
// any more (the command and all it started have ended): the kernel then
// answers every receive at once with ENOENT, which a loop that only
// retried would spin on until the launcher exits.
func filterUnused(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n == 1 && p[0].Revents&unix.POLLHUP != 0
}

// sendResp answers a notification (ENOENT: the caller is gone, killed
// while it waited; nothing to say).
func sendResp(fd int, resp seccompNotifResp) {
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
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
