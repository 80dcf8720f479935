package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// A command whose view would hold the holder's control socket (the user
// made its directory readable) never joins: it gets a network of its own,
// so no command can reach the socket that starts commands.
func TestNoJoinWhereTheSocketIsVisible(t *testing.T) {
	netState.mu.Lock()
	saved := netState.cur
	dir := t.TempDir()
	netState.cur = &sessionNet{ctl: filepath.Join(dir, "ctl"), dir: dir, done: make(chan struct{}), fwd: map[string]bool{}}
	netState.mu.Unlock()
	defer func() {
		netState.mu.Lock()
		netState.cur = saved
		netState.mu.Unlock()
	}()
	if m := sandbox.Available().Mode(); m != sandbox.ModeFull && m != sandbox.ModeNamespaces {
		t.Skip("no namespaces here: commands have no session network to join")
	}
	spec := &sandbox.Spec{RO: []string{"/usr", filepath.Dir(dir)}, Proxy: "/proxy"}
	joinSession(spec)
	if spec.Session != "" {
		t.Errorf("a command that can read %s joined the session at %s", filepath.Dir(dir), spec.Session)
	}
	spec = &sandbox.Spec{RO: []string{"/usr"}, Proxy: "/proxy"}
	joinSession(spec)
	if spec.Session != netState.cur.ctl {
		t.Errorf("a command that cannot see the socket did not join: %q", spec.Session)
	}
	spec = &sandbox.Spec{RO: []string{"/usr"}, Network: true, Proxy: "/proxy"}
	joinSession(spec)
	if spec.Session != "" {
		t.Error("a command with the host's network joined the session's")
	}
}

// sessionReady skips where commands have no session network.
func sessionReady(t *testing.T) {
	t.Helper()
	if m := sandbox.Available().Mode(); m != sandbox.ModeFull && m != sandbox.ModeNamespaces {
		t.Skip("no namespaces here: commands have no session network")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to serve and fetch with")
	}
}

const pyServe = `import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); print("listening", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"hi from the job\n"); c.close()
`

const pyFetch = `import socket, sys, time
for i in range(50):
    try:
        print(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).recv(100).decode().strip()); break
    except OSError as e:
        err = e; time.sleep(0.1)
else:
    print("refused:", err)
`

// A server a background job starts is reachable from the next command of
// the session, from the user's machine only once published and only on
// 127.0.0.1; no command reaches the holder's socket; a command that times
// out ends with everything it started.
func TestSessionNetworkShared(t *testing.T) {
	sessionReady(t)
	root := t.TempDir()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	proc := func(argv ...string) Proc {
		return Proc{Dir: root, Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 20 * time.Second,
			Sandbox: sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: root, Purpose: "test"})}
	}
	var out bytes.Buffer
	var mu sync.Mutex
	job, err := Start(proc("/usr/bin/python3", "-c", pyServe, strconv.Itoa(port)), writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(p)
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer job.Stop()
	if job.sp.Session == "" {
		t.Fatalf("the job did not join the session's network (%s)", sessionNetworkWhy())
	}
	if res := Run(context.Background(), proc("/usr/bin/python3", "-c", pyFetch, strconv.Itoa(port))); !strings.Contains(string(res.Output), "hi from the job") {
		t.Fatalf("the next command did not reach the job's server: %s", res.Output)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
		c.Close()
		t.Fatal("the job's server was reachable from the machine before it was published")
	}
	if err := PublishPort(port, nil); err != nil {
		t.Fatal(err)
	}
	defer UnpublishPort(port)
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	c.Close()
	if !strings.Contains(string(b), "hi from the job") {
		t.Errorf("the published port answered %q", b)
	}
	if _, err := net.DialTimeout("tcp", net.JoinHostPort(outboundAddr(t), strconv.Itoa(port)), time.Second); err == nil && outboundAddr(t) != "127.0.0.1" {
		t.Error("the published port answers on an address besides 127.0.0.1")
	}
	// The holder's socket starts commands: none may reach it.
	ctl := job.sp.Session
	res := Run(context.Background(), proc("/usr/bin/python3", "-c", `import socket, sys
try:
    socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("REACHED")
except OSError as e:
    print("no:", e)`, ctl))
	if !strings.Contains(string(res.Output), "no:") {
		t.Errorf("a command reached the holder's socket %s: %s", ctl, res.Output)
	}
	// A timeout ends the command and what it started.
	// (Its sleeps are this test's own: a number no other process has.)
	sleeps := fmt.Sprintf("sleep 300.%d", os.Getpid())
	p := proc("/bin/sh", "-c", "setsid "+sleeps+" & "+sleeps)
	p.Timeout = time.Second
	start := time.Now()
	res = Run(context.Background(), p)
	if d := time.Since(start); d > 8*time.Second || !res.TimedOut {
		t.Errorf("a timed-out command took %s (err %v)", d, res.Err)
	}
	// Killed with its PID namespace before Run returns, a process may
	// still be reaped a moment later on a loaded machine (it runs no more
	// code of its own; CI's fresh-home run saw one still there after 3 s):
	// one that is still there after 15 s lives on (it would for 300).
	var pids []byte
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if pids, _ = exec.Command("pgrep", "-x", "-f", sleeps).Output(); len(pids) == 0 {
			break
		}
	}
	if len(pids) > 0 {
		t.Errorf("a process of the timed-out command lives on: %s", pids)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// outboundAddr is this machine's address toward the world (127.0.0.1 where
// it has none).
func outboundAddr(t *testing.T) string {
	c, err := net.Dial("udp", "192.0.2.1:9")
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

// A cache's private layer made ahead by the waiting spare (the session
// idle after a command) carries what the commands before wrote, takes
// the next one's writes, and leaves the user's own cache as it was.
func TestStagedLayersCarryWrites(t *testing.T) {
	sessionReady(t)
	home := t.TempDir()
	cache := filepath.Join(home, ".cache")
	os.MkdirAll(cache, 0o755)
	os.WriteFile(filepath.Join(cache, "mine"), []byte("the user's\n"), 0o644)
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	root := t.TempDir()
	run := func(line string) string {
		res := Run(context.Background(), Proc{Dir: root, Argv: []string{"/bin/sh", "-c", line}, Env: []string{"PATH=/usr/bin:/bin", "XDG_CACHE_HOME=" + cache},
			Timeout: 20 * time.Second, Sandbox: sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: root, Purpose: "run"})})
		return strings.TrimSpace(string(res.Output))
	}
	for i := 1; i <= 4; i++ {
		got := run(fmt.Sprintf(`echo %d >> "$XDG_CACHE_HOME/log"; cat "$XDG_CACHE_HOME/log" | tr '\n' ' '; cat "$XDG_CACHE_HOME/mine"`, i))
		var want []string
		for j := 1; j <= i; j++ {
			want = append(want, strconv.Itoa(j))
		}
		if !strings.HasPrefix(got, strings.Join(want, " ")+" the user's") {
			t.Fatalf("command %d saw %q", i, got)
		}
		time.Sleep(150 * time.Millisecond) // idle: the holder has the spare make the layer ahead
	}
	if _, err := os.Stat(filepath.Join(cache, "log")); err == nil {
		t.Error("a command wrote the user's own cache")
	}
}

// A command's stdout and stderr, combined, keep the order it wrote them in
// (one pipe for both, as os/exec gives a program started here).
func TestJoinedStreamsKeepTheirOrder(t *testing.T) {
	sessionReady(t)
	root := t.TempDir()
	res := Run(context.Background(), Proc{Dir: root, Argv: []string{"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo out$i; echo err$i >&2; done"},
		Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 20 * time.Second, Sandbox: sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: root, Purpose: "test"})})
	want := ""
	for i := 1; i <= 8; i++ {
		want += fmt.Sprintf("out%d\nerr%d\n", i, i)
	}
	if string(res.Output) != want {
		t.Errorf("combined output %q, want %q", res.Output, want)
	}
}

// Building a command's spec starts nothing (mcp add builds one to check
// paths): the session's network starts with the first command that runs.
func TestSpecAloneStartsNoNetwork(t *testing.T) {
	sessionReady(t)
	stopSessionNet()
	spec := sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: t.TempDir(), Purpose: "check"})
	netState.mu.Lock()
	started := netState.cur != nil
	netState.mu.Unlock()
	if started || spec.Session != "" {
		t.Errorf("building a spec started the session's network (%q)", spec.Session)
	}
}
