// Feature: what a child process can and cannot get, through the built
// binary (cases 55, 58, 60, 61).
package e2e

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/runner"
)

// Cases 55, 58, 60, 61: what a child process can and cannot get.
func TestRunnerIsolation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 58: a child that ignores SIGTERM is still killed.
	start := time.Now()
	res := runner.RunArgv(context.Background(), dir, []string{"sh", "-c", `trap "" TERM; sleep 30`}, runner.BaseEnv(), time.Second, 1000)
	if !res.TimedOut || time.Since(start) > 6*time.Second {
		t.Fatalf("trap TERM survived: %+v after %s", res, time.Since(start))
	}
	// 61: no controlling terminal, so no password prompt can reach the REPL.
	res = runner.RunArgv(context.Background(), dir, []string{"sh", "-c", "cat /dev/tty"}, runner.BaseEnv(), 5*time.Second, 1000)
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
		bin := Build(t)
		w := t.TempDir()
		f := fakeollama.New(t, "llama3.2:latest")
		f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r", Name: "run_command", Args: map[string]any{"command": "cat /proc/$PPID/environ; env"}}), fakeollama.TextReply("llama3.2", "done"))
		cmd := exec.Command(bin, "-p", "x", "--yes", "--model", "llama3.2", "--ollama", f.URL())
		cmd.Dir = w
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-leakcheck-0123456789")
		cmd.CombinedOutput()
		for _, req := range f.ChatRequests() {
			if strings.Contains(MustJSON(req), "leakcheck") {
				t.Fatal("the API key reached the model")
			}
		}
	})
}
