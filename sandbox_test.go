package harvey

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

func sandboxEnvT(t *testing.T) (*testEnv, string) {
	t.Helper()
	e2e.RequireSandbox(t)
	env := newTestEnv(t, nil, "")
	outside := filepath.Join(filepath.Dir(env.dir), "outside-"+filepath.Base(env.dir))
	os.MkdirAll(outside, 0o755)
	t.Cleanup(func() { os.RemoveAll(outside) })
	return env, outside
}

func run(t *testing.T, a *Agent, line string) string {
	t.Helper()
	res, err := a.gate.runChecked(context.Background(), "", line, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return res.Text(config.DefaultMaxOutputBytes)
}

// The sandbox is really applied: writes outside, into agents/ and .git/,
// reads of the home directory and TCP connections fail; work inside does.
func TestSandboxConfines(t *testing.T) {
	env, outside := sandboxEnvT(t)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("HOMESECRET\n"), 0o600)
	t.Setenv("HOME", home)
	os.MkdirAll(filepath.Join(env.dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(env.dir, ".git", "config"), []byte("[core]\n"), 0o644)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
			accepted <- true
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, c := range []struct{ cmd, want string }{
		{"echo x > " + filepath.Join(outside, "x"), ""},
		{"echo x > ../" + filepath.Base(outside) + "/y", ""},
		{"echo x > ~/x", ""},
		{"echo x > agents/x", "Read-only"},
		{"echo x > .git/config", "Read-only"},
		{"cat ~/.ssh/id_rsa", "[sandbox: path outside"}, // a home under /tmp is not even visible
		{fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port), ""},
	} {
		line := c.cmd
		if strings.Contains(line, "/dev/tcp") {
			line = "bash -c '" + line + "'"
		}
		out := run(t, env.a, line)
		if strings.Contains(out, "[exit 0]") || strings.Contains(out, "HOMESECRET") || strings.Contains(out, "connected") {
			t.Fatalf("%s was not stopped: %s", c.cmd, out)
		}
		if c.want != "" && !strings.Contains(out, c.want) {
			t.Fatalf("%s: want %q in %s", c.cmd, c.want, out)
		}
	}
	select {
	case <-accepted:
		t.Fatal("a command connected to a listener")
	default:
	}
	for _, p := range []string{filepath.Join(outside, "x"), filepath.Join(outside, "y"), filepath.Join(home, "x"), filepath.Join(env.dir, "agents", "x")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s was created", p)
		}
	}
	// Ordinary work inside still works: files, ls, grep, TMPDIR, git.
	out := run(t, env.a, "echo hello > note.txt && ls && grep hello note.txt && mktemp && echo ok > $TMPDIR/t && cat $TMPDIR/t")
	if !strings.Contains(out, "[exit 0]") || !strings.Contains(out, "note.txt") {
		t.Fatalf("inside work failed: %s", out)
	}
	os.RemoveAll(filepath.Join(env.dir, ".git"))
	if _, err := exec.LookPath("git"); err == nil {
		out = run(t, env.a, "git init -q && git status --short")
		if !strings.Contains(out, "[exit 0]") {
			t.Fatalf("git in the sandbox: %s", out)
		}
	}
}

// No process outlives its command: a setsid grandchild that would write a
// marker after the timeout is killed with it.
func TestSandboxKillsEveryProcess(t *testing.T) {
	t.Parallel()
	env, _ := sandboxEnvT(t)
	marker := filepath.Join(env.dir, "marker")
	res, err := env.a.gate.runChecked(context.Background(), "", "setsid sh -c 'sleep 2; echo late > "+marker+"' & sleep 30", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("not timed out: %s", res.Text(1000))
	}
	// And one that the command leaves behind when it exits normally.
	run(t, env.a, "setsid sh -c 'sleep 2; echo late >> "+marker+"' > /dev/null 2>&1 &")
	e2e.WaitGone(t, marker)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a setsid grandchild outlived its command")
	}
}

// Safe mode by construction: with allowed_commands [find, git], find -exec
// sh and a git alias that runs a shell create nothing.
func TestSandboxSafeModeExecutes(t *testing.T) {
	t.Parallel()
	env, _ := sandboxEnvT(t)
	env.a.Config.SafeMode = true
	env.a.Config.AllowedCommands = []string{"find", "git"}
	out := run(t, env.a, `find . -maxdepth 0 -exec sh -c "touch x" \;`)
	if _, err := os.Stat(filepath.Join(env.dir, "x")); err == nil {
		t.Fatalf("find -exec sh ran a shell: %s", out)
	}
	run(t, env.a, "git init -q")
	out = run(t, env.a, "git -c 'alias.x=!touch y' x")
	if _, err := os.Stat(filepath.Join(env.dir, "y")); err == nil {
		t.Fatalf("a git alias ran a program: %s", out)
	}
	// The allowed programs themselves run.
	if out := run(t, env.a, "find . -maxdepth 0"); !strings.Contains(out, "[exit 0]") {
		t.Fatalf("find: %s", out)
	}
}

// go build and go test of a small module work inside the sandbox.
func TestSandboxGoBuild(t *testing.T) {
	t.Parallel()
	env, _ := sandboxEnvT(t)
	if _, err := exec.LookPath("go"); err != nil || testing.Short() {
		t.Skip("no go, or -short")
	}
	e2e.WriteFile(t, env.dir, "go.mod", "module m\ngo 1.21\n")
	e2e.WriteFile(t, env.dir, "m.go", "package m\nfunc F() int { return 1 }\n")
	e2e.WriteFile(t, env.dir, "m_test.go", "package m\nimport \"testing\"\nfunc TestF(t *testing.T) { if F() != 1 { t.Fatal() } }\n")
	res, err := env.a.gate.runChecked(context.Background(), "", "go build ./... && go test ./...", 2*time.Minute)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("go build in the sandbox: %v %s", err, res.Text(4000))
	}
}

// No sandbox fails closed: forced off, Harvey says so at start and in
// /security, commands refuse naming the setting, and with the setting in
// the user's own config they run.
func TestSandboxFallbackMessage(t *testing.T) {
	if os.Getenv("HARVEY_TEST_NO_SANDBOX") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSandboxFallbackMessage$", "-test.count=1")
		cmd.Env = append(os.Environ(), "HARVEY_TEST_NO_SANDBOX=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	dir := t.TempDir()
	a, errOut := startIn(t, dir, false, "")
	if !strings.Contains(errOut.String(), "sandbox: none (the sandbox is unavailable") {
		t.Fatalf("no start-up line: %s", errOut.String())
	}
	var out strings.Builder
	cmdSecurity(context.Background(), a, nil, &out)
	if !strings.Contains(out.String(), "sandbox: none (") || !strings.Contains(out.String(), "Every process ends with its command: NO") {
		t.Fatalf("/security: %s", out.String())
	}
	target := filepath.Join(t.TempDir(), "x")
	_, err := a.gate.runChecked(context.Background(), "", "echo x > "+target, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "sandbox: {unsandboxed: true}") {
		t.Fatalf("not refused naming the setting: %v", err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the command ran")
	}
	a.Config.Sandbox.Unsandboxed = true
	res, err := a.gate.runChecked(context.Background(), "", "echo x > "+target, 5*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %s", err, res.Text(1000))
	}
}

// In the REPL a blocked command may run once more with the rule lifted,
// after a second, explicit "yes"; anything else, --yes, or headless: never.
func TestSandboxEscalation(t *testing.T) {
	env, outside := sandboxEnvT(t)
	target := filepath.Join(outside, "esc")
	line := "echo x > " + target
	var errOut strings.Builder
	env.a.Err = &errOut
	for _, c := range []struct {
		interactive, auto bool
		answer            string
		wrote             bool
	}{
		{false, true, "yes\n", false}, // headless with --yes: never asked
		{true, true, "y\n", false},    // "y" is not the explicit yes
		{true, false, "no\n", false},
		{true, false, "yes\n", true},
	} {
		os.Remove(target)
		env.a.Interactive, env.a.approvals.auto = c.interactive, c.auto
		env.a.In = newLineReader(strings.NewReader(c.answer))
		res, err := env.a.gate.runChecked(context.Background(), "", line, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(target)
		if (statErr == nil) != c.wrote || (c.wrote && res.ExitCode != 0) {
			t.Fatalf("%+v: wrote=%v exit=%d %s", c, statErr == nil, res.ExitCode, res.Text(500))
		}
	}
	if !strings.Contains(errOut.String(), "the sandbox blocked: "+line) {
		t.Fatalf("no question shown: %q", errOut.String())
	}
	// A refused connection offers network only, still sandboxed.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	env.a.In = newLineReader(strings.NewReader("yes\n"))
	res, _ := env.a.gate.runChecked(context.Background(), "", fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected && echo x > %s'", ln.Addr().(*net.TCPAddr).Port, target+"2"), 5*time.Second)
	if !strings.HasPrefix(res.Text(1000), "connected\n") {
		t.Fatalf("network rerun: %s", res.Text(1000))
	}
	if _, err := os.Stat(target + "2"); err == nil {
		t.Fatal("the network rerun lifted the file rules too")
	}
}

// In the PID namespace a command sees its own processes only: not Harvey,
// not the user's other programs (their environment or command lines).
func TestSandboxHidesOtherProcesses(t *testing.T) {
	env, _ := sandboxEnvT(t)
	if !sandbox.Available().NS {
		t.Skip("no namespaces here")
	}
	out := run(t, env.a, "ls /proc")
	if strings.Contains(out, fmt.Sprintf("\n%d\n", os.Getpid())) {
		t.Fatalf("Harvey's own process is visible to a command:\n%s", out)
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if _, err := fmt.Sscanf(l, "%d", new(int)); err == nil && strings.Trim(l, "0123456789") == "" {
			n++
		}
	}
	if n == 0 || n > 5 {
		t.Fatalf("%d processes visible:\n%s", n, out)
	}
}

// The fallback without namespaces (forced): Landlock still confines writes
// and reads to the policy, and the launcher, as subreaper, kills what the
// command leaves behind.
func TestSandboxWithoutNamespaces(t *testing.T) {
	t.Parallel()
	env, outside := sandboxEnvT(t)
	sb := env.a.gate.commandSandbox()
	sb.NoNS = true
	runSh := func(line string) runner.Result {
		return runner.Run(context.Background(), runner.Proc{Dir: env.dir, Argv: []string{"sh", "-c", line}, Env: runner.BaseEnv(), Timeout: 10 * time.Second, Limit: 1 << 16, Sandbox: sb})
	}
	if res := runSh("echo x > " + filepath.Join(outside, "x")); res.ExitCode == 0 {
		t.Fatalf("a write outside succeeded: %s", res.Text(1000))
	}
	if res := runSh("echo inside > in.txt && cat in.txt"); res.ExitCode != 0 || !strings.Contains(res.Text(1000), "inside") {
		t.Fatalf("work inside failed: %s", res.Text(1000))
	}
	token := fmt.Sprintf("nons-%d", time.Now().UnixNano())
	// (the command waits until the grandchild has left its process group,
	// which the runner kills, so only the launcher can catch it)
	runSh("setsid sh -c 'sleep 30; echo " + token + "' > /dev/null 2>&1 & while ! ps -eo args | grep -q '^sh -c sleep 30; echo " + token + "'; do sleep 0.01; done; sleep 0.1")
	e2e.WaitGone(t, token)
}

// A workspace that is a git worktree (its .git is a file pointing at the
// main repository's gitdir): commits work in the sandbox, and the main
// repository's config and hooks stay read-only (issue 29).
func TestSandboxGitWorktree(t *testing.T) {
	e2e.RequireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	main, wt := filepath.Join(root, "main"), filepath.Join(root, "wt")
	gitEnv := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	for _, c := range []string{"git init -q -b main " + main, "cd " + main + " && echo a > a.txt && git add a.txt && git commit -qm first && git worktree add -q " + wt} {
		cmd := exec.Command("sh", "-c", c)
		cmd.Env = gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("%s: %v %s", c, err, out)
		}
	}
	ws, err := openWorkspace(wt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	a := newAgent(ws, &configfile.File{Config: config.Default()}, newLineReader(strings.NewReader("")), &strings.Builder{}, &strings.Builder{})
	a.approvals.auto = true
	out := run(t, a, "echo b > b.txt && git add b.txt && git -c user.name=t -c user.email=t@t commit -qm second && git log --oneline | head -1")
	if !strings.Contains(out, "second") || !strings.Contains(out, "[exit 0]") {
		t.Fatalf("commit in a worktree: %s", out)
	}
	for _, p := range []string{filepath.Join(main, ".git", "config"), filepath.Join(main, ".git", "hooks", "pre-commit")} {
		if out := run(t, a, "echo x >> "+p); strings.Contains(out, "[exit 0]") {
			t.Fatalf("wrote %s: %s", p, out)
		}
	}
}
