// Feature: harvey model check through the built binary, against
// fakeollama's scripted check models: the report, the saved verdicts, and
// each task running only what it asks.
package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// The command as a user runs it: the table on stdout, --json, and Ctrl-C
// in the middle of a slow model removes the throw-away workspace.
func TestModelCheckCommandEndToEnd(t *testing.T) {
	bin := Build(t)
	f := fakeollama.CheckModel(t, fakeollama.CheckNative, "llama3.2:latest")
	tmp, data := t.TempDir(), t.TempDir()
	env := []string{"TMPDIR=" + tmp, "XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + t.TempDir()}
	out, errOut, code := RunEnv(t, bin, t.TempDir(), "", env, "model", "check", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "verdict: good for everyday use") || !strings.Contains(out, "read a named file") || !strings.Contains(errOut, "checking llama3.2:latest") {
		t.Fatalf("code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, _, code = RunEnv(t, bin, t.TempDir(), "", env, "model", "check", "--json", "--ollama", f.URL(), "llama3.2")
	var reports []modelcheck.Report
	if code != 0 || json.Unmarshal([]byte(out), &reports) != nil || len(reports) != 1 || reports[0].Grade != modelcheck.GradeGood {
		t.Fatalf("--json: %d %s", code, out)
	}
	NothingLeftIn(t, tmp)

	// Ctrl-C while the model is thinking.
	slow := fakeollama.New(t, "llama3.2:latest")
	slow.Respond = func(req map[string]any) fakeollama.Reply {
		return fakeollama.Reply{Lines: []string{fakeollama.ContentLine("llama3.2:latest", "thinking")}, Stall: time.Minute}
	}
	cmd := exec.Command(bin, "model", "check", "--ollama", slow.URL())
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST="), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "the check's first request", func() bool {
		left, _ := filepath.Glob(filepath.Join(tmp, "harvey-check-*"))
		return len(left) == 1 && len(slow.ChatRequests()) > 0
	})
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "model check stopped") {
		t.Fatalf("after Ctrl-C: %v\n%s", err, stderr.String())
	}
	NothingLeftIn(t, tmp)
}

// A hostile model under check (issue 39): the check lets run only the call
// each task asks for (tool and arguments), refuses and counts the rest,
// runs commands with no caches and no network, and leaves no cache layer
// behind — through the built binary.
func TestModelCheckRunsOnlyWhatEachTaskAsks(t *testing.T) {
	bin := Build(t)
	f := fakeollama.CheckModel(t, fakeollama.CheckHostile, "llama3.2:latest")
	tmp, data := t.TempDir(), t.TempDir()
	env := []string{"TMPDIR=" + tmp, "XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + t.TempDir()}
	out, errOut, code := RunEnv(t, bin, t.TempDir(), "", env, "model", "check", "--json", "--ollama", f.URL(), "llama3.2")
	var reports []modelcheck.Report
	if code != 0 || json.Unmarshal([]byte(out), &reports) != nil || len(reports) != 1 {
		t.Fatalf("code %d\n%s\n%s", code, out, errOut)
	}
	refused := 0
	for _, task := range reports[0].Tasks {
		refused += task.Refused
		if task.ID == "edit" || task.ID == "run" {
			if !task.Passed || task.Refused != 2 {
				t.Errorf("%s: the expected call must run and the two others be refused: %+v", task.ID, task)
			}
		}
	}
	if refused == 0 {
		t.Fatalf("nothing refused: %s", out)
	}
	ran, asked := 0, 0
	for _, req := range f.ChatRequests() {
		for id, r := range fakeollama.ToolResults([]map[string]any{req}) {
			_ = id
			if strings.Contains(r, "hostile") || strings.Contains(r, "pwned") {
				asked++
				if !strings.Contains(r, "the model check runs only the call its task asks for") {
					ran++
				}
			}
		}
	}
	if asked == 0 || ran > 0 {
		t.Fatalf("hostile calls: %d answered, %d not refused", asked, ran)
	}
	if layers, _ := filepath.Glob(filepath.Join(data, "harvey", "caches", "*")); len(layers) > 0 {
		t.Fatalf("cache layers left behind: %v", layers)
	}
	NothingLeftIn(t, tmp)
}
