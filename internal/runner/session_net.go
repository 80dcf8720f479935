package runner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// The session's network as Harvey uses it (internal/sandbox's
// session_linux.go is its holder): every command of the session without
// the host's network shares one loopback, so a server a background job
// starts is reachable from the next command; started with the first such
// command, started again should it die, ended at exit. A port of it
// reaches the host only where the user publishes it (/ports, or
// sandbox.ports in the user's own config), and only on the host's
// 127.0.0.1. A service on the host the user names in sandbox.hosts by a
// loopback address (127.0.0.1:5432) is listened for at that address on the
// session's loopback and reached through the registry proxy.

type sessionNet struct {
	ctl   string // the holder's control socket
	dir   string // its directory (no command's root holds it)
	stdin io.WriteCloser
	done  chan struct{}
	fwd   map[string]bool // host services asked for (under netState.mu)
}

var netState struct {
	mu    sync.Mutex
	cur   *sessionNet
	why   string               // why the last start failed ("": it did not)
	ports map[int]net.Listener // published on the host's 127.0.0.1
}

// holderStart bounds the holder's start.
const holderStart = 10 * time.Second

// sessionNetwork is the session's network, started on first use (or again
// when it ended); nil where this machine's commands have no namespaces or
// it could not start (netState.why says why): commands then get a network
// each, as before.
func sessionNetwork(proxy string) *sessionNet {
	m := sandbox.Available().Mode()
	if m != sandbox.ModeFull && m != sandbox.ModeNamespaces || os.Getenv("HARVEY_SESSION_NET") == "off" {
		return nil
	}
	netState.mu.Lock()
	defer netState.mu.Unlock()
	if sn := netState.cur; sn != nil {
		select {
		case <-sn.done:
		default:
			return sn
		}
	}
	sn, err := startHolder(proxy)
	if err != nil {
		netState.cur, netState.why = nil, err.Error()
		return nil
	}
	netState.cur, netState.why = sn, ""
	return sn
}

// runtimeDir is where the control socket's directory is made: the user's
// runtime directory, else the temporary one.
func runtimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return os.TempDir()
}

// startHolder starts the holder and waits until it listens.
func startHolder(proxy string) (*sessionNet, error) {
	dir, err := os.MkdirTemp(runtimeDir(), datadir.TempPrefix("session"))
	if err != nil {
		return nil, err
	}
	sn := &sessionNet{ctl: filepath.Join(dir, "ctl"), dir: dir, done: make(chan struct{}), fwd: map[string]bool{}}
	spec := sandbox.Spec{Argv: []string{"the session's network"}, Holder: true, Session: sn.ctl, Proxy: proxy}
	argv := sandbox.Available().Wrap(&spec)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, _ := cmd.StdoutPipe()
	sn.stdin, _ = cmd.StdinPipe()
	cmd.SysProcAttr = holderProcAttr()
	onStarterThread(func() { err = cmd.Start() })
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line) == "ready"
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		cmd.Wait()
		os.RemoveAll(dir)
		close(sn.done)
	}()
	select {
	case ok := <-ready:
		if ok {
			return sn, nil
		}
	case <-time.After(holderStart):
	}
	cmd.Process.Kill()
	<-sn.done
	why := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errOut.String()), "harvey sandbox: "))
	if why == "" {
		why = "the session's network did not start"
	}
	return nil, errors.New(why)
}

// joinSession has spec's command join the session's network (starting it
// on the first command), where the mode has namespaces and the command
// goes out through the registry proxy: neither the host's network nor one
// of Harvey's own bare helpers. Called as the command starts, never as its
// spec is only built; spec.Forwards are the user's services it may reach
// (CommandSpec: LocalServices of sandbox.hosts).
func joinSession(spec *sandbox.Spec) {
	if spec == nil || spec.Network || spec.Proxy == "" || spec.Session != "" {
		return
	}
	sn := sessionNetwork(spec.Proxy)
	if sn == nil || sandbox.Under(sn.dir, append(append([]string{}, spec.RW...), spec.RO...)) {
		return // a command that could see the holder's socket gets a network of its own
	}
	spec.Session = sn.ctl
	for _, h := range spec.Forwards {
		netState.mu.Lock()
		asked := sn.fwd[h]
		sn.fwd[h] = true
		netState.mu.Unlock()
		if !asked {
			if err := sandbox.SessionForward(sn.ctl, h); err != nil {
				fmt.Fprintf(os.Stderr, "harvey: sandbox.hosts: %v\n", err)
			}
		}
	}
}

// sessionNetworkWhy says why commands get a network each where the mode
// could share one ("": they share it, or the mode has no namespaces).
func sessionNetworkWhy() string {
	netState.mu.Lock()
	defer netState.mu.Unlock()
	return netState.why
}

// stopSessionNet ends the holder, and every command in its network (exit).
func stopSessionNet() {
	netState.mu.Lock()
	sn := netState.cur
	netState.cur = nil
	for p, ln := range netState.ports {
		ln.Close()
		delete(netState.ports, p)
	}
	netState.mu.Unlock()
	if sn == nil {
		return
	}
	sn.stdin.Close()
	select {
	case <-sn.done:
	case <-time.After(2 * time.Second):
	}
}

// PublishPort makes port of the session's loopback reachable from the
// user's machine at 127.0.0.1:port (never another address): each
// connection there is relayed to whatever a command of the session
// listens on at that port, when it does.
func PublishPort(port int, hosts []string) error {
	if port <= 0 || port > 65535 {
		return fmt.Errorf("%d is not a port", port)
	}
	proxy := sandboxpolicy.SessionProxy(hosts)
	if s := sandboxpolicy.SessionLoopback(); s != "" {
		return publish(port, func() (net.Conn, error) {
			return net.DialTimeout("tcp", net.JoinHostPort(s, strconv.Itoa(port)), time.Second)
		})
	}
	if sessionNetwork(proxy) == nil {
		if why := sessionNetworkWhy(); why != "" {
			return fmt.Errorf("commands have no shared network here: %s", why)
		}
		return fmt.Errorf("the sandbox here (%s) has no network of the session's to publish from: a server a command starts uses your machine's own network, where Landlock (ABI 4 and later) refuses it TCP", sandbox.Available().Mode())
	}
	return publish(port, func() (net.Conn, error) { return dialSession(port) })
}

// publish listens on the host's 127.0.0.1:port and relays each connection
// to what dial reaches (closed at once when it reaches nothing).
func publish(port int, dial func() (net.Conn, error)) error {
	netState.mu.Lock()
	defer netState.mu.Unlock()
	if netState.ports[port] != nil {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("127.0.0.1:%d on your machine: %v", port, errors.Unwrap(err))
	}
	if netState.ports == nil {
		netState.ports = map[int]net.Listener{}
	}
	netState.ports[port] = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				up, err := dial()
				if err != nil {
					c.Close()
					return
				}
				sandbox.Relay(c, c, up)
			}()
		}
	}()
	return nil
}

// dialSession connects to port of the session's network namespace.
func dialSession(port int) (net.Conn, error) {
	netState.mu.Lock()
	sn := netState.cur
	netState.mu.Unlock()
	if sn == nil {
		return nil, errors.New("no session network")
	}
	return sandbox.SessionDial(sn.ctl, port)
}

// UnpublishPort stops publishing port.
func UnpublishPort(port int) bool {
	netState.mu.Lock()
	defer netState.mu.Unlock()
	ln := netState.ports[port]
	if ln == nil {
		return false
	}
	ln.Close()
	delete(netState.ports, port)
	return true
}

// PublishedPorts are the ports published, in order.
func PublishedPorts() []int {
	netState.mu.Lock()
	defer netState.mu.Unlock()
	var out []int
	for p := range netState.ports {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// DialSession connects to port of the session's own network, where its
// commands' servers listen: the session's namespace (full and namespaces
// only), its own loopback address (Landlock only), or your machine's
// loopback where commands use your network (unsandboxed, or a network of
// their own allowed).
func DialSession(ctx context.Context, port int) (net.Conn, error) {
	var d net.Dialer
	if s := sandboxpolicy.SessionLoopback(); s != "" {
		return d.DialContext(ctx, "tcp", net.JoinHostPort(s, strconv.Itoa(port)))
	}
	netState.mu.Lock()
	sn := netState.cur
	netState.mu.Unlock()
	if sn == nil {
		return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	return sandbox.SessionDial(sn.ctl, port)
}
