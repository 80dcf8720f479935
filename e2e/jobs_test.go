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
	"regexp"
	"strings"
	"syscall"
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
	// The session killed (its guardian ends what it left, and is waited
	// for: the shell's next command comes after it).
	syscall.Kill(sessionOf(t, w.Process.Pid), syscall.SIGKILL)
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

// The model hears the truth about its jobs (issue 76), through the built
// binary in each mode: a job that crashes at start says so, with its exit
// status and output, in the start's result; a trailing & in a foreground
// command is said to have been stopped, with the background: true hint;
// job_output with wait_for returns once a server that takes three seconds
// to start listens, and the next command reaches it; a job that ends later
// is told, with its exit status and last lines, at the head of the model's
// next message; /jobs ID (yours) and job_output (the model's) each read
// from their own position.
func TestEndToEndJobsTellTheTruth(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	for _, kernel := range Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			jobsTellTheTruth(t, bin, kernel)
		})
	}
}

func jobsTellTheTruth(t *testing.T, bin, kernel string) {
	dir := t.TempDir()
	tmp := t.TempDir()
	port := 20000 + int(time.Now().UnixNano()%20000)
	tag := fmt.Sprintf("harvey-truth-%d", time.Now().UnixNano())
	bg := func(id, cmd string) fakeollama.Call {
		return fakeollama.Call{ID: id, Name: "run_command", Args: map[string]any{"command": cmd, "background": true}}
	}
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(
		fakeollama.ToolReply("llama3.2",
			bg("crash", "echo boom; exit 3"),
			bg("later", "sleep 2; echo done-later; exit 5"),
			bg("server", fmt.Sprintf("sleep 3; exec /usr/bin/python3 -m http.server %d --bind 127.0.0.1", port)),
			bg("ticker", "i=0; while :; do i=$((i+1)); echo tick $i "+tag+"; sleep 0.3; done"),
			CmdCall("fg", "sleep 30 & echo left")),
		fakeollama.ToolReply("llama3.2",
			fakeollama.Call{ID: "wait", Name: "job_output", Args: map[string]any{"id": 3, "wait_for": port, "timeout": 20}},
			CmdCall("fetch", fmt.Sprintf("/usr/bin/python3 -c \"import urllib.request; print('status', urllib.request.urlopen('http://127.0.0.1:%d/').status)\"", port))),
		fakeollama.TextReply("llama3.2", "Started."),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "read4", Name: "job_output", Args: map[string]any{"id": 4}}),
		fakeollama.TextReply("llama3.2", "Done."),
	)
	WriteFile(t, tmp, "steps", "start them\n!sleep 2.5\n/jobs 4\nand now?\n")
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(tmp, "config"), "XDG_DATA_HOME=" + filepath.Join(tmp, "data")}
	out, errOut, code := RunKernel(t, kernel, bin, dir, "", env, "--run", filepath.Join(tmp, "steps"), "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	for id, wants := range map[string][]string{
		"crash": {"ended within its first second (exited 3)", "boom"},
		"fg":    {"left", "stopped with it", "background: true"},
		"wait":  {"job 3 is ready: it listens on port"},
		"fetch": {"status 200"},
	} {
		for _, w := range wants {
			if !strings.Contains(res[id], w) {
				t.Errorf("%s: want %q in %s", id, w, res[id])
			}
		}
	}
	// The last tick /jobs 4 showed you is in the model's next job_output
	// too: your read took nothing from it.
	shown := regexp.MustCompile(`tick (\d+) `+tag).FindAllStringSubmatch(out, -1)
	if len(shown) == 0 {
		t.Fatalf("/jobs 4 showed you nothing:\n%s", out)
	}
	if last := shown[len(shown)-1][0]; !strings.Contains(res["read4"], last+"\n") {
		t.Errorf("job_output after your /jobs 4 lacks %q: %s", last, res["read4"])
	}
	reqs := f.ChatRequests()
	var next string // the user's message of the second prompt
	for _, m := range fakeollama.MessagesOf(reqs[len(reqs)-2]) {
		if m["role"] == "user" {
			next, _ = m["content"].(string)
		}
	}
	for _, w := range []string{"[a background job ended: job 2", "exited 5", "done-later"} {
		if !strings.Contains(next, w) {
			t.Errorf("the next message does not tell %q:\n%s", w, next)
		}
	}
	if strings.Contains(next, "job 1 (") {
		t.Errorf("the crashed job, told in its start's result, is told again:\n%s", next)
	}
}

// What the jobs use together is capped (issue 76): a job that forks past
// sandbox.jobs.processes is stopped within a second or two, you are told
// which and why, and so is the model, with the job's end, at the head of
// its next message. Each kernel mode.
func TestEndToEndJobsUseIsCapped(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	for _, kernel := range Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			dir, tmp := t.TempDir(), t.TempDir()
			f := fakeollama.New(t, "llama3.2:latest")
			f.Script(
				fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "forks", Name: "run_command", Args: map[string]any{"command": "for i in $(seq 40); do sleep 60 & done; wait", "background": true}}),
				fakeollama.TextReply("llama3.2", "Started."),
				fakeollama.TextReply("llama3.2", "Done."),
			)
			WriteFile(t, tmp, "config/harvey/harvey.yaml", "sandbox:\n  jobs:\n    processes: 24\n")
			WriteFile(t, tmp, "steps", "start it\n!sleep 3\nand now?\n")
			env := []string{"XDG_CONFIG_HOME=" + filepath.Join(tmp, "config"), "XDG_DATA_HOME=" + filepath.Join(tmp, "data")}
			out, errOut, code := RunKernel(t, kernel, bin, dir, "", env, "--run", filepath.Join(tmp, "steps"), "--yes", "--model", "llama3.2", "--ollama", f.URL())
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, out, errOut)
			}
			if !strings.Contains(out+errOut, "⚑ job 1 stopped: the session's jobs ran") {
				t.Errorf("you are not told:\n%s\n%s", out, errOut)
			}
			reqs := f.ChatRequests()
			var next string
			for _, m := range fakeollama.MessagesOf(reqs[len(reqs)-1]) {
				if m["role"] == "user" {
					next, _ = m["content"].(string)
				}
			}
			for _, w := range []string{"[a background job ended: job 1", "past sandbox.jobs.processes (24)"} {
				if !strings.Contains(next, w) {
					t.Errorf("the next message does not tell %q:\n%s", w, next)
				}
			}
		})
	}
}
