//go:build linux

package sandbox

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The policy as a table: what each bind and connect becomes.
func TestSessionLoopbackPolicy(t *testing.T) {
	p := &netPolicy{session: netip.MustParseAddr("127.200.1.2"), forwards: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}}
	v4 := func(a string, port uint16) []byte {
		b := make([]byte, 16)
		b[0], b[1] = unix.AF_INET, 0 // little-endian family (every architecture Harvey builds for)
		b[2], b[3] = byte(port>>8), byte(port)
		copy(b[4:], netip.MustParseAddr(a).AsSlice())
		return b
	}
	v6 := func(a string, port uint16) []byte {
		b := make([]byte, 28)
		b[0] = unix.AF_INET6
		b[2], b[3] = byte(port>>8), byte(port)
		ad := netip.MustParseAddr(a).As16()
		copy(b[8:], ad[:])
		return b
	}
	show := func(v netVerdict) string {
		switch {
		case v.cont:
			return "continue"
		case v.err != 0:
			return unix.ErrnoName(v.err)
		}
		switch a := v.to.(type) {
		case *unix.SockaddrInet4:
			return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
		case *unix.SockaddrInet6:
			return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)).String()
		}
		return "?"
	}
	for _, c := range []struct {
		op     netOp
		raw    []byte
		v6only bool
		want   string
	}{
		{opBind, v4("0.0.0.0", 8000), false, "127.200.1.2:8000"},
		{opBind, v4("127.0.0.1", 8000), false, "127.200.1.2:8000"},
		{opBind, v4("127.9.9.9", 0), false, "127.200.1.2:0"},
		{opBind, v4("192.0.2.2", 8000), false, "EADDRNOTAVAIL"},
		{opBind, v6("::", 8000), false, "[::ffff:127.200.1.2]:8000"},
		{opBind, v6("::1", 8000), false, "[::ffff:127.200.1.2]:8000"},
		{opBind, v6("::", 8000), true, "EADDRNOTAVAIL"},
		{opBind, v6("2001:db8::1", 8000), false, "EADDRNOTAVAIL"},
		{opConnect, v4("127.0.0.1", 3000), false, "127.200.1.2:3000"},
		{opConnect, v4("0.0.0.0", 3000), false, "127.200.1.2:3000"},
		{opConnect, v4("127.0.0.1", 5432), false, "127.0.0.1:5432"}, // the user's service, as named
		{opConnect, v6("::ffff:127.0.0.1", 5432), false, "[::ffff:127.0.0.1]:5432"},
		{opConnect, v4("127.0.0.2", 5432), false, "127.200.1.2:5432"}, // not the address named
		{opConnect, v4("1.1.1.1", 443), false, "ENETUNREACH"},
		{opConnect, v6("::1", 3000), false, "[::ffff:127.200.1.2]:3000"},
		{opConnect, v6("::1", 3000), true, "ECONNREFUSED"},
		{opConnect, v6("::ffff:1.1.1.1", 443), false, "ENETUNREACH"},
		{opConnect, v6("2606:4700::1111", 443), false, "ENETUNREACH"},
		{opConnect, []byte{0, 0}, false, "continue"}, // AF_UNSPEC: a disconnect
		{opConnect, v4("127.0.0.1", 1)[:8], false, "EINVAL"},
	} {
		if got := show(p.decide(c.op, c.raw, c.v6only)); got != c.want {
			t.Errorf("%v %x (v6only %v): %s, want %s", c.op, c.raw, c.v6only, got, c.want)
		}
	}
}

// The launcher's network rules as a hostile command meets them, with the
// filter alone (no Landlock behind it, so the supervisor is the whole
// boundary): nothing reaches the test's listeners on the machine's own
// address or its 127.0.0.1 (a service of the user's not named), not by a
// connect, not by TCP Fast Open, not by an address the command rewrites
// while the supervisor looks at it, not by MPTCP; no SCTP, raw, packet or
// vsock socket is made; its servers bind the session's
// address, whatever they ask for; a service named is reached; UDP and
// unix sockets work as before; io_uring is refused.
func TestSessionLoopbackHoldsAgainstACommand(t *testing.T) {
	for _, threads := range []bool{true, false} { // false: a kernel before PIDFD_THREAD (6.9)
		t.Run(map[bool]string{true: "thread-pidfd", false: "process-pidfd"}[threads], func(t *testing.T) {
			oldPidfds.Store(!threads)
			defer oldPidfds.Store(false)
			hostileNetCommand(t)
		})
	}
}

func hostileNetCommand(t *testing.T) {
	if len(sigArches) == 0 {
		t.Skip("no seccomp numbers for this architecture")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	outside := outsideAddr(t)
	var reached atomic.Int32
	listen := func(addr string, counts bool) int {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				if counts {
					reached.Add(1)
				}
				c.Write([]byte("named\n"))
				c.Close()
			}
		}()
		return ln.Addr().(*net.TCPAddr).Port
	}
	fwd := listen("127.0.0.1:0", false)
	mine := listen("127.0.0.1:0", true)
	out := listen(net.JoinHostPort(outside, "0"), true)
	np := &netPolicy{session: netip.MustParseAddr("127.201.2.3"), forwards: []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(fwd))}}
	script := fmt.Sprintf(hostileNetScript, outside, out, fwd, mine)
	got, err := runProtected(exec.Command("python3", "-c", script), np, 60*time.Second)
	if err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	for _, want := range []string{
		"bind 127.201.2.3", "bind6 ::ffff:127.201.2.3", "autobind 127.201.2.3",
		"mine err ECONNREFUSED", "fwd ok named", "outside err ENETUNREACH", "fastopen err EPERM",
		"own ok yes", "race connected 0",
		"sctp err EPROTONOSUPPORT", "seqpacket err EPROTONOSUPPORT", "raw err EPROTONOSUPPORT", "vsock err EAFNOSUPPORT",
		"packet err EAFNOSUPPORT", "mptcp err ENETUNREACH", "io_uring 38", "udp ok", "unix ok",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("want %q:\n%s", want, got)
		}
	}
	if !strings.Contains(got, "race saw ENETUNREACH ECONNREFUSED\n") {
		t.Logf("the race did not show both addresses to the supervisor this time:\n%s", got)
	}
	time.Sleep(100 * time.Millisecond)
	if n := reached.Load(); n > 0 {
		t.Errorf("%d connections left the session's loopback:\n%s", n, got)
	}
}

// outsideAddr is an address of this machine's that is not the loopback
// (a command reaching it would have left the session's network).
func outsideAddr(t *testing.T) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no address but the loopback")
	return ""
}

const hostileNetScript = `
import socket, ctypes, threading, struct, sys, errno, os, time
HOST, OUTP, FWD, MINE = %q, %d, %d, %d
def tryit(name, f):
    try:
        print(name, "ok", f())
    except OSError as e:
        print(name, "err", errno.errorcode.get(e.errno, e.errno))
s = socket.socket(); s.bind(("0.0.0.0", 0)); s.listen(); print("bind", s.getsockname()[0])
s6 = socket.socket(socket.AF_INET6); s6.bind(("::", 0)); print("bind6", s6.getsockname()[0])
u = socket.socket(); u.listen(); print("autobind", u.getsockname()[0])
tryit("mine", lambda: socket.create_connection(("127.0.0.1", MINE), timeout=2) and "connected")
tryit("fwd", lambda: socket.create_connection(("127.0.0.1", FWD), timeout=2).recv(10).decode().strip())
tryit("outside", lambda: socket.create_connection((HOST, OUTP), timeout=2) and "connected")
def tfo():
    c = socket.socket(); c.sendto(b"x", 0x20000000, (HOST, OUTP)); return "sent"
tryit("fastopen", tfo)
tryit("own", lambda: socket.create_connection(("127.0.0.1", s.getsockname()[1]), timeout=2) and "yes")
# The address flips between a loopback port nothing listens on and the
# outside listener while connect waits for the supervisor.
closed = socket.socket(); closed.bind(("127.0.0.1", 0)); cport = closed.getsockname()[1]; closed.close()
libc = ctypes.CDLL(None, use_errno=True)
good = struct.pack("<H", 2) + struct.pack(">H", cport) + socket.inet_aton("127.0.0.1") + bytes(8)
bad = struct.pack("<H", 2) + struct.pack(">H", OUTP) + socket.inet_aton(HOST) + bytes(8)
buf = ctypes.create_string_buffer(good, 16)
stop = []
def flip():
    while not stop:
        ctypes.memmove(buf, bad, 16); ctypes.memmove(buf, good, 16)
th = threading.Thread(target=flip); th.start()
n, seen = 0, set()
for i in range(1500):
    c = socket.socket(); r = libc.connect(c.fileno(), buf, 16); c.close()
    n += r == 0; seen.add(ctypes.get_errno() if r else 0)
stop.append(1); th.join()
print("race connected", n)
print("race saw", " ".join(errno.errorcode.get(e, str(e)) for e in sorted(seen)))
for name, args in (("sctp", (socket.AF_INET, socket.SOCK_STREAM, 132)), ("seqpacket", (socket.AF_INET, socket.SOCK_SEQPACKET, 0)),
                   ("raw", (socket.AF_INET, socket.SOCK_RAW, 1)), ("vsock", (40, socket.SOCK_STREAM, 0)), ("packet", (17, socket.SOCK_RAW, 0))):
    tryit(name, lambda: socket.socket(*args) and "made")
try:
    m = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); m.settimeout(2)
    tryit("mptcp", lambda: m.connect((HOST, OUTP)) or "connected")
except OSError:
    print("mptcp err ENETUNREACH")  # no MPTCP in this kernel: nothing to try
libc.syscall.restype = ctypes.c_long
r = libc.syscall(425, 4, ctypes.create_string_buffer(120)); print("io_uring", ctypes.get_errno() if r < 0 else "set up")
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.bind(("127.0.0.1", 0)); d.sendto(b"x", d.getsockname()); d.recv(1); print("udp ok")
a, b = socket.socketpair(); p = "/tmp/hv-%%d.sock" %% os.getpid()
l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(); k = socket.socket(socket.AF_UNIX); k.connect(p); os.unlink(p); print("unix ok")
`
