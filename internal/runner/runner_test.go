// Child processes: their process group, the command policy of safe mode.
package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunnerKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	res := RunArgv(context.Background(), dir, []string{"sh", "-c", "sleep 30 & echo $! > pid; sleep 30"}, BaseEnv(), time.Second, 1000)
	if !res.TimedOut || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout not enforced: %+v in %s", res, time.Since(start))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pid"))
	pid := strings.TrimSpace(string(b))
	time.Sleep(100 * time.Millisecond)
	if pid != "" {
		// a zombie (killed, not yet reaped by init) counts as dead
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Fatalf("grandchild %s survived: %s", pid, st)
		}
	}
	// stdin is /dev/null: cat ends at once; output is capped while streaming.
	res = RunArgv(context.Background(), dir, []string{"cat"}, BaseEnv(), 5*time.Second, 1000)
	if res.TimedOut || res.ExitCode != 0 {
		t.Fatalf("cat: %+v", res)
	}
	res = RunArgv(context.Background(), dir, []string{"yes"}, BaseEnv(), 20*time.Second, 1000)
	if len(res.Output) > 1000 || len(res.Output) < 900 || !res.Flooded || !strings.Contains(string(res.Output), "bytes of the middle") {
		t.Fatalf("yes: %d bytes, flooded %v: %q", len(res.Output), res.Flooded, res.Output)
	}
}

func TestSafeModePlan(t *testing.T) {
	p := CommandPolicy{SafeMode: true, Allowed: []string{"ls", "echo"}}
	if argv, err := p.Plan(`echo "a b"`); err != nil || len(argv) != 2 || argv[1] != "a b" {
		t.Fatalf("%v %v", argv, err)
	}
	for _, bad := range []string{"ls; rm -rf ~", "ls && curl x", "echo $(id)", "rm x", "cat < /etc/passwd", "/bin/ls"} {
		if _, err := p.Plan(bad); err == nil {
			t.Fatalf("%q allowed in safe mode", bad)
		}
	}
	p.SafeMode = false
	if argv, _ := p.Plan("echo hi | tr a-z A-Z"); argv[0] != "sh" {
		t.Fatalf("shell line: %v", argv)
	}
}

// The output the model reads keeps what matters (issue 62): past the cap,
// the head (the first failure) and the tail (the verdict), with the size
// of what was cut from the middle said where it was cut.
func TestCapKeepsHeadAndTail(t *testing.T) {
	dir := t.TempDir()
	res := RunArgv(context.Background(), dir, []string{"sh", "-c", "echo FIRST; seq 1 20000; echo VERDICT: 3 failed"}, BaseEnv(), 20*time.Second, 8192)
	out := string(res.Output)
	text := res.Text(8192)
	if len(out) > 8192 || !strings.HasPrefix(out, "FIRST\n1\n") || !strings.HasSuffix(out, "20000\nVERDICT: 3 failed\n") {
		t.Fatalf("%d bytes: head %q … tail %q", len(out), out[:min(40, len(out))], out[max(0, len(out)-40):])
	}
	if !strings.Contains(out, "bytes of the middle") || strings.Contains(text, "[output truncated") || !strings.Contains(text, "VERDICT: 3 failed") {
		t.Errorf("the cut is not said where it is, or the verdict is lost:\n%s", text)
	}
	// What the tail keeps starts on a whole line.
	i := strings.Index(out, "bytes of the middle …]\n")
	if next := out[i+len("bytes of the middle …]\n"):]; strings.IndexByte(next, '\n') < 1 || next[0] < '1' || next[0] > '9' {
		t.Errorf("the tail starts mid-line: %q", next[:20])
	}
	if res.Dropped <= 0 {
		t.Errorf("nothing counted as cut: %d", res.Dropped)
	}
}

// A program's stderr as one short redacted line: its first line, less
// git's "fatal: ", cut short on a rune, a token never shown.
func TestErrLine(t *testing.T) {
	for in, want := range map[string]string{
		"fatal: not a git repository\nhint: more\n": "not a git repository",
		"": "no message",
		"error: token ghp_abcdefghijklmnopqrstuvwxyz0123456789 refused\n": "token [REDACTED",
		strings.Repeat("é", 100): "éé",
	} {
		if got := ErrLine([]byte(in)); !strings.Contains(got, want) || strings.Contains(got, "\n") || strings.Contains(got, "ghp_abc") || len(got) > 170 {
			t.Errorf("ErrLine(%.30q) = %q, want %q in it", in, got, want)
		}
	}
}

// A program's last words name why it stopped: the reason, not the
// runtime's trailer after it, whatever language wrote it.
func TestLastWordsNameTheReason(t *testing.T) {
	node := "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '/srv/index.js'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n    at node:internal/main/run_main_module:28:49 {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n\nNode.js v20.11.0\n"
	python := "Traceback (most recent call last):\n  File \"/x/server.py\", line 3, in <module>\n    import mcp_fs\nModuleNotFoundError: No module named 'mcp_fs'\n"
	for in, want := range map[string]string{
		node:   "Error: Cannot find module '/srv/index.js'",
		python: "ModuleNotFoundError: No module named 'mcp_fs'",
		"starting...\nfatal: cannot open the index: permission denied\n": "fatal: cannot open the index: permission denied",
		"listening on 8080\nbye\n":                                       "bye",
		"":                                                               "no message",
		"token ghp_" + strings.Repeat("Ab1x", 9) + " rejected: error\n": "token [REDACTED",
	} {
		if got := LastWords([]byte(in)); !strings.HasPrefix(got, want) {
			t.Errorf("%q: %q, want %q", in[:min(len(in), 30)], got, want)
		}
	}
}

// A line long with paths keeps why it failed (sh names the script and
// the file it could not create, each a deep temporary path).
func TestLastWordsOfALongLineKeepTheReason(t *testing.T) {
	deep := "/tmp/" + strings.Repeat("harvey-test-3410538233/", 6)
	got := LastWords([]byte(deep + "log.sh: 2: cannot create " + deep + "audit.log: Read-only file system\n"))
	if !strings.HasPrefix(got, "/tmp/harvey-test") || !strings.Contains(got, "audit.log: Read-only file system") || len(got) > 250 {
		t.Errorf("%d bytes: %q", len(got), got)
	}
}
