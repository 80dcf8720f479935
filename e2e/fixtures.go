package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// WriteFile writes content to dir/name (its directories made), failing t.
func WriteFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ToolchainWorks runs argv outside Harvey, with env added to this
// process's environment, and says why it failed: a toolchain of this
// machine that does not work for this HOME (a rustup proxy with no default
// toolchain, a pyenv shim with no version) is left out of a test, with a
// line, instead of failing it.
func ToolchainWorks(env []string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("%s does not work outside Harvey here (%v: %s)", strings.Join(argv, " "), err, first)
	}
	return nil
}

var announced sync.Map

// Announce says, once per what, on the terminal the tests were started
// from, that a slow group of tests runs now (issue 55): go test ./... shows
// a passing package's output only when it ends, and the end-to-end tests
// take minutes on a small machine. Nothing where there is no terminal (CI)
// or with HARVEY_TEST_QUIET=1.
func Announce(what string) {
	if os.Getenv("HARVEY_TEST_QUIET") != "" || what == "" {
		return
	}
	if _, done := announced.LoadOrStore(what, true); done {
		return
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer tty.Close()
	fmt.Fprintf(tty, "harvey tests: %s\n", what)
}

// GitFixture makes a repository with one commit, as a user's would be,
// and returns its root and git's environment (no global config).
func GitFixture(t *testing.T) (string, []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	GitSh(t, root, env, "git init -q -b main && echo a > a.txt && git add a.txt && git commit -qm first")
	return root, env
}

// GitSh runs line with sh in dir with env, failing t; its output.
func GitSh(t *testing.T, dir string, env []string, line string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// WaitGone waits (without a fixed sleep) until no process has token in
// its command line, and fails if one is still there after 5 s: a process
// that outlived its command.
func WaitGone(t *testing.T, token string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := ProcessesWith(token)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v outlived their command", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ProcessesWith lists the PIDs whose command line contains token.
func ProcessesWith(token string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), token) {
			out = append(out, pid)
		}
	}
	return out
}

// CountingListener listens on a loopback port, closes each connection and
// counts it on accepted (a listener no command may reach).
func CountingListener(t *testing.T) (port int, accepted chan bool) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = make(chan bool, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case accepted <- true:
			default:
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// RetryFixture fills dir with a repository of 200 Go files, one of which
// defines Retry.
func RetryFixture(t *testing.T, dir string) {
	t.Helper()
	for i := range 200 {
		var b strings.Builder
		fmt.Fprintf(&b, "package pkg\n\n// File %03d of the fixture.\n", i)
		for j := range 12 {
			fmt.Fprintf(&b, "func helper%03d_%02d(x int) int { return x*%d + %d } // calls Retry's neighbours\n", i, j, j, i)
		}
		if i == 123 {
			b.WriteString("\nfunc Retry(attempts int) error { return nil }\n")
		}
		WriteFile(t, dir, fmt.Sprintf("pkg/f%03d.go", i), b.String())
	}
}

// RetryAnswer is what a sub-agent answers about RetryFixture.
const RetryAnswer = "Retry is defined in pkg/f123.go:41 (func Retry(attempts int) error).\nNo file calls it; the helpers only mention it in comments."

// ReadText is the file at p, failing t.
func ReadText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// CmdCall is a model's call of run_command with command.
func CmdCall(id, command string) fakeollama.Call {
	return fakeollama.Call{ID: id, Name: "run_command", Args: map[string]any{"command": command}}
}

// Survivors is what pgrep -af lists for pattern once the processes that
// match it have had within to end (killed with their namespace or their
// launcher, a process may still be reaped a moment later on a loaded
// machine): "" when none is left. What it lists is then killed, so it
// does not outlive the test either. A leaked process (a job's server, a
// sleep) is still there after a few seconds; a slow reap is not.
func Survivors(pattern string, within time.Duration) string {
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if ps, _ := exec.Command("pgrep", "-f", pattern).Output(); len(ps) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			break
		}
	}
	ps, _ := exec.Command("pgrep", "-af", pattern).Output()
	exec.Command("pkill", "-f", pattern).Run()
	return strings.TrimSpace(string(ps))
}

// WaitFor polls cond every 10 ms for up to 10 s (what runs in the
// background: a warm request, a login's browser step), failing the test
// with what it waited for.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// MustJSON is v as JSON (a recorded request, to compare or search).
func MustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// NothingLeftIn fails the test where tmp (a TMPDIR Harvey ran with) holds
// anything of Harvey's: a throw-away workspace, or one of the sandbox's
// temporary directories (issue 55).
func NothingLeftIn(t *testing.T, tmp string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(tmp, "harvey-*"))
	if len(left) > 0 {
		t.Fatalf("left in the temporary directory: %v", left)
	}
}

// QuotedCallReplies are the replies of issue 27 whose printed call has
// prose around it: each was run before the one-view rule. The first
// declines, the second announces its call, the third decides nothing.
var QuotedCallReplies = []string{
	`{"name": "write_file", "arguments": {"path": "q1.txt", "content": "x"}}` + "\nI will not run it, it is just documentation.",
	"Let me write it now.\n```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"q2.txt\", \"content\": \"x\"}}\n```",
	"config.json contains one object.\n" + `{"name": "write_file", "arguments": {"path": "q3.txt", "content": "x"}}`,
}
