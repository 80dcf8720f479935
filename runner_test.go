// The runner (runner.go): child processes, their environment, their
// process group, the command policy of safe mode.
package harvey

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestRunnerKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	res := runArgv(context.Background(), dir, []string{"sh", "-c", "sleep 30 & echo $! > pid; sleep 30"}, baseEnv(), time.Second, 1000)
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
	res = runArgv(context.Background(), dir, []string{"cat"}, baseEnv(), 5*time.Second, 1000)
	if res.TimedOut || res.ExitCode != 0 {
		t.Fatalf("cat: %+v", res)
	}
	res = runArgv(context.Background(), dir, []string{"yes"}, baseEnv(), 20*time.Second, 1000)
	if len(res.Output) != 1000 || !res.Flooded {
		t.Fatalf("yes: %d bytes, flooded %v", len(res.Output), res.Flooded)
	}
}

func TestSafeModePlan(t *testing.T) {
	p := CommandPolicy{SafeMode: true, Allowed: []string{"ls", "echo"}}
	if argv, err := p.plan(`echo "a b"`); err != nil || len(argv) != 2 || argv[1] != "a b" {
		t.Fatalf("%v %v", argv, err)
	}
	for _, bad := range []string{"ls; rm -rf ~", "ls && curl x", "echo $(id)", "rm x", "cat < /etc/passwd", "/bin/ls"} {
		if _, err := p.plan(bad); err == nil {
			t.Fatalf("%q allowed in safe mode", bad)
		}
	}
	p.SafeMode = false
	if argv, _ := p.plan("echo hi | tr a-z A-Z"); argv[0] != "sh" {
		t.Fatalf("shell line: %v", argv)
	}
}

// Cases 55, 58, 60, 61: what a child process can and cannot get.
func TestRunnerIsolation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 58: a child that ignores SIGTERM is still killed.
	start := time.Now()
	res := runArgv(context.Background(), dir, []string{"sh", "-c", `trap "" TERM; sleep 30`}, baseEnv(), time.Second, 1000)
	if !res.TimedOut || time.Since(start) > 6*time.Second {
		t.Fatalf("trap TERM survived: %+v after %s", res, time.Since(start))
	}
	// 61: no controlling terminal, so no password prompt can reach the REPL.
	res = runArgv(context.Background(), dir, []string{"sh", "-c", "cat /dev/tty"}, baseEnv(), 5*time.Second, 1000)
	if res.ExitCode == 0 {
		t.Fatalf("child opened /dev/tty: %q", res.Output)
	}
	// 55: the parent's environment is not readable through /proc.
	t.Run("proc environ", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads any /proc/PID/environ; PR_SET_DUMPABLE only stops other users and same-uid children")
		}
		if runtime.GOOS != "linux" {
			t.Skip("/proc and prctl are Linux")
		}
		bin := buildHarvey(t)
		w := t.TempDir()
		f := newFakeOllama(t, "llama3.2:latest")
		f.script(toolReply("llama3.2", fakeCall{id: "r", name: "run_command", args: map[string]any{"command": "cat /proc/$PPID/environ; env"}}), textReply("llama3.2", "done"))
		cmd := exec.Command(bin, "-p", "x", "--yes", "--model", "llama3.2", "--ollama", f.URL())
		cmd.Dir = w
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-leakcheck-0123456789")
		cmd.CombinedOutput()
		for _, req := range f.chatRequests() {
			if strings.Contains(mustJSON(req), "leakcheck") {
				t.Fatal("the API key reached the model")
			}
		}
	})
}
