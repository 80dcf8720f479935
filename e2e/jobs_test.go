//go:build linux

// Feature: background jobs through the built binary in each kernel mode
// (issue 61): started, read, killed, ended with the session, and their
// events in --output stream-json.
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/ptytest"
)

// Background jobs (issue 61), through the built binary in each kernel
// mode: the model starts one with run_command background: true and gets
// its id and first lines at once, reads what it printed since with
// job_output, and stops it with job_kill. A hostile job left running when
// the session ends (it setsids, plants core.fsmonitor and writes agents/
// after a second, and means to live on) is ended with the session: no
// process of it remains, the user's git status runs nothing, and what it
// changed is undone and said.
func TestEndToEndBackgroundJobs(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	for _, kernel := range Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			backgroundJobs(t, bin, kernel)
		})
		t.Run(kernel+"/harvey-killed", func(t *testing.T) {
			t.Parallel()
			jobsDieWithHarvey(t, bin, kernel)
		})
	}
}

// Harvey killed (SIGKILL: no Close runs) while a job and its setsid child
// run: both end with it, in each mode.
func jobsDieWithHarvey(t *testing.T, bin, kernel string) {
	dir, _ := GitFixture(t)
	tmp := t.TempDir()
	tag := fmt.Sprintf("harvey-job-killed-%d", time.Now().UnixNano())
	WriteFile(t, dir, tag+".sh", "setsid sh -c 'sleep 60' & touch ready; sleep 60\n")
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "start", Name: "run_command", Args: map[string]any{"command": "sh " + tag + ".sh", "background": true}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "wait", Name: "run_command", Args: map[string]any{"command": "sleep 30"}}),
		fakeollama.TextReply("llama3.2", "Done."),
	)
	cmd := exec.Command(bin, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "OLLAMA_HOST=", "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"), "XDG_DATA_HOME="+filepath.Join(tmp, "data"))
	w := UnderKernel(kernel, cmd)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			w.Process.Kill()
			t.Fatal("the job never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	w.Process.Kill()
	w.Wait()
	if ps := Survivors(tag, 5*time.Second); ps != "" {
		t.Errorf("a job outlived Harvey's death:\n%s", ps)
	}
}

func backgroundJobs(t *testing.T, bin, kernel string) {
	dir, gitEnv := GitFixture(t)
	tmp := t.TempDir()
	marker, plant := plantScript(t, tmp)
	tag := fmt.Sprintf("harvey-job-%d", time.Now().UnixNano())
	WriteFile(t, dir, tag+".sh", "echo serving; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done\n")
	WriteFile(t, dir, "hostile-"+tag+".sh", "setsid sh -c 'sleep 1; git config core.fsmonitor "+plant+"; mkdir -p agents; echo x > agents/planted; sleep 60' &\nsleep 60\n")
	config := ReadText(t, filepath.Join(dir, ".git", "config"))
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "start", Name: "run_command", Args: map[string]any{"command": "sh " + tag + ".sh", "background": true}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "read", Name: "job_output", Args: map[string]any{"id": 1}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "kill", Name: "job_kill", Args: map[string]any{"id": 1}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "hostile", Name: "run_command", Args: map[string]any{"command": "sh hostile-" + tag + ".sh", "background": true}}),
		fakeollama.TextReply("llama3.2", "Done."),
	)
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(tmp, "config"), "XDG_DATA_HOME=" + filepath.Join(tmp, "data")}
	WriteFile(t, tmp, "config/harvey/harvey.yaml", fmt.Sprintf("sandbox:\n  readable: [%q]\n", tmp))
	start := time.Now()
	out, errOut, code := RunKernel(t, kernel, bin, dir, "", env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Done.") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run took %s: a job held it", d)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	if r := res["start"]; !strings.Contains(r, "started job 1") || !strings.Contains(r, "running") {
		t.Errorf("start: %q", r)
	}
	// What it printed comes once: in its first second (the start's
	// result), or later (the read's), never both.
	if r := res["read"]; !strings.Contains(r, "tick") || !strings.Contains(r, "job 1 running") ||
		strings.Contains(r, "serving") == strings.Contains(res["start"], "serving") {
		t.Errorf("job_output (what it printed since the last read): %q after %q", r, res["start"])
	}
	if r := res["kill"]; !strings.Contains(r, "job 1 stopped") {
		t.Errorf("job_kill: %q", r)
	}
	if r := res["hostile"]; !strings.Contains(r, "started job 2") {
		t.Errorf("the hostile job: %q", r)
	}
	time.Sleep(2 * time.Second) // past the planter's second
	if ps := Survivors(tag, 5*time.Second); ps != "" {
		t.Errorf("a job's process outlived the session: %s", ps)
	}
	st := GitSh(t, dir, gitEnv, "git status --porcelain; git config --list")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the user's git status ran what the job planted:\n%s", st)
	}
	if b := ReadText(t, filepath.Join(dir, ".git", "config")); b != config {
		t.Errorf(".git/config changed:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "agents", "planted")); err == nil {
		t.Error("the job's file in agents/ stayed")
	}
	if !strings.Contains(errOut, "job 2 stopped") {
		t.Errorf("the end of the job left running was not said:\n%s", errOut)
	}
}

// Your own background jobs in the REPL (issue 61): !cmd & starts one, the
// prompt counts the jobs that run, /jobs lists them, /jobs ID shows what
// one printed since, /jobs kill ID stops it; Ctrl-D with one running ends
// it with the session.
func TestJobsThroughPTY(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	dir := t.TempDir()
	tag := fmt.Sprintf("harvey-pty-job-%d", time.Now().UnixNano())
	WriteFile(t, dir, tag+".sh", "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done\n")
	s := ptytest.StartWith(t, bin, dir, []string{"NO_COLOR=1", "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}, 160, "--ollama", "http://127.0.0.1:1")
	s.Expect("harvey> ")
	s.Send("!sh " + tag + ".sh &\r")
	s.Expect("started job 1")
	s.Expect("harvey (1 job)> ")
	s.Send("/jobs\r")
	s.Expect("1  running")
	s.Expect("harvey (1 job)> ")
	s.Send("/jobs 1\r")
	s.Expect("tick")
	s.Expect("[job 1 running")
	s.Send("/jobs kill 1\r")
	s.Expect("[job 1 stopped")
	s.Expect("harvey> ")
	s.Send("!sh " + tag + ".sh &\r")
	s.Expect("started job 2")
	s.Expect("harvey (1 job)> ")
	s.Send("\x04")
	s.Wait()
	if ps := Survivors(tag, 5*time.Second); ps != "" {
		t.Errorf("a job outlived the session: %s", ps)
	}
}

// --output stream-json carries a job's start, what it prints (redacted)
// and its end, in that order (issue 61).
func TestJobEventsInTheStream(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	dir, _ := GitFixture(t)
	tmp := t.TempDir()
	WriteFile(t, tmp, "script", "!echo one; sleep 0.8; echo token=ghp_0123456789abcdefghijABCDEFGHIJ012345; echo two &\n!sleep 2\n")
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(tmp, "config"), "XDG_DATA_HOME=" + filepath.Join(tmp, "data")}
	out, errOut, code := RunKernel(t, "", bin, dir, "", env, "--run", filepath.Join(tmp, "script"), "--output", "stream-json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	var actions []string
	var printed strings.Builder
	for _, line := range strings.Split(out, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil || ev["type"] != "job" {
			continue
		}
		a, _ := ev["action"].(string)
		if len(actions) == 0 || actions[len(actions)-1] != a {
			actions = append(actions, a)
		}
		if s, ok := ev["text"].(string); ok {
			printed.WriteString(s)
		}
	}
	if strings.Join(actions, ",") != "started,output,ended" {
		t.Errorf("job events %v, want started, output, ended:\n%s", actions, out)
	}
	if p := printed.String(); !strings.Contains(p, "one") || !strings.Contains(p, "two") || strings.Contains(p, "ghp_0123456789") {
		t.Errorf("the output events carried %q", p)
	}
}
