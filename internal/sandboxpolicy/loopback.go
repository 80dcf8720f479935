package sandboxpolicy

import (
	"crypto/rand"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// LocalServices are the entries of sandbox.hosts that name a service on
// this machine by a loopback address and a port (127.0.0.1:5432,
// localhost:6379, [::1]:5432, 127.0.0.2:3000): commands reach each at the same address on
// the session's loopback. Other entries are for HTTP clients, through the
// proxy.
func LocalServices(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			continue
		}
		switch strings.ToLower(host) {
		case "localhost", "127.0.0.1":
			h = net.JoinHostPort("127.0.0.1", port)
		default:
			// Any loopback address: a registry of yours may listen on
			// 127.0.0.2 beside another on 127.0.0.1.
			ip := net.ParseIP(host)
			if ip == nil || !ip.IsLoopback() {
				continue
			}
			h = net.JoinHostPort(ip.String(), port)
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// The session's own loopback address where commands have no namespaces
// (Landlock only, ABI 4 and later): picked once per Harvey, at random in
// 127.128.0.0-127.254.255.255 (never your 127.0.0.1 nor Debian's
// 127.0.1.1), so two sessions' servers never meet.
var loopback struct {
	once sync.Once
	addr string
}

// SessionLoopback is that address ("" where the launcher does not give
// commands a loopback of the session's: namespaces give them one, or the
// kernel's Landlock cannot refuse their own TCP).
func SessionLoopback() string {
	if !sandbox.Available().LoopbackNet() {
		return ""
	}
	loopback.once.Do(func() {
		var b [3]byte
		rand.Read(b[:])
		addr := fmt.Sprintf("127.%d.%d.%d", 128+int(b[0])%127, b[1], 1+int(b[2])%254)
		// Where the loopback is not all of 127/8 (a minimal container's),
		// commands keep what Landlock alone gives: no TCP.
		if ln, err := net.Listen("tcp", addr+":0"); err == nil {
			ln.Close()
			loopback.addr = addr
		}
	})
	return loopback.addr
}
