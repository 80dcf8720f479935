//go:build linux

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The session's loopback where there are no namespaces (Landlock only).
//
// Commands share the host's network there, and Landlock (ABI 4 and later)
// refuses every TCP bind and connect. Landlock's rules name ports, not
// addresses, so no rule can let a dev server listen on 127.0.0.1 alone, or
// let a command reach the registry proxy and nothing else. So the signal
// filter (signals_linux.go) also hands the launcher every bind, connect
// and listen, and the launcher's supervisor makes the call itself, on the
// command's own socket (pidfd_getfd), with the address it copied once from
// the command's memory (so the command cannot change it after the check):
//   - the session has an address of its own on the loopback (Spec.Loopback,
//     127.a.b.c, picked by Harvey): a server's bind to the wildcard or to
//     any loopback address (::, ::1, 0.0.0.0, 127.0.0.1) binds there, so a
//     session's servers are not on your machine's 127.0.0.1 (nor on any
//     other interface) until you publish a port (/ports relays 127.0.0.1:P
//     to it), and cannot take a port a program of yours uses; any other
//     address is EADDRNOTAVAIL, as in a network namespace with only lo;
//   - a connect to a loopback address reaches the session's address (the
//     proxy the launcher listens for there, a job's server), except the
//     services the user named in sandbox.hosts (Spec.Forwards), reached as
//     named; anything else is ENETUNREACH, as offline;
//   - listen on a socket not bound yet binds it to the session's address
//     first (the kernel would bind the wildcard), and the launcher makes
//     every listen itself (Landlock does not see listen);
//   - a socket that is not TCP (UDP, a unix socket) goes on as the command
//     made the call: the kernel reads the address again then, and should
//     the command have swapped in a TCP socket meanwhile, Landlock refuses
//     it;
//   - TCP Fast Open's sends (sendto, sendmsg, sendmmsg with MSG_FASTOPEN)
//     connect without a connect call, where Landlock does not look: refused
//     (EPERM) by the filter; io_uring, whose operations no filter sees, is
//     refused whole (ENOSYS: programs fall back); i386's socketcall hands
//     over bind, connect and listen as the direct calls do, and its socket
//     and sends are refused (their arguments lie in memory a filter cannot
//     read; 32-bit x86 programs use the direct calls on Linux 4.3 and
//     later where their C library does);
//   - socket(2) makes only unix, netlink, and IPv4 and IPv6 TCP and
//     datagram sockets (socketCheck): SCTP and DCCP connect without a
//     connect call, raw and packet sockets bypass TCP, and vsock reaches
//     the hypervisor.
//
// Reading the command's memory and taking its socket need the ptrace
// access a parent has (the launcher is every command process's ancestor);
// where it is refused (a command that made itself not dumpable, Yama's
// admin-only mode) the call is refused: closed, not open.

// netOp is a network call the filter hands over.
type netOp int

const (
	opNone netOp = iota
	opBind
	opConnect
	opListen
)

const (
	bpfJsetK     = 0x45 // BPF_JMP|BPF_JSET|BPF_K
	offArg3Lo    = 40
	msgFastOpen  = unix.MSG_FASTOPEN
	ioUringSetup = 425 // io_uring_setup, _enter, _register: one number on every architecture
	sysSocket    = 1   // socketcall's numbers
	sysBind      = 2
	sysConnect   = 3
	sysListen    = 4
	sysSendto    = 11
	sysSendmsg   = 16
	sysSendmmsg  = 20
)

// netBody is the network part of one architecture's test of the call
// number (the accumulator holds it): bind, connect and listen to the
// launcher; a send with MSG_FASTOPEN refused; io_uring refused; i386's
// socketcall by its first argument.
func netBody(a sigCalls) []unix.SockFilter {
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: bpfRetK, K: k} }
	notify, eperm := ret(unix.SECCOMP_RET_USER_NOTIF), ret(secErrno|uint32(unix.EPERM))
	var b []unix.SockFilter
	for _, nr := range []uint32{a.bind, a.connect, a.listen} {
		b = append(b, unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 1, K: nr}, notify)
	}
	for _, c := range []struct{ nr, off uint32 }{{a.sendto, offArg3Lo}, {a.sendmsg, offArg2Lo}, {a.sendmmsg, offArg3Lo}} {
		b = append(b,
			unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 4, K: c.nr},
			unix.SockFilter{Code: bpfLdAbsW, K: c.off},
			unix.SockFilter{Code: bpfJsetK, Jt: 0, Jf: 1, K: msgFastOpen},
			eperm, ret(secAllow))
	}
	b = append(b, socketCheck(a.socket)...)
	b = append(b,
		unix.SockFilter{Code: bpfJeqK, Jt: 2, Jf: 0, K: ioUringSetup},
		unix.SockFilter{Code: bpfJeqK, Jt: 1, Jf: 0, K: ioUringSetup + 1},
		unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 1, K: ioUringSetup + 2},
		ret(secErrno|uint32(unix.ENOSYS)))
	if a.socketcall != 0 {
		b = append(b,
			unix.SockFilter{Code: bpfJeqK, Jt: 0, Jf: 11, K: a.socketcall},
			unix.SockFilter{Code: bpfLdAbsW, K: offArg0Lo},
			unix.SockFilter{Code: bpfJeqK, Jt: 8, Jf: 0, K: sysSocket},
			unix.SockFilter{Code: bpfJeqK, Jt: 6, Jf: 0, K: sysBind},
			unix.SockFilter{Code: bpfJeqK, Jt: 5, Jf: 0, K: sysConnect},
			unix.SockFilter{Code: bpfJeqK, Jt: 4, Jf: 0, K: sysListen},
			unix.SockFilter{Code: bpfJeqK, Jt: 4, Jf: 0, K: sysSendto},
			unix.SockFilter{Code: bpfJeqK, Jt: 3, Jf: 0, K: sysSendmsg},
			unix.SockFilter{Code: bpfJeqK, Jt: 2, Jf: 0, K: sysSendmmsg},
			ret(secAllow), notify, eperm)
	}
	return b
}

// socketCheck is the test of socket(2) (number nr): only the families a
// command's work needs are made — unix, netlink (the kernel's own), and
// IPv4 and IPv6 as TCP (and MPTCP, whose connect is TCP's) or datagrams
// (UDP, ping) — so no protocol whose connections need no connect call
// (SCTP's associations by setsockopt or by a send, DCCP's), no raw or
// packet socket, and no family that reaches past the machine (vsock to
// the hypervisor, RDS, TIPC) exists for a command.
func socketCheck(nr uint32) []unix.SockFilter {
	const (
		afUnix, afInet, afInet6, afNetlink = 1, 2, 10, 16
		sockStream, sockDgram              = 1, 2
		ipprotoSCTP                        = 132
		bpfAluAndK                         = 0x54
	)
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: bpfRetK, K: k} }
	return []unix.SockFilter{
		{Code: bpfJeqK, Jt: 0, Jf: 14, K: nr},
		{Code: bpfLdAbsW, K: offArg0Lo},
		{Code: bpfJeqK, Jt: 10, Jf: 0, K: afUnix}, // -> allow
		{Code: bpfJeqK, Jt: 9, Jf: 0, K: afNetlink},
		{Code: bpfJeqK, Jt: 2, Jf: 0, K: afInet}, // -> the type
		{Code: bpfJeqK, Jt: 1, Jf: 0, K: afInet6},
		ret(secErrno | uint32(unix.EAFNOSUPPORT)),
		{Code: bpfLdAbsW, K: offArg1Lo},
		{Code: bpfAluAndK, K: 0xf},                    // the type, less SOCK_NONBLOCK and SOCK_CLOEXEC
		{Code: bpfJeqK, Jt: 3, Jf: 0, K: sockDgram},   // -> allow
		{Code: bpfJeqK, Jt: 0, Jf: 3, K: sockStream},  // else -> refuse
		{Code: bpfLdAbsW, K: offArg2Lo},               // the protocol
		{Code: bpfJeqK, Jt: 1, Jf: 0, K: ipprotoSCTP}, // -> refuse
		ret(secAllow),
		ret(secErrno | uint32(unix.EPROTONOSUPPORT)),
	}
}

// netCallOf is the network call a notification is (opNone: a signal
// call), for the direct calls; socketcall's are read by handle.
func netCallOf(req seccompNotif) (netOp, bool) {
	for _, a := range sigArches {
		if a.arch != req.arch {
			continue
		}
		switch uint32(req.nr) {
		case a.bind:
			return opBind, true
		case a.connect:
			return opConnect, true
		case a.listen:
			return opListen, true
		case a.socketcall:
			if a.socketcall != 0 {
				return opNone, true
			}
		}
	}
	return opNone, false
}

// netPolicy is the session's loopback as a command's launcher keeps it.
type netPolicy struct {
	session  netip.Addr       // the session's own loopback address (IPv4)
	forwards []netip.AddrPort // the user's services (sandbox.hosts), reached as named
}

// sessionNet is the policy for spec, or nil where the launcher does not
// supervise the network: namespaces give the session a network of its
// own, the network may be allowed, or the kernel's Landlock is older than
// TCP rules (ABI 4), which a call let go on relies on.
func sessionNet(spec Spec) *netPolicy {
	if !spec.NoNS || spec.NoLandlock || spec.Network || spec.Loopback == "" || landlockABI(spec) < 4 {
		return nil
	}
	a, err := netip.ParseAddr(spec.Loopback)
	if err != nil || !a.Is4() || !a.IsLoopback() {
		return nil
	}
	np := &netPolicy{session: a}
	for _, f := range spec.Forwards {
		if ap, err := netip.ParseAddrPort(f); err == nil {
			np.forwards = append(np.forwards, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		}
	}
	return np
}

// landlockABI is the Landlock ABI the launcher applies for spec (0: none).
func landlockABI(spec Spec) int {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	if spec.LandlockABI > 0 {
		abi = min(abi, spec.LandlockABI)
	}
	return abi
}

// sessionProxy listens for the registry proxy on the session's address
// and points the command's tools at it (the launcher's own goroutines
// relay; its supervisor lets commands connect there).
func sessionProxy(spec *Spec, np *netPolicy) error {
	if spec.Proxy == "" {
		return nil
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(np.session, 0).String())
	if err != nil {
		return fmt.Errorf("proxy port: %v", err)
	}
	go forwardEach(ln, func() (net.Conn, error) { return net.Dial("unix", spec.Proxy) })
	setProxyEnv(spec, "http://"+ln.Addr().String())
	return nil
}

// netVerdict is what the supervisor does with a call: make it with to,
// let the kernel go on (cont), or fail it with err.
type netVerdict struct {
	to   unix.Sockaddr
	cont bool
	err  unix.Errno
}

// decide is the policy for a bind or connect on an Internet stream socket
// (v6only: an IPv6 socket that takes no IPv4) to the address raw, as the
// command's memory held it.
func (p *netPolicy) decide(op netOp, raw []byte, v6only bool) netVerdict {
	if len(raw) < 2 {
		return netVerdict{err: unix.EINVAL}
	}
	switch binary.NativeEndian.Uint16(raw) {
	case unix.AF_INET:
		if len(raw) < 16 {
			return netVerdict{err: unix.EINVAL}
		}
		a := netip.AddrFrom4([4]byte(raw[4:8]))
		return p.decideAddr(op, netip.AddrPortFrom(a, binary.BigEndian.Uint16(raw[2:4])), false, v6only)
	case unix.AF_INET6:
		if len(raw) < 24 {
			return netVerdict{err: unix.EINVAL}
		}
		a := netip.AddrFrom16([16]byte(raw[8:24]))
		return p.decideAddr(op, netip.AddrPortFrom(a, binary.BigEndian.Uint16(raw[2:4])), true, v6only)
	}
	// AF_UNSPEC (a disconnect) or a family this socket does not take: the
	// kernel answers, and refuses TCP should the memory change meanwhile.
	return netVerdict{cont: true}
}

// decideAddr is decide for an Internet address (six: given as IPv6).
func (p *netPolicy) decideAddr(op netOp, ap netip.AddrPort, six, v6only bool) netVerdict {
	a := ap.Addr()
	local := a.IsLoopback() || a.IsUnspecified() || a.Is4In6() && (a.Unmap().IsLoopback() || a.Unmap().IsUnspecified())
	if op == opConnect && slices.Contains(p.forwards, netip.AddrPortFrom(a.Unmap(), ap.Port())) {
		return netVerdict{to: sockaddr(a, ap.Port(), six)}
	}
	switch {
	case !local && op == opBind:
		return netVerdict{err: unix.EADDRNOTAVAIL}
	case !local:
		return netVerdict{err: unix.ENETUNREACH}
	case six && v6only && op == opBind:
		return netVerdict{err: unix.EADDRNOTAVAIL} // the session's address is IPv4's
	case six && v6only:
		return netVerdict{err: unix.ECONNREFUSED}
	}
	return netVerdict{to: sockaddr(p.session, ap.Port(), six)}
}

// sockaddr is a's socket address at port, as an IPv6 socket takes it
// (IPv4 mapped) when six.
func sockaddr(a netip.Addr, port uint16, six bool) unix.Sockaddr {
	if six {
		return &unix.SockaddrInet6{Port: int(port), Addr: a.As16()}
	}
	return &unix.SockaddrInet4{Port: int(port), Addr: a.Unmap().As4()}
}

// handle answers one network call of the command's thread req.pid: it
// takes the socket (pidfd_getfd) and copies the address once, checking
// the notification is still live after each, then makes the call itself
// (decide) or lets a call on a socket that is not TCP go on.
func (p *netPolicy) handle(fd int, req seccompNotif, op netOp) seccompNotifResp {
	fail := func(e unix.Errno) seccompNotifResp { return seccompNotifResp{id: req.id, error: -int32(e)} }
	tid := int(req.pid)
	args := req.args
	if op == opNone { // i386's socketcall: its arguments lie in memory
		var e unix.Errno
		if op, args, e = socketcallArgs(fd, req); e != 0 {
			return fail(e)
		}
	}
	pidfd, err := pidfdOf(tid)
	if err != nil {
		return fail(unix.EACCES)
	}
	defer unix.Close(pidfd)
	if !notifValid(fd, req.id) { // the thread is still the caller: its pid was not reused
		return fail(unix.EACCES)
	}
	sock, err := unix.PidfdGetfd(pidfd, int(int32(uint32(args[0]))), 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return fail(unix.EBADF)
		}
		return fail(unix.EACCES)
	}
	defer unix.Close(sock)
	domain, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	// Any Internet socket but a datagram one (socketCheck lets TCP and
	// MPTCP be made) is the launcher's to connect.
	stream := (domain == unix.AF_INET || domain == unix.AF_INET6) && typ != unix.SOCK_DGRAM
	v6only := false
	if domain == unix.AF_INET6 {
		n, _ := unix.GetsockoptInt(sock, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
		v6only = n != 0
	}
	if op == opListen {
		return errnoResp(req.id, p.listen(sock, int(int32(uint32(args[1]))), stream, domain == unix.AF_INET6, v6only))
	}
	if !stream {
		return seccompNotifResp{id: req.id, flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	}
	raw, err := readMem(tid, args[1], min(int(uint32(args[2])), 128))
	if err != nil || !notifValid(fd, req.id) {
		return fail(unix.EACCES)
	}
	v := p.decide(op, raw, v6only)
	switch {
	case v.cont:
		return seccompNotifResp{id: req.id, flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	case v.err != 0:
		return fail(v.err)
	case op == opBind:
		return errnoResp(req.id, unix.Bind(sock, v.to))
	}
	return errnoResp(req.id, unix.Connect(sock, v.to))
}

// socketcallArgs are the call and arguments of i386's socketcall req,
// read once from the caller's memory.
func socketcallArgs(fd int, req seccompNotif) (netOp, [6]uint64, unix.Errno) {
	args := req.args
	raw, err := readMem(int(req.pid), args[1], 12)
	if err != nil || len(raw) < 12 || !notifValid(fd, req.id) {
		return opNone, args, unix.EACCES
	}
	op := map[uint64]netOp{sysBind: opBind, sysConnect: opConnect, sysListen: opListen}[uint64(uint32(args[0]))]
	if op == opNone {
		return opNone, args, unix.EPERM
	}
	for i := range 3 {
		args[i] = uint64(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return op, args, 0
}

// listen makes the command's listen on sock: an Internet stream socket
// not bound yet is bound to the session's address first (the kernel
// would bind it to every interface).
func (p *netPolicy) listen(sock, backlog int, stream, six, v6only bool) error {
	if stream {
		sa, err := unix.Getsockname(sock)
		if err != nil {
			return err
		}
		if port(sa) == 0 {
			if six && v6only {
				return unix.EADDRNOTAVAIL
			}
			if err := unix.Bind(sock, sockaddr(p.session, 0, six)); err != nil {
				return err
			}
		}
	}
	return unix.Listen(sock, backlog)
}

// port is a socket address's port (0: none).
func port(sa unix.Sockaddr) int {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return a.Port
	case *unix.SockaddrInet6:
		return a.Port
	}
	return 0
}

// errnoResp answers a call the supervisor made with its result.
func errnoResp(id uint64, err error) seccompNotifResp {
	if err == nil {
		return seccompNotifResp{id: id}
	}
	var e unix.Errno
	if !errors.As(err, &e) {
		e = unix.EACCES
	}
	return seccompNotifResp{id: id, error: -int32(e)}
}

// pidfdOf is a pidfd of thread tid (its own table of descriptors, on a
// kernel with PIDFD_THREAD, Linux 6.9), else of its process (Ubuntu
// 24.04's 6.8: threads share the table but for a clone without
// CLONE_FILES, whose socket the launcher then does not find).
func pidfdOf(tid int) (int, error) {
	if !oldPidfds.Load() {
		if fd, err := unix.PidfdOpen(tid, unix.O_EXCL /* PIDFD_THREAD */); err == nil {
			return fd, nil
		}
	}
	tgid, ok := procTgid(tid)
	if !ok {
		return -1, unix.ESRCH
	}
	return unix.PidfdOpen(tgid, 0)
}

// oldPidfds: do not try PIDFD_THREAD (how the tests meet an older kernel).
var oldPidfds atomic.Bool

// readMem copies n bytes at addr of thread tid's memory.
func readMem(tid int, addr uint64, n int) ([]byte, error) {
	if n <= 0 {
		return nil, unix.EINVAL
	}
	buf := make([]byte, n)
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(n)
	got, err := unix.ProcessVMReadv(tid, local, []unix.RemoteIovec{{Base: uintptr(addr), Len: n}}, 0)
	if err != nil {
		return nil, err
	}
	return buf[:got], nil
}

// notifValid says whether notification id still waits for its answer:
// its caller has not ended (so its pid names it still).
func notifValid(fd int, id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	return e == 0
}
