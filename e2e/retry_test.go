// Feature: retries through the built binary: each failure class, a tool
// result never lost to a failed call, a server that starts late, the reply
// idle timeout, no Ollama said at once.
package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// retryHome is a config home whose retry waits are short (the policy is the
// product's; only max_wait is lowered, as a user may).
func retryHome(t *testing.T, extra string) string {
	cfg := t.TempDir()
	WriteFile(t, cfg, "harvey/harvey.yaml", "retry:\n  max_wait: 1s\n"+extra)
	return cfg
}

// journalHas reports whether the session journal holds text.
func journalHas(t *testing.T, dir, text string) bool {
	b, _ := os.ReadFile(filepath.Join(dir, "agents", "sessions", "last.jsonl"))
	return bytes.Contains(b, []byte(text))
}

// Each class of failure a flaky local server has, through the built
// binary headless and the fake Ollama: what is retried is retried (the
// turn's answer comes, the user is told what happened and what it waits
// for), what is not is not (one request, the one-line explanation); the
// journal holds every tool result.
func TestRetriesByClass(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	read := fakeollama.Call{ID: "r1", Name: "read_file", Args: map[string]any{"path": "notes.txt"}}
	cases := []struct {
		name     string
		replies  []fakeollama.Reply
		down     bool // the server restarts after the tool round (refused for 3 s)
		code     int
		requests int
		saw      []string
		answer   string
	}{
		{name: "restart", down: true, replies: []fakeollama.Reply{fakeollama.ToolReply("llama3.2", read), fakeollama.TextReply("llama3.2", "The note says hello.")},
			code: 0, requests: 2, saw: []string{"Ollama not answering (restarting?) — retry ", " of 5 in 1 s; Ctrl-C to stop"}, answer: "The note says hello."},
		{name: "model-load", replies: []fakeollama.Reply{fakeollama.ToolReply("llama3.2", read),
			{Status: 500, ErrMsg: "llama runner process has terminated: signal: killed"}, {Status: 500, ErrMsg: "llama runner process has terminated: signal: killed"},
			fakeollama.TextReply("llama3.2", "Loaded and answered.")},
			code: 0, requests: 4, saw: []string{"Ollama loading the model (500) — retry 1 of 5", "retry 2 of 5"}, answer: "Loaded and answered."},
		{name: "429", replies: []fakeollama.Reply{fakeollama.ToolReply("llama3.2", read), {Status: 429, ErrMsg: "too many requests", RetryAfter: "1"}, fakeollama.TextReply("llama3.2", "After the wait.")},
			code: 0, requests: 3, saw: []string{"Ollama rate limited — retry 1 of 5 in 1 s"}, answer: "After the wait."},
		{name: "cut", replies: []fakeollama.Reply{fakeollama.ToolReply("llama3.2", read),
			{Lines: []string{fakeollama.ContentLine("llama3.2", "The note "), fakeollama.ContentLine("llama3.2", "says "), fakeollama.DoneLine("llama3.2")}, NoDone: true},
			fakeollama.TextReply("llama3.2", "The note says hello.")},
			code: 0, requests: 3, saw: []string{"Ollama's reply was cut off — retry 1 of 5"}, answer: "The note says hello."},
		{name: "400", replies: []fakeollama.Reply{fakeollama.ToolReply("llama3.2", read), {Status: 400, ErrMsg: "invalid request: bad options"}},
			code: 1, requests: 2, saw: []string{"Ollama error (400): invalid request: bad options"}},
		{name: "404", replies: []fakeollama.Reply{fakeollama.ToolReply("llama3.2", read), {Status: 404, ErrMsg: "model 'llama3.2' not found"}},
			code: 1, requests: 2, saw: []string{"not found", "pull it with: ollama pull llama3.2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := fakeollama.New(t, "llama3.2:latest")
			if c.down {
				// The restart comes right after the tool round: the next
				// requests find the server gone for 3 s.
				f.OwnAddress()
				c.replies[0].Then = func() { f.DownFor(3 * time.Second) }
			}
			f.Script(c.replies...)
			dir := t.TempDir()
			WriteFile(t, dir, "notes.txt", "hello\n")
			env := []string{"XDG_CONFIG_HOME=" + retryHome(t, "")}
			out, errOut, code := RunEnv(t, bin, dir, "", env, "-p", "what does the note say?", "--model", "llama3.2", "--ollama", f.URL())
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, errOut)
			}
			for _, s := range c.saw {
				if !strings.Contains(errOut, s) {
					t.Errorf("the user did not see %q:\n%s", s, errOut)
				}
			}
			if c.answer != "" && strings.Count(out, c.answer) != 1 {
				t.Errorf("answer %q not shown once: %q", c.answer, out)
			}
			if c.code != 0 && strings.Contains(errOut, "retry 1 of") {
				t.Errorf("%s was retried: %s", c.name, errOut)
			}
			if n := len(f.ChatRequests()); n < c.requests || (c.code != 0 || !c.down) && n != c.requests {
				t.Errorf("%d requests, want %d", n, c.requests)
			}
			if !journalHas(t, dir, "hello") {
				t.Error("the journal lost the tool result")
			}
		})
	}
}

// A tool result is never lost (issue 40): the model call after a tool
// round fails for good (the server answers 503 past every retry); the
// round's result stays in the journal, and harvey -c with /retry goes on
// from there — the model gets the result, the command does not run again.
func TestToolResultSurvivesAFailedCall(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	run := fakeollama.Call{ID: "c1", Name: "run_command", Args: map[string]any{"command": "echo ran >> count.txt && echo counted"}}
	busy := fakeollama.Reply{Status: 503, ErrMsg: "server busy, please try again. maximum pending requests exceeded"}
	f.Script(fakeollama.ToolReply("llama3.2", run), busy, busy, busy)
	dir := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + retryHome(t, "  attempts: 2\n")}
	out, errOut, code := RunEnv(t, bin, dir, "", env, "-p", "count", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 1 || !strings.Contains(errOut, "gave up after 2 retries") || len(f.ChatRequests()) != 4 {
		t.Fatalf("exit %d, %d requests\n%s\n%s", code, len(f.ChatRequests()), out, errOut)
	}
	if !journalHas(t, dir, "counted") {
		t.Fatal("the journal lost the tool result")
	}
	f.Script(fakeollama.TextReply("llama3.2", "Counted once."))
	out, errOut, code = RunEnv(t, bin, dir, "", env, "-c", "-p", "/retry", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Counted once.") || !strings.Contains(errOut, "its last turn has no answer yet") {
		t.Fatalf("harvey -c -p /retry: exit %d\n%s\n%s", code, out, errOut)
	}
	reqs := f.ChatRequests()
	msgs := fakeollama.MessagesOf(reqs[len(reqs)-1])
	if last := msgs[len(msgs)-1]; last["role"] != "tool" || !strings.Contains(last["content"].(string), "counted") {
		t.Fatalf("the retried request does not end with the tool result: %v", last)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "count.txt")); string(b) != "ran\n" {
		t.Fatalf("the command ran again: %q", b)
	}
	if _, errOut, _ = RunEnv(t, bin, dir, "", env, "-c", "-p", "/retry", "--model", "llama3.2", "--ollama", f.URL()); !strings.Contains(errOut, "nothing to retry") {
		t.Fatalf("a second /retry: %s", errOut)
	}
}

// A server that starts a few seconds after Harvey (issue 48): harvey -p
// started while Ollama still refuses connections waits for it within the
// retry budget, says so in one line, and completes the turn; a server that
// never comes fails with the message it always had, and the number of
// retries the config allows.
func TestHeadlessWaitsForAServerThatStartsLate(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir := t.TempDir()
	_, url := fakeollama.Late(t, "llama3.2", "Late but here.", 3*time.Second)
	start := time.Now()
	installed := ollamaOnPath(t) // Ollama is installed here: it may be starting
	out, errOut, code := RunEnv(t, bin, dir, "", installed, "-p", "hello", "--model", "llama3.2", "--ollama", url)
	if code != 0 || !strings.Contains(out, "Late but here.") {
		t.Fatalf("exit %d after %s: %q %q", code, time.Since(start).Round(time.Second), out, errOut)
	}
	if n := strings.Count(errOut, "not answering yet"); n != 1 {
		t.Errorf("%d status lines, want 1: %q", n, errOut)
	}
	// Nobody there: it gives up after the budget (one retry of 2 s here).
	cfg := t.TempDir()
	WriteFile(t, cfg, "harvey/harvey.yaml", "retry:\n  attempts: 1\n")
	_, errOut, code = RunEnv(t, bin, dir, "", append(installed, "XDG_CONFIG_HOME="+cfg), "-p", "hello", "--model", "llama3.2", "--ollama", fakeollama.RefusingURL(t))
	if code != 1 || !strings.Contains(errOut, "cannot reach Ollama") || !strings.Contains(errOut, "still refused after 2 s") || strings.Contains(errOut, "/ollama start") {
		t.Errorf("exit %d: %q", code, errOut)
	}
}

// The idle timeout of a reply, through the built binary (issue 45): a
// server that accepts and never answers, and one that drips empty chunks,
// end harvey -p with exit 1 and a line naming retry.idle, soon after the
// idle time; a reply that is slow but flowing (longer in all than the idle
// time) is not cut.
func TestEndToEndReplyIdleTimeout(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	empty := `{"model":"llama3.2","message":{"role":"assistant","content":""},"done":false}`
	slow := fakeollama.TextReply("llama3.2", "A slow but live reply, seven bytes at a time.")
	slow.Gap = 150 * time.Millisecond // about 1.4 s in all, each piece well within the idle time
	for _, c := range []struct {
		name  string
		reply fakeollama.Reply
		ok    bool
	}{
		{"silent", fakeollama.Reply{Lines: []string{empty}, First: time.Minute}, false},
		{"drips empty chunks", fakeollama.Reply{Lines: slices.Repeat([]string{empty}, 100), Gap: 100 * time.Millisecond}, false},
		{"slow but flowing", slow, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := fakeollama.New(t, "llama3.2:latest")
			f.Script(c.reply)
			cfg := t.TempDir()
			WriteFile(t, cfg, "harvey/harvey.yaml", "retry:\n  idle: 1s\n")
			start := time.Now()
			out, errOut, code := RunEnv(t, bin, t.TempDir(), "", []string{"XDG_CONFIG_HOME=" + cfg}, "-p", "hello", "--model", "llama3.2", "--ollama", f.URL())
			took := time.Since(start)
			if c.ok {
				if code != 0 || !strings.Contains(out, "seven bytes at a time.") {
					t.Fatalf("a live reply was cut: exit %d %s %s", code, out, errOut)
				}
				return
			}
			if code != 1 || !strings.Contains(errOut, "retry.idle") || took > 8*time.Second {
				t.Fatalf("exit %d after %s: %s %s", code, took, out, errOut)
			}
		})
	}
}

// ollamaOnPath is a PATH with an ollama program on it (a stub): Ollama
// installed on this machine, as Harvey sees it.
func ollamaOnPath(t *testing.T) []string {
	t.Helper()
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "ollama"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	return []string{"PATH=" + d + ":/usr/bin:/bin"}
}

// No Ollama on this machine (issue 55): nothing to wait for, so harvey -p
// fails at once, naming what to install, in the REPL's words too.
func TestNoOllamaFailsAtOnce(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	_, errOut, code := RunEnv(t, bin, t.TempDir(), "", []string{"PATH=/usr/bin:/bin"}, "-p", "hello", "--model", "llama3.2", "--ollama", fakeollama.RefusingURL(t))
	if code != 1 || !strings.Contains(errOut, "Ollama is not installed here") || !strings.Contains(errOut, "https://ollama.com/download") || strings.Contains(errOut, "not answering yet") {
		t.Errorf("exit %d: %q", code, errOut)
	}
}

// A server started after Harvey (issue 55) answers the next prompt, with
// no command: the first prompt fails (nothing to wait for here), the
// server comes up, the second prompt is answered.
func TestLateServerPickedUpByNextPrompt(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	down := 2 * time.Second
	_, url := fakeollama.Late(t, "llama3.2", "Here now.", down)
	up := time.Now().Add(down)
	cmd := exec.Command(bin, "--model", "llama3.2", "--ollama", url) // the REPL, reading its lines as they come
	cmd.Dir = t.TempDir()
	cmd.Env = append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST=", "PATH=/usr/bin:/bin")
	in, _ := cmd.StdinPipe()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "hello\n")
	time.Sleep(time.Until(up) + 500*time.Millisecond)
	io.WriteString(in, "hello again\n")
	in.Close()
	cmd.Wait()
	if !strings.Contains(out.String(), "Here now.") {
		t.Errorf("the server that came up was not used by the next prompt:\n%s\n%s", out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "cannot reach Ollama") {
		t.Errorf("the first prompt did not say the server was not there:\n%s", errb.String())
	}
}
