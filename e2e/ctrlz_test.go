//go:build linux

// Feature: Ctrl-Z moves a command running in the foreground to the
// background (issue 76), through a terminal, in each kernel mode.
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/ptytest"
)

// ptyKernel starts bin on a terminal, on a simulated kernel (as
// UnderKernel: the test binary puts itself under the kernel's filter and
// executes bin).
func ptyKernel(t *testing.T, kernel, bin, dir string, env []string, args ...string) *ptytest.Session {
	t.Helper()
	env = append([]string{"NO_COLOR=1"}, env...)
	if kernel == "" || kernel == "real" {
		return ptytest.StartWith(t, bin, dir, env, 160, args...)
	}
	argv, _ := json.Marshal(append([]string{bin}, args...))
	env = append(env, "HARVEY_TEST_HELPER=kernel", "HARVEY_TEST_HELPER_ARG="+kernel, "HARVEY_TEST_EXEC="+string(argv))
	return ptytest.StartWith(t, os.Args[0], dir, env, 160)
}

// Ctrl-Z while a command runs in the foreground makes it a job: your
// !cmd and the model's run_command each return at once, saying so with
// the job's id, and run on past their timeout and the turn; the model's
// result has what it printed so far and how to read the rest; /jobs lists
// them running; they end with the session, its terminal closed. Ctrl-Z
// while nothing runs says what it is for, and Harvey is not suspended.
func TestCtrlZMovesACommandToTheBackground(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	for _, kernel := range Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tag := fmt.Sprintf("harvey-ctrlz-%d", time.Now().UnixNano())
			WriteFile(t, dir, tag+".sh", "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done\n")
			f := fakeollama.New(t, "llama3.2:latest")
			moved := fakeollama.TextReply("llama3.2", "Moved.")
			moved.First = 2 * time.Second // a turn with nothing running: a slow model's reply
			f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "serve", Name: "run_command", Args: map[string]any{"command": "sh " + tag + ".sh", "timeout": 3}}), moved)
			s := ptyKernel(t, kernel, bin, dir, []string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}, "--ollama", f.URL(), "--model", "llama3.2")
			s.Expect("harvey> ")
			s.Send("!sh " + tag + ".sh\r")
			s.Expect("tick 3")
			s.Send("\x1a")
			s.Expect("[running in the background]")
			s.Expect("it runs on as job 1; /jobs 1 shows what it prints from now")
			s.Expect("harvey (1 job)> ")
			s.Send("serve it\r")
			s.Expect("Allow?")
			s.Send("y\r")
			s.Expect("tick 3")
			s.Send("\x1a")
			time.Sleep(500 * time.Millisecond)
			s.Send("\x1a")
			s.Expect("none runs now")
			s.Expect("Moved.")
			s.Expect("harvey (2 jobs)> ")
			// Past the model's timeout for it (3 s) and, where commands have
			// no PID namespace, past its launcher's own (3 s later).
			time.Sleep(6500 * time.Millisecond)
			s.Send("/jobs\r")
			s.Expect("1  running")
			s.Expect("2  running")
			s.Expect("harvey (2 jobs)> ")
			res := fakeollama.ToolResults(f.ChatRequests())["serve"]
			for _, w := range []string{"tick 2", "[running in the background]", "it runs on as job 2; job_output 2 reads what it prints from now"} {
				if !strings.Contains(res, w) {
					t.Errorf("the model's result lacks %q:\n%s", w, res)
				}
			}
			s.Send("/jobs 2\r")
			s.Expect("tick")
			s.Expect("harvey (2 jobs)> ")
			s.Send("!echo next-command\r") // the moved ones keep their caches' layer; this one gets another
			s.Expect("next-command")
			s.Expect("[exit 0]")
			s.Expect("harvey (2 jobs)> ")
			s.Hangup() // the terminal closed: the hardest of the ends a user meets
			s.Wait()
			if ps := Survivors(tag, 5*time.Second); ps != "" {
				t.Errorf("a moved command outlived the closed terminal: %s", ps)
			}
		})
	}
}
