//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/kernelsim"
)

// The session's network (issue 61), through the built binary in each
// kernel mode: a server a background job starts is reachable from the
// session's next command; from the user's machine only after /ports, and
// only on 127.0.0.1; a service of the user's own the config names in
// sandbox.hosts (127.0.0.1:PORT) is reachable from commands; when the
// session ends nothing of it listens and no process of it remains.
// Landlock only gives the same through the launcher: the session's own
// loopback address (netsuper_linux.go).
func TestEndToEndSessionNetwork(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	for _, kernel := range Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel() // each its own ports
			sessionNetwork(t, bin, kernel)
		})
	}
}

// freePort is a TCP port nothing on this machine listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// hostEcho is a service of the user's on the machine's 127.0.0.1: it
// answers each line with "echo: " and the line.
func hostEcho(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, "echo: "+line)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// fetchHost gets path from 127.0.0.1:port on the user's machine.
func fetchHost(port int, path string) (string, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path)
	b, err := io.ReadAll(c)
	return string(b), err
}

// listensOnlyOnLoopback reports whether every listening socket of the
// machine's on port is bound to 127.0.0.1 (and there is one); with
// session, the session's own loopback address (Landlock only: 127.a.b.c,
// a at least 128) may listen there too.
func listensOnlyOnLoopback(t *testing.T, port int, session bool) bool {
	t.Helper()
	found := false
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(table)
		for _, line := range strings.Split(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "0A" {
				continue
			}
			addr, hex, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseInt(hex, 16, 32); !ok || err != nil || int(p) != port {
				continue
			}
			if n, err := strconv.ParseUint(addr, 16, 32); session && err == nil && len(addr) == 8 && n&0xff == 127 && n>>8&0xff >= 128 {
				continue // the session's own address (little-endian in the table)
			}
			if addr != "0100007F" {
				return false
			}
			found = true
		}
	}
	return found
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string, within time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func sessionNetwork(t *testing.T, bin, kernel string) {
	dir, _ := GitFixture(t)
	tmp := t.TempDir()
	port, service := freePort(t), hostEcho(t)
	tag := fmt.Sprintf("http.server %d", port)
	WriteFile(t, dir, "index.html", "hello from the job\n")
	WriteFile(t, dir, "fetch.py", `import sys, time, socket, urllib.request
port = int(sys.argv[1])
for i in range(100):
    try:
        print(urllib.request.urlopen("http://127.0.0.1:%d/index.html" % port, timeout=2).read().decode().strip()); break
    except Exception as e:
        err = e; time.sleep(0.1)
else:
    print("fetch failed:", err)
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=2)
s.sendall(b"ping\n"); print(s.recv(100).decode().strip())
`)
	WriteFile(t, tmp, "config/harvey/harvey.yaml", fmt.Sprintf("sandbox:\n  hosts: [\"127.0.0.1:%d\"]\n", service))
	script := strings.Join([]string{
		fmt.Sprintf("!python3 -m http.server %d --bind 0.0.0.0 &", port),
		fmt.Sprintf("!python3 fetch.py %d %d", port, service),
		"!touch before; sleep 3",
		fmt.Sprintf("/ports %d", port),
		"/ports",
		"!touch after; sleep 4",
	}, "\n") + "\n"
	WriteFile(t, tmp, "script", script)
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(tmp, "config"), "XDG_DATA_HOME=" + filepath.Join(tmp, "data"), "NO_COLOR=1", "OLLAMA_HOST="}
	cmd := exec.Command(bin, "--run", filepath.Join(tmp, "script"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	w := UnderKernel(kernel, cmd)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	var before, after string
	var beforeErr, afterErr error
	var loopbackOnly bool
	if waitFile(t, filepath.Join(dir, "before"), 30*time.Second) {
		before, beforeErr = fetchHost(port, "/index.html")
	}
	if waitFile(t, filepath.Join(dir, "after"), 30*time.Second) {
		after, afterErr = fetchHost(port, "/index.html")
		loopbackOnly = listensOnlyOnLoopback(t, port, kernel == string(kernelsim.NoUserNS))
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		w.Process.Kill()
		t.Fatalf("the session did not end:\n%s", out.String())
	}
	got := out.String()
	{
		if !strings.Contains(got, "hello from the job") {
			t.Errorf("the next command did not reach the job's server:\n%s", got)
		}
		if !strings.Contains(got, "echo: ping") {
			t.Errorf("the command did not reach the user's service named in sandbox.hosts:\n%s", got)
		}
		if beforeErr == nil && strings.Contains(before, "hello") {
			t.Errorf("the job's server was reachable from the user's machine before /ports: %q", before)
		}
		if afterErr != nil || !strings.Contains(after, "hello from the job") {
			t.Errorf("after /ports the user's machine did not reach the server: %v %q\n%s", afterErr, after, got)
		}
		if !loopbackOnly {
			t.Errorf("the published port listens beyond 127.0.0.1")
		}
		if !strings.Contains(got, fmt.Sprintf("%d  published", port)) {
			t.Errorf("/ports did not list the published port:\n%s", got)
		}
	}
	if _, err := fetchHost(port, "/"); err == nil {
		t.Errorf("something still listens on %d after the session", port)
	}
	if ps := Survivors(tag, 5*time.Second); ps != "" {
		t.Errorf("a process of the session outlived it: %s", ps)
	}
}

var devServerPackage = map[string]map[string]string{"tiny-dev-server": {
	"package.json": `{"name":"tiny-dev-server","version":"1.0.0","bin":{"tiny-dev-server":"index.js"}}`,
	"index.js": `#!/usr/bin/env node
require('http').createServer((q, s) => s.end('page from the dev server\n'))
  .listen(+process.argv[2], '127.0.0.1', () => console.log('dev server ready on ' + process.argv[2]));
`,
}}

// The everyday case of issue 61, as a new user meets it: in a Node project
// the model starts a dev server from the npm registry in the background
// (npx -y, into a new home's empty npm cache), the project's npm test runs
// against it, job_output names its port; when the session ends nothing
// listens and no process of it remains. In each mode.
func TestEndToEndDevServerFromTheRegistry(t *testing.T) {
	RequireSandbox(t)
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("no npx")
	}
	bin := Build(t)
	for _, kernel := range Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel() // each its own port
			devServerFromTheRegistry(t, bin, kernel)
		})
	}
}

func devServerFromTheRegistry(t *testing.T, bin, kernel string) {
	base, _ := NPMFixture(t, devServerPackage)
	port := freePort(t)
	root := t.TempDir()
	dir, home, cfg := filepath.Join(root, "app"), filepath.Join(root, "home"), filepath.Join(root, "config")
	os.MkdirAll(home, 0o755)
	WriteFile(t, dir, "package.json", `{"name":"app","version":"1.0.0","scripts":{"test":"node test.js"}}`)
	WriteFile(t, dir, "test.js", fmt.Sprintf(`const http = require('http');
let tries = 0;
(function get() {
  http.get('http://127.0.0.1:%d/', r => { let b = ''; r.on('data', d => b += d); r.on('end', () => {
    if (!b.includes('page from the dev server')) { console.error('FAIL: ' + b); process.exit(1); }
    console.log('PASS: the page came from the dev server'); }); })
    .on('error', e => { if (++tries < 150) return setTimeout(get, 200); console.error('FAIL: ' + e.message); process.exit(1); });
})();
`, port))
	WriteFile(t, cfg, "harvey/harvey.yaml", "sandbox:\n  hosts: [\""+strings.TrimPrefix(base, "http://")+"\"]\n  env: [npm_config_registry]\n")
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "serve", Name: "run_command", Args: map[string]any{"command": fmt.Sprintf("npx -y tiny-dev-server %d", port), "background": true}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "test", Name: "run_command", Args: map[string]any{"command": "npm test"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "look", Name: "job_output", Args: map[string]any{"id": 1}}),
		fakeollama.TextReply("llama3.2", "Done."),
	)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + cfg, "XDG_CACHE_HOME=", "XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"PATH=/usr/local/bin:/usr/bin:/bin", "npm_config_registry=" + base + "/", "npm_config_update_notifier=false", "HARVEY_SESSION_NET=" + os.Getenv("HARVEY_SESSION_NET")}
	out, errOut, code := RunKernel(t, kernel, bin, dir, "", env, "-p", "test it against the dev server", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Done.") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	if r := res["test"]; !strings.Contains(r, "PASS: the page came from the dev server") {
		t.Errorf("npm test against the dev server: %s\n(the job: %s)", r, res["serve"]+res["look"])
	}
	if r := res["look"]; !strings.Contains(r, fmt.Sprintf("listening on %d", port)) {
		t.Errorf("job_output does not name the port: %s", r)
	}
	if _, err := fetchHost(port, "/"); err == nil {
		t.Errorf("something listens on %d after the session", port)
	}
	if ps := Survivors(fmt.Sprintf("tiny-dev-server %d", port), 5*time.Second); ps != "" {
		t.Errorf("the dev server outlived the session: %s", ps)
	}
}
