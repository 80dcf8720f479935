// Feature: the sandbox through the built binary with a scripted model —
// everyday work (builds, tests, installs, commits) on a fixture home and on
// this machine's own, caches, the registry proxy, MCP servers; spans
// internal/sandboxpolicy (the sandbox's policy, the registry proxy) and internal/mcpclient.
package everyday

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// The built binary, a scripted model asking for hostile commands: every
// one fails or dies with a sandbox line, nothing leaves the workspace, and
// ordinary work (go build, go test, git status, ls, grep) still works.
func TestEndToEndSandbox(t *testing.T) {
	t.Parallel()
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	root := t.TempDir()
	dir := filepath.Join(root, "ws")
	outside := filepath.Join(root, "outside")
	home := filepath.Join(root, "home")
	for _, d := range []string{dir, outside, filepath.Join(home, ".ssh")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("FIXTURE-HOME-KEY\n"), 0o600)
	port, accepted := e2e.CountingListener(t)
	marker := filepath.Join(dir, "late-marker")

	hostile := []string{
		"echo x > ../outside/x",
		"echo x > ~/x",
		"echo x > agents/x",
		"cat ~/.ssh/id_rsa",
		fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected'", port),
		"setsid sh -c 'sleep 2; echo late > " + marker + "' > /dev/null 2>&1 &",
	}
	var calls []fakeollama.Call
	for i, c := range hostile {
		calls = append(calls, fakeollama.Call{ID: fmt.Sprint("h", i), Name: "run_command", Args: map[string]any{"command": c}})
	}
	// A timed-out command whose setsid grandchild would write later.
	calls = append(calls, fakeollama.Call{ID: "to", Name: "run_command", Args: map[string]any{"command": "setsid sh -c 'sleep 3; echo late >> " + marker + "' & sleep 60", "timeout": 1}})
	work := []string{"ls", "grep -n hello m.go", "git init -q && git status --short", "go build ./... && go test ./..."}
	var workCalls []fakeollama.Call
	for i, c := range work {
		workCalls = append(workCalls, fakeollama.Call{ID: fmt.Sprint("w", i), Name: "run_command", Args: map[string]any{"command": c}})
	}
	f.Script(fakeollama.ToolReply("llama3.2", calls...), fakeollama.ToolReply("llama3.2", workCalls...), fakeollama.TextReply("llama3.2", "Done."))

	e2e.WriteFile(t, dir, "go.mod", "module m\ngo 1.21\n")
	e2e.WriteFile(t, dir, "m.go", "package m\n\n// hello\nfunc F() int { return 1 }\n")
	e2e.WriteFile(t, dir, "m_test.go", "package m\nimport \"testing\"\nfunc TestF(t *testing.T) { if F() != 1 { t.Fatal() } }\n")
	env := []string{"HOME=" + home}
	if c, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		env = append(env, "GOCACHE="+strings.TrimSpace(string(c)))
	}
	if c, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		env = append(env, "GOMODCACHE="+strings.TrimSpace(string(c)))
	}
	if p, err := exec.LookPath("go"); err == nil {
		env = append(env, "PATH="+filepath.Dir(p)+":"+os.Getenv("PATH"))
	}
	out, errOut, code := e2e.RunEnv(t, bin, dir, "", env, "-p", "try things", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Done.") {
		t.Fatalf("exit %d: %q %q", code, out, errOut)
	}
	results := fakeollama.ToolResults(f.ChatRequests())
	for i, c := range hostile[:5] {
		r := results[fmt.Sprint("h", i)]
		if strings.Contains(r, "[exit 0]") || strings.Contains(r, "FIXTURE-HOME-KEY") || strings.Contains(r, "\nconnected") || !strings.Contains(r, "[sandbox: ") {
			t.Errorf("%s: not stopped with a sandbox line: %q", c, r)
		}
	}
	if r := results["to"]; !strings.Contains(r, "timed out") {
		t.Errorf("timeout: %q", r)
	}
	for i, c := range work {
		if r := results[fmt.Sprint("w", i)]; !strings.Contains(r, "[exit 0]") {
			t.Errorf("%s failed in the sandbox: %q", c, r)
		}
	}
	e2e.WaitGone(t, marker)
	for _, p := range []string{filepath.Join(outside, "x"), filepath.Join(home, "x"), filepath.Join(dir, "agents", "x"), marker} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	select {
	case <-accepted:
		t.Error("a command connected to the listener")
	default:
	}

	// Safe mode from the user's own config, allowed_commands [find, git]:
	// the kernel refuses the shell that find -exec and a git alias start.
	cfgHome := filepath.Join(root, "config")
	os.MkdirAll(filepath.Join(cfgHome, "harvey"), 0o700)
	os.WriteFile(filepath.Join(cfgHome, "harvey", "harvey.yaml"), []byte("safe_mode: true\nallowed_commands: [find, git]\n"), 0o600)
	f.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "s1", Name: "run_command", Args: map[string]any{"command": `find . -maxdepth 0 -exec sh -c 'touch x' \;`}},
		fakeollama.Call{ID: "s2", Name: "run_command", Args: map[string]any{"command": `git -c alias.x='!touch y' x`}},
		fakeollama.Call{ID: "s3", Name: "run_command", Args: map[string]any{"command": `find . -name m.go`}},
	), fakeollama.TextReply("llama3.2", "Safe."))
	out, errOut, code = e2e.RunEnv(t, bin, dir, "", append(env, "XDG_CONFIG_HOME="+cfgHome), "-p", "safe", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Safe.") {
		t.Fatalf("safe mode: exit %d: %q %q", code, out, errOut)
	}
	for _, p := range []string{"x", "y"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("safe mode: %s was created", p)
		}
	}
	results = fakeollama.ToolResults(f.ChatRequests())
	if r := results["s3"]; !strings.Contains(r, "./m.go") || !strings.Contains(r, "[exit 0]") {
		t.Errorf("an allowed program failed in safe mode: %q", r)
	}
}

// Everyday work in the sandbox with no settings (issue 29), through the
// built binary, on a fixture home that has a ~/.gitconfig with a credential
// helper, a token in a URL rewrite, an alias and a hooks path, rustup- and
// pyenv-style toolchains with a cargo credential, and a descriptor 9 left
// open by the caller: git commits, branches and stashes work with the
// user's identity and none of the rest; .git/'s config and hooks stay
// read-only; the toolchains run; agents/, /run, /var/lib and a unix socket
// outside are out of reach; fd 9 is closed.
func TestEndToEndSandboxEverydayWork(t *testing.T) {
	t.Parallel()
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	root := t.TempDir()
	dir, home, outside := filepath.Join(root, "ws"), filepath.Join(root, "home"), filepath.Join(root, "outside")
	for _, d := range []string{dir, outside} {
		os.MkdirAll(d, 0o755)
	}
	e2e.WriteFile(t, home, ".gitconfig", "[user]\n\tname = Fixture User\n\temail = fixture@example.com\n[init]\n\tdefaultBranch = trunk\n"+
		"[credential]\n\thelper = \"!echo password=FIXTURE-TOKEN-123\"\n[url \"https://x-access-token:FIXTURE-TOKEN-456@github.com/\"]\n\tinsteadOf = https://github.com/\n"+
		"[alias]\n\tst = \"!touch "+filepath.Join(outside, "alias-ran")+"\"\n[core]\n\thooksPath = "+filepath.Join(outside, "hooks")+"\n")
	e2e.WriteFile(t, home, ".cargo/bin/mytool", "#!/bin/sh\ncat \"$HOME/.rustup/toolchains/stable/lib/rustlib.txt\"\n")
	e2e.WriteFile(t, home, ".rustup/toolchains/stable/lib/rustlib.txt", "rustup toolchain ok\n")
	e2e.WriteFile(t, home, ".cargo/credentials.toml", "[registry]\ntoken = \"FIXTURE-CARGO-TOKEN\"\n")
	e2e.WriteFile(t, home, ".pyenv/shims/pyx", "#!/bin/sh\nexec \"$HOME/.pyenv/versions/3.12.0/bin/pyx\"\n")
	e2e.WriteFile(t, home, ".pyenv/versions/3.12.0/bin/pyx", "#!/bin/sh\necho pyenv interpreter ok\n")
	for _, p := range []string{".cargo/bin/mytool", ".pyenv/shims/pyx", ".pyenv/versions/3.12.0/bin/pyx"} {
		os.Chmod(filepath.Join(home, p), 0o755)
	}
	os.MkdirAll(filepath.Join(outside, "hooks"), 0o755)
	e2e.WriteFile(t, outside, "hooks/pre-commit", "#!/bin/sh\ntouch "+filepath.Join(outside, "hook-ran")+"\n")
	os.Chmod(filepath.Join(outside, "hooks/pre-commit"), 0o755)
	e2e.WriteFile(t, dir, "agents/notes.md", "AGENTS-PRIVATE\n")
	e2e.WriteFile(t, dir, ".gitignore", "agents/\n")
	e2e.WriteFile(t, dir, "a.txt", "one\n")
	git := exec.Command("sh", "-c", "git init -q -b main && git add -A && git -c user.name=t -c user.email=t@t commit -qm first")
	git.Dir, git.Env = dir, append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := git.CombinedOutput(); err != nil {
		t.Skipf("git: %v %s", err, out)
	}
	sock := filepath.Join(outside, "agent.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	unixAccepted := make(chan bool, 1)
	go func() {
		if c, err := ul.Accept(); err == nil {
			c.Close()
			unixAccepted <- true
		}
	}()
	commands := map[string]string{
		"git":      "git checkout -q -b feature && echo two > b.txt && git add b.txt && git commit -qm second && echo s > a.txt && git stash -q && git stash list && git log --format='%an %s' && git config --global --list",
		"hook":     "echo x > .git/hooks/pre-push",
		"config":   "echo '[core]' >> .git/config",
		"alias":    "git st",
		"cargo":    "mytool && cat ~/.cargo/credentials.toml; echo cred-exit=$?",
		"pyenv":    "pyx",
		"agents":   "ls -A agents; cat agents/notes.md",
		"system":   "ls -A /run; ls /var/lib",
		"socket":   `perl -e 'use Socket; socket(S, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!"; connect(S, sockaddr_un($ARGV[0])) or die "connect: $!\n"; print "connected\n"' ` + sock,
		"fd9":      "echo leaked >&9",
		"newcache": "ls -d ~/.cache && echo cache-ok",
	}
	var calls []fakeollama.Call
	for id, c := range commands {
		calls = append(calls, fakeollama.Call{ID: id, Name: "run_command", Args: map[string]any{"command": c}})
	}
	f.Script(fakeollama.ToolReply("llama3.2", calls...), fakeollama.TextReply("llama3.2", "Done."))
	fd9, err := os.Create(filepath.Join(outside, "fd9.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer fd9.Close()
	cmd := exec.Command(bin, "-p", "work", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	cmd.Dir = dir
	cmd.Env = append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST=", "HOME="+home, "XDG_CACHE_HOME=", "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"PATH="+filepath.Join(home, ".cargo/bin")+":"+filepath.Join(home, ".pyenv/shims")+":/usr/local/bin:/usr/bin:/bin")
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, nil, nil, fd9} // fd 9
	if out, err := e2e.UnderKernel(os.Getenv("HARVEY_TEST_KERNEL"), cmd).CombinedOutput(); err != nil {
		t.Fatalf("harvey: %v\n%s", err, out)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	for id, r := range res {
		t.Logf("%s: %s", id, r)
	}
	want := map[string][]string{
		"git":      {"[exit 0]", "stash@{0}", "Fixture User second", "user.name=Fixture User", "init.defaultbranch=trunk"},
		"hook":     {"Read-only"},
		"config":   {"Read-only"},
		"cargo":    {"rustup toolchain ok", "cred-exit=0"},
		"pyenv":    {"pyenv interpreter ok", "[exit 0]"},
		"newcache": {"cache-ok"},
		"fd9":      {"Bad file descriptor"},
	}
	for id, ws := range want {
		for _, w := range ws {
			if !strings.Contains(res[id], w) {
				t.Errorf("%s: want %q in %s", id, w, res[id])
			}
		}
	}
	for id, r := range res {
		for _, leak := range []string{"FIXTURE-TOKEN", "FIXTURE-CARGO-TOKEN", "AGENTS-PRIVATE", "connected\n", "docker.sock"} {
			if strings.Contains(r, leak) {
				t.Errorf("%s shows %q: %s", id, leak, r)
			}
		}
	}
	if !strings.Contains(res["system"], "[sandbox: ") && !strings.Contains(res["system"], "Permission denied") {
		t.Errorf("/var/lib readable: %s", res["system"])
	}
	for _, p := range []string{"alias-ran", "hook-ran"} {
		if _, err := os.Stat(filepath.Join(outside, p)); err == nil {
			t.Errorf("%s: a program from the user's git config ran", p)
		}
	}
	for _, p := range []string{".git/hooks/pre-push"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "fd9.txt")); len(b) > 0 {
		t.Errorf("fd 9 was written: %q", b)
	}
	select {
	case <-unixAccepted:
		t.Error("a command connected to a unix socket outside")
	default:
	}
	// A socket the user's config names (docker's, for docker run -i --rm
	// MCP servers) is reachable: sandbox.readable: [SOCKET].
	e2e.WriteFile(t, root, "config/harvey/harvey.yaml", "sandbox:\n  readable: [\""+sock+"\"]\n")
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "named", Name: "run_command", Args: map[string]any{"command": commands["socket"]}}), fakeollama.TextReply("llama3.2", "Done."))
	cmd = exec.Command(bin, "-p", "work", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	cmd.Dir, cmd.Env = dir, append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST=", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(root, "config"))
	if out, err := e2e.UnderKernel(os.Getenv("HARVEY_TEST_KERNEL"), cmd).CombinedOutput(); err != nil {
		t.Fatalf("harvey: %v\n%s", err, out)
	}
	if r := fakeollama.ToolResults(f.ChatRequests())["named"]; !strings.Contains(r, "connected") {
		t.Errorf("a socket named in sandbox.readable: %s", r)
	}
	select {
	case <-unixAccepted:
	case <-time.After(5 * time.Second):
		t.Error("the named socket got no connection")
	}
}

// removableByOwner makes everything under dir writable again before the
// test's TempDir is removed: Go's module cache is read-only, which only
// root can remove as it is.
func removableByOwner(t *testing.T, dir string) {
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+w", dir).Run() })
}

// goModuleFixture writes module example.com/greet v1.0.0 into a module
// cache's download directory (what a proxy serves), so go can build a
// module that needs it with no network: GOPROXY=file://... .
func goModuleFixture(t *testing.T, modcache string) {
	t.Helper()
	dl := filepath.Join(modcache, "cache", "download", "example.com", "greet", "@v")
	os.MkdirAll(dl, 0o755)
	e2e.WriteFile(t, dl, "list", "v1.0.0\n")
	e2e.WriteFile(t, dl, "v1.0.0.info", `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`)
	e2e.WriteFile(t, dl, "v1.0.0.mod", "module example.com/greet\n\ngo 1.21\n")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{"go.mod": "module example.com/greet\n\ngo 1.21\n", "greet.go": "package greet\n\nfunc Hello() string { return \"hello from the cache\" }\n"} {
		w, _ := zw.Create("example.com/greet@v1.0.0/" + name)
		w.Write([]byte(body))
	}
	zw.Close()
	os.WriteFile(filepath.Join(dl, "v1.0.0.zip"), buf.Bytes(), 0o644)
}

// Caches that work on first use and cannot be poisoned (issue 29): a new
// home with a fixture module cache; go build of a module that needs a
// dependency works in the sandbox offline (the XDG cache is made); a
// command then rewrites the dependency's source in the module cache and
// the Go build cache; the workspace's own next build sees its layer, and
// the user's build outside Harvey prints what the module really says.
func TestEndToEndSandboxCachesCannotBePoisoned(t *testing.T) {
	t.Parallel()
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go")
	}
	f := fakeollama.New(t, "llama3.2:latest")
	root := t.TempDir()
	removableByOwner(t, root)
	dir, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	modcache := filepath.Join(home, "go", "pkg", "mod")
	goModuleFixture(t, modcache)
	e2e.WriteFile(t, dir, "go.mod", "module app\n\ngo 1.21\n\nrequire example.com/greet v1.0.0\n")
	e2e.WriteFile(t, dir, "main.go", "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/greet\"\n)\n\nfunc main() { fmt.Println(greet.Hello()) }\n")
	goroot, _ := exec.Command(goBin, "env", "GOROOT").Output()
	env := []string{"HOME=" + home, "GOPATH=" + filepath.Join(home, "go"), "GOMODCACHE=", "GOCACHE=", "XDG_CACHE_HOME=", "GOFLAGS=-mod=mod", "GOSUMDB=off", "GONOSUMCHECK=1",
		"GOPROXY=file://" + filepath.Join(modcache, "cache", "download"), "GOTOOLCHAIN=local", "XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "GOROOT=" + strings.TrimSpace(string(goroot))}
	poison := `chmod -R u+w "$(go env GOMODCACHE)/example.com" && sed -i 's/hello from the cache/POISONED/' "$(go env GOMODCACHE)/example.com/greet@v1.0.0/greet.go" && go build -o app2 . && ./app2`
	f.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "build", Name: "run_command", Args: map[string]any{"command": "go build -o app . && ./app && go vet ./..."}},
		fakeollama.Call{ID: "poison", Name: "run_command", Args: map[string]any{"command": poison}},
	), fakeollama.TextReply("llama3.2", "Built."))
	out, errOut, code := e2e.RunEnv(t, bin, dir, "", env, "-p", "build it", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Built.") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	if r := res["build"]; !strings.Contains(r, "hello from the cache") || !strings.Contains(r, "[exit 0]") {
		t.Fatalf("go build in a new home, offline, from the module cache: %s", r)
	}
	if r := res["poison"]; !strings.Contains(r, "POISONED") {
		t.Fatalf("the command's own layer: %s", r)
	}
	// The user's own build, outside Harvey, with the same home.
	os.Remove(filepath.Join(dir, "app"))
	cmd := exec.Command(goBin, "run", ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	got, err := cmd.CombinedOutput()
	if lines := strings.Split(strings.TrimSpace(string(got)), "\n"); err != nil || lines[len(lines)-1] != "hello from the cache" {
		t.Fatalf("the user's build outside Harvey: %v %s", err, got)
	}
}

// Package registries, and nothing else, on the network (issue 29): npm ci
// and npm test of a project whose dependency a local registry serves (on
// the user's sandbox.hosts) work through Harvey's proxy in a new home; a
// host off the list is refused and named in one line; the command's own
// loopback server works (a test suite's).
func TestEndToEndSandboxRegistryProxy(t *testing.T) {
	t.Parallel()
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm")
	}
	base, integrities := e2e.NPMFixture(t, e2e.LeftpadPackage)
	integrity := integrities["leftpad"]
	f := fakeollama.New(t, "llama3.2:latest")
	root := t.TempDir()
	dir, home, cfg := filepath.Join(root, "ws"), filepath.Join(root, "home"), filepath.Join(root, "config")
	os.MkdirAll(home, 0o755)
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", "sandbox:\n  hosts: [\""+strings.TrimPrefix(base, "http://")+"\"]\n")
	e2e.WriteFile(t, dir, "package.json", `{"name":"app","version":"1.0.0","scripts":{"test":"node test.js"},"dependencies":{"leftpad":"1.0.0"}}`)
	e2e.WriteFile(t, dir, "package-lock.json", fmt.Sprintf(`{"name":"app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"app","version":"1.0.0","dependencies":{"leftpad":"1.0.0"}},"node_modules/leftpad":{"version":"1.0.0","resolved":"%s/leftpad/-/leftpad-1.0.0.tgz","integrity":"%s"}}}`, base, integrity))
	e2e.WriteFile(t, dir, "test.js", "const pad = require('leftpad'); const http = require('http');\n"+
		"const s = http.createServer((q, r) => r.end('own server')).listen(0, '127.0.0.1', () => {\n"+
		"  http.get('http://127.0.0.1:' + s.address().port, r => { let b = ''; r.on('data', d => b += d); r.on('end', () => { console.log(pad(7, 3), b); s.close(); }); });\n});\n")
	f.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "ci", Name: "run_command", Args: map[string]any{"command": "npm ci --no-audit --no-fund && npm test"}},
		fakeollama.Call{ID: "off", Name: "run_command", Args: map[string]any{"command": "npm view leftpad --registry http://registry.example.invalid/ --fetch-retries=0"}},
	), fakeollama.TextReply("llama3.2", "Installed."))
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + cfg, "XDG_CACHE_HOME=", "XDG_DATA_HOME=" + filepath.Join(root, "data"), "PATH=/usr/local/bin:/usr/bin:/bin",
		"npm_config_update_notifier=false"} // no look at the real registry
	out, errOut, code := e2e.RunEnv(t, bin, dir, "", env, "-p", "install", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Installed.") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	if r := res["ci"]; !strings.Contains(r, "007 own server") || !strings.Contains(r, "[exit 0]") {
		t.Fatalf("npm ci && npm test through the proxy: %s", r)
	}
	if r := res["off"]; !strings.Contains(r, "[sandbox: network: registry.example.invalid is not a package registry") || !strings.Contains(r, "sandbox.hosts") {
		t.Fatalf("a host off the list: %s", r)
	}
}

// pypiFixture serves one wheel, harveydemo 1.0, as a PEP 503 simple index
// on 127.0.0.2 and returns the index URL.
func pypiFixture(t *testing.T) string {
	t.Helper()
	var whl bytes.Buffer
	zw := zip.NewWriter(&whl)
	files := map[string]string{
		"harveydemo/__init__.py":                 "X = 'pip through the proxy'\n",
		"harveydemo-1.0.dist-info/METADATA":      "Metadata-Version: 2.1\nName: harveydemo\nVersion: 1.0\n",
		"harveydemo-1.0.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: harvey-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"harveydemo-1.0.dist-info/top_level.txt": "harveydemo\n",
	}
	var record strings.Builder
	for name, body := range files {
		w, _ := zw.Create(name)
		w.Write([]byte(body))
		sum := sha256.Sum256([]byte(body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(body))
	}
	record.WriteString("harveydemo-1.0.dist-info/RECORD,,\n")
	w, _ := zw.Create("harveydemo-1.0.dist-info/RECORD")
	w.Write([]byte(record.String()))
	zw.Close()
	ln, err := net.Listen("tcp4", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/harveydemo/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><body><a href="/files/harveydemo-1.0-py3-none-any.whl">harveydemo-1.0-py3-none-any.whl</a></body></html>`)
	})
	mux.HandleFunc("/files/harveydemo-1.0-py3-none-any.whl", func(w http.ResponseWriter, r *http.Request) { w.Write(whl.Bytes()) })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// The toolchains of this machine's own home (rustup's cargo, pyenv's
// python, make, go), with no sandbox settings but the local index on
// sandbox.hosts: make, cargo build --offline, a venv with pip install from
// a local index through the proxy, and go build all work.
func TestEndToEndSandboxThisMachinesToolchains(t *testing.T) {
	t.Parallel()
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	index := pypiFixture(t)
	f := fakeollama.New(t, "llama3.2:latest")
	root := t.TempDir()
	dir, cfg := filepath.Join(root, "ws"), filepath.Join(root, "config")
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", "sandbox:\n  hosts: [\""+strings.TrimPrefix(index, "http://")+"\"]\n")
	e2e.WriteFile(t, dir, "Makefile", "all:\n\t@echo made > made.txt && cat made.txt\n")
	e2e.WriteFile(t, dir, "rs/Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
	e2e.WriteFile(t, dir, "rs/src/main.rs", "fn main() { println!(\"cargo ok\"); }\n")
	e2e.WriteFile(t, dir, "go.mod", "module m\n\ngo 1.21\n")
	e2e.WriteFile(t, dir, "main.go", "package main\n\nfunc main() { println(\"go ok\") }\n")
	works := map[string][]string{"make": {"make", "--version"}, "cargo": {"cargo", "--version"}, "pip": {"python3", "-m", "venv", "--help"}, "go": {"go", "version"}}
	// This machine's own home, on purpose (every other test gets a fresh
	// one): its caches are seen through private layers of a data
	// directory of the test's.
	own := []string{"HOME=" + e2e.RealHome, "XDG_CACHE_HOME=", "XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + filepath.Join(root, "data")}
	cmds := map[string][2]string{
		"make":  {"make", "made"},
		"cargo": {"cd rs && cargo build --offline -q && ./target/debug/app", "cargo ok"},
		"pip":   {"python3 -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check --index-url " + index + "/simple/ harveydemo && .venv/bin/python -c 'import harveydemo; print(harveydemo.X)'", "pip through the proxy"},
		"go":    {"go build -o app . && ./app", "go ok"},
	}
	var calls []fakeollama.Call
	for id, c := range cmds {
		prog := strings.Fields(c[0])[0]
		if prog == "cd" {
			prog = "cargo"
		}
		if _, err := exec.LookPath(prog); err != nil {
			delete(cmds, id)
			continue
		}
		if err := e2e.ToolchainWorks(own[:2], works[id]...); err != nil {
			t.Logf("%s left out: %v", id, err)
			delete(cmds, id)
			continue
		}
		calls = append(calls, fakeollama.Call{ID: id, Name: "run_command", Args: map[string]any{"command": c[0], "timeout": 300}})
	}
	f.Script(fakeollama.ToolReply("llama3.2", calls...), fakeollama.TextReply("llama3.2", "Done."))
	out, errOut, code := e2e.RunEnv(t, bin, dir, "", own, "-p", "build", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Done.") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	for id, c := range cmds {
		if r := res[id]; !strings.Contains(r, c[1]) || !strings.Contains(r, "[exit 0]") {
			t.Errorf("%s: %s", id, r)
		}
	}
}

// mcpEchoPackage is an MCP server as npm packages ship them: a bin that
// speaks JSON-RPC over stdio (initialize, tools/list, tools/call).
var mcpEchoPackage = map[string]map[string]string{"mcp-echo-test": {
	"package.json": `{"name":"mcp-echo-test","version":"1.0.0","bin":{"mcp-echo-test":"index.js"}}`,
	"index.js": `#!/usr/bin/env node
const rl = require('readline').createInterface({ input: process.stdin });
const send = m => process.stdout.write(JSON.stringify(Object.assign({ jsonrpc: '2.0' }, m)) + '\n');
rl.on('line', line => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') return send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'echo', version: '1.0.0' } } });
  if (m.method === 'tools/list') return send({ id: m.id, result: { tools: [{ name: 'echo', description: 'Echo the text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }] } });
  if (m.method === 'tools/call') return send({ id: m.id, result: { content: [{ type: 'text', text: 'echo: ' + m.params.arguments.text }] } });
  send({ id: m.id, error: { code: -32601, message: 'no such method' } });
});
`,
}}

// An MCP server configured the way its README says, npx -y PACKAGE, with
// no sandbox settings but the local registry on sandbox.hosts: npx fetches
// it through the registry proxy into a new home's npm cache (its layer),
// the server starts inside the sandbox, and its tool answers (issue 29).
func TestEndToEndMCPServerWithNpx(t *testing.T) {
	t.Parallel()
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("no npx")
	}
	base, _ := e2e.NPMFixture(t, mcpEchoPackage)
	f := fakeollama.New(t, "llama3.2:latest")
	root := t.TempDir()
	dir, home, cfg := filepath.Join(root, "ws"), filepath.Join(root, "home"), filepath.Join(root, "config")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(home, 0o755)
	// The same server installed in a node_modules outside the workspace.
	installed := filepath.Join(root, "tools", "node_modules")
	e2e.WriteFile(t, installed, "mcp-echo-test/index.js", mcpEchoPackage["mcp-echo-test"]["index.js"])
	os.Chmod(filepath.Join(installed, "mcp-echo-test/index.js"), 0o755)
	os.MkdirAll(filepath.Join(installed, ".bin"), 0o755)
	os.Symlink("../mcp-echo-test/index.js", filepath.Join(installed, ".bin", "mcp-echo-test"))
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", "sandbox:\n  hosts: [\""+strings.TrimPrefix(base, "http://")+"\"]\n"+
		"mcp:\n  servers:\n    echo:\n      command: [npx, -y, mcp-echo-test]\n      env: {npm_config_registry: \""+base+"/\"}\n"+
		"    local:\n      command: [\""+filepath.Join(installed, ".bin", "mcp-echo-test")+"\"]\n"+
		"    offlist:\n      command: [npx, -y, mcp-echo-test]\n      env: {npm_config_registry: \"http://registry.example.invalid/\"}\n")
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "e1", Name: "echo__echo", Args: map[string]any{"text": "from npx"}},
		fakeollama.Call{ID: "e2", Name: "local__echo", Args: map[string]any{"text": "from node_modules"}}), fakeollama.TextReply("llama3.2", "Echoed."))
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + cfg, "XDG_CACHE_HOME=", "XDG_DATA_HOME=" + filepath.Join(root, "data"), "PATH=/usr/local/bin:/usr/bin:/bin",
		"npm_config_update_notifier=false"} // no look at the real registry
	out, errOut, code := e2e.RunEnv(t, bin, dir, "", env, "-p", "echo", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Echoed.") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if r := fakeollama.ToolResults(f.ChatRequests())["e1"]; !strings.Contains(r, "echo: from npx") {
		t.Fatalf("the npx server's tool: %s\n%s", r, errOut)
	}
	if r := fakeollama.ToolResults(f.ChatRequests())["e2"]; !strings.Contains(r, "echo: from node_modules") {
		t.Fatalf("the server in a node_modules outside: %s\n%s", r, errOut)
	}
	// A server whose download the proxy refuses says so, naming the host
	// and the setting — not a silent timeout.
	if !strings.Contains(errOut, "MCP server offlist") || !strings.Contains(errOut, "[sandbox: network: registry.example.invalid is not a package registry") {
		t.Fatalf("the refused server did not say why: %s", errOut)
	}
	// No models: in the config, so mistral gets the tools too (issue 26).
	fm := fakeollama.New(t, "mistral:latest")
	fm.Script(fakeollama.ToolReply("mistral", fakeollama.Call{ID: "m1", Name: "echo__echo", Args: map[string]any{"text": "from mistral"}}), fakeollama.TextReply("mistral", "Echoed."))
	if out, errOut, code := e2e.RunEnv(t, bin, dir, "", env, "-p", "echo", "--yes", "--model", "mistral", "--ollama", fm.URL()); code != 0 || !strings.Contains(out, "Echoed.") {
		t.Fatalf("mistral: exit %d: %s %s", code, out, errOut)
	}
	if r := fakeollama.ToolResults(fm.ChatRequests())["m1"]; !strings.Contains(r, "echo: from mistral") {
		t.Fatalf("mistral's call: %s", r)
	}
	// harvey mcp list shows the servers running, and the one that failed with its cause.
	out, _, _ = e2e.RunEnv(t, bin, dir, "", env, "mcp", "list")
	if !strings.Contains(out, "echo: running, 1 tool") || !strings.Contains(out, "offlist: failed") || !strings.Contains(out, "registry.example.invalid") {
		t.Fatalf("mcp list: %s", out)
	}
}
