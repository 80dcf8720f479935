// Feature: the built cmd/harvey driven headless as a user would: prompts,
// piped context, --continue, tools validate, the knowledge base, --run's
// exit status, first-run papercuts.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/wspath"
)

func TestEndToEndHeadless(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the answer is 42\n"), 0o644)

	// --version, --help, bad usage
	if out, _, code := Run(t, bin, dir, "", "--version"); code != 0 || !strings.HasPrefix(out, "harvey ") {
		t.Fatalf("--version: %d %q", code, out)
	}
	if _, _, code := Run(t, bin, dir, "", "--bogus"); code != 2 {
		t.Fatalf("bad flag exit %d", code)
	}
	// No backend: one-line hint, exit 1 (no retries configured: the wait
	// for a server that starts late is TestHeadlessWaitsForAServerThatStartsLate's).
	noRetry := t.TempDir()
	WriteFile(t, noRetry, "harvey/harvey.yaml", "retry:\n  attempts: -1\n")
	// Ollama installed here: start it; not installed: install it.
	_, errOut, code := RunEnv(t, bin, dir, "", append(ollamaOnPath(t), "XDG_CONFIG_HOME="+noRetry), "-p", "hello", "--ollama", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(errOut, "ollama serve") {
		t.Fatalf("no backend: %d %q", code, errOut)
	}
	_, errOut, code = RunEnv(t, bin, dir, "", []string{"XDG_CONFIG_HOME=" + noRetry, "PATH=/usr/bin:/bin"}, "-p", "hello", "--ollama", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(errOut, "https://ollama.com/download") {
		t.Fatalf("no backend, none installed: %d %q", code, errOut)
	}
	// Several models and none chosen: error listing them.
	_, errOut, code = Run(t, bin, dir, "", "-p", "hello", "--ollama", f.URL())
	if code != 1 || !strings.Contains(errOut, "llama3.2:latest, mistral:latest") {
		t.Fatalf("model choice: %d %q", code, errOut)
	}
	// Read, write and run as scripted, with --yes.
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r", Name: "read_file", Args: map[string]any{"path": "notes.txt"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "out/answer.txt", "content": "42\n"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "x", Name: "run_command", Args: map[string]any{"command": "cat out/answer.txt"}}),
		fakeollama.TextReply("llama3.2", "The answer is 42; saved to out/answer.txt."),
	)
	out, errOut, code := Run(t, bin, dir, "", "-p", "find the answer and save it", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "The answer is 42") || strings.Contains(out, "⚙") {
		t.Fatalf("stdout = %q", out)
	}
	if !strings.Contains(errOut, "⚙ write_file out/answer.txt") || !strings.Contains(errOut, "tok/s") {
		t.Fatalf("stderr = %q", errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out", "answer.txt")); string(b) != "42\n" {
		t.Fatalf("file = %q", b)
	}
	reqs := f.ChatRequests()
	m := fakeollama.MessagesOf(reqs[len(reqs)-1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "42\n[exit 0]") {
		t.Fatalf("run result = %q", c)
	}
	// --run FILE with commands; a failing line gives exit 1.
	os.WriteFile(filepath.Join(dir, "script.txt"), []byte("/files\n/read notes.txt\n/read ../escape\n"), 0o644)
	out, errOut, code = Run(t, bin, dir, "", "--run", "script.txt", "--ollama", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(out, "notes.txt") || !strings.Contains(errOut, "outside the workspace") {
		t.Fatalf("--run: %d %q %q", code, out, errOut)
	}
	// Piped stdin REPL: no escape codes, commands work.
	out, errOut, code = Run(t, bin, dir, "/files\n/read notes.txt\n/exit\n", "--ollama", "http://127.0.0.1:1")
	if code != 0 || !strings.Contains(out, "read notes.txt into context") || strings.Contains(out+errOut, "\x1b[") {
		t.Fatalf("piped REPL: %d %q %q", code, out, errOut)
	}
}

// /kb from a --run script, twice: the second process sees what the first
// stored, and the active project survives.
func TestEndToEndKnowledgeBase(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "kb1.txt"), []byte("/kb project add harvey coding agent\n/kb observe finding: ollama reloads on num_ctx change\n/kb concept add kv-cache\n/kb concept link kv-cache\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "kb2.txt"), []byte("/kb\n/kb search reloads\n/kb project show\n"), 0o644)
	out, errOut, code := Run(t, bin, dir, "", "--run", "kb1.txt", "--ollama", "http://127.0.0.1:1")
	if code != 0 || !strings.Contains(out, "finding #1 recorded on harvey") {
		t.Fatalf("first run: %d %q %q", code, out, errOut)
	}
	out, errOut, code = Run(t, bin, dir, "", "--run", "kb2.txt", "--ollama", "http://127.0.0.1:1")
	if code != 0 || !strings.Contains(out, "1 project, 1 observation, 1 concept") || !strings.Contains(out, "active project: #1 harvey") ||
		!strings.Contains(out, "[harvey] finding: ollama reloads on num_ctx change") || !strings.Contains(out, "Concepts: kv-cache") {
		t.Fatalf("second run: %d %q %q", code, out, errOut)
	}
	// Piped into the REPL too.
	out, _, code = Run(t, bin, dir, "/kb observe decision: keep num_ctx fixed\n/exit\n", "--ollama", "http://127.0.0.1:1")
	if code != 0 || !strings.Contains(out, "decision #2 recorded on harvey") {
		t.Fatalf("REPL: %d %q", code, out)
	}
}

// harvey tools validate, for CI: exit 0 on good files, 1 with file:line on a bad one.
func TestEndToEndToolsValidate(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir := t.TempDir()
	tools := filepath.Join(dir, "agents", "tools")
	os.MkdirAll(tools, 0o755)
	for _, name := range []string{"go_test.md", "todo_list.md"} {
		b, _ := os.ReadFile(filepath.Join("docs", "examples", "tools", name))
		os.WriteFile(filepath.Join(tools, name), b, 0o644)
	}
	out, errOut, code := Run(t, bin, dir, "", "tools", "validate")
	if code != 0 || !strings.Contains(out, "ok      agents/tools/go_test.md (exec, 2 parameters)") {
		t.Fatalf("validate: %d %q %q", code, out, errOut)
	}
	// The built binary offers the user tool and runs it for a scripted model.
	f := fakeollama.New(t, "llama3.2:latest")
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n// TODO: handle errors\n"), 0o644)
	// A repository's agents/tools/ is workspace configuration (issue 29):
	// headless and unconfirmed, the tools are not loaded, not even a
	// read-only one; the REPL asks once, and the answer is remembered.
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "t0", Name: "todo_list", Args: map[string]any{"path": "."}}), fakeollama.TextReply("llama3.2", "No tool."))
	_, errOut, _ = Run(t, bin, dir, "", "-p", "list todos", "--model", "llama3.2", "--ollama", f.URL())
	if !strings.Contains(errOut, "agents/tools/ (go_test, todo_list) is not yet confirmed; not loaded headless") || !strings.Contains(fakeollama.ToolResults(f.ChatRequests())["t0"], `unknown tool "todo_list"`) {
		t.Fatalf("unconfirmed tools headless: %q", errOut)
	}
	tree, err := wspath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	configfile.Trust(dir, configfile.TrustTools, configfile.UserToolsSum(tree)) // what a yes in the REPL stores (TestUserToolsConfirmedThroughPTY)
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "t1", Name: "todo_list", Args: map[string]any{"path": "."}}),
		fakeollama.TextReply("llama3.2", "One TODO in main.go."),
	)
	out, errOut, code = Run(t, bin, dir, "", "-p", "list todos", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "One TODO in main.go.") || !strings.Contains(errOut, "⚙ todo_list") {
		t.Fatalf("-p with user tool: %d %q %q", code, out, errOut)
	}
	reqs := f.ChatRequests()
	m := fakeollama.MessagesOf(reqs[len(reqs)-1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "./main.go:2:// TODO: handle errors") || strings.Contains(c, "agents/") {
		t.Fatalf("todo_list result = %q", c)
	}
	os.WriteFile(filepath.Join(tools, "bad.md"), []byte("---\nparameters:\n  p: {type: text}\ncommand: [ls, \"{{p}}\"]\n---\nBad.\n"), 0o644)
	out, errOut, code = Run(t, bin, dir, "", "tools", "validate")
	if code != 1 || !strings.Contains(out, `problem agents/tools/bad.md:3: parameter "p": unknown type "text"`) || !strings.Contains(errOut, "1 problem in tool files") {
		t.Fatalf("validate bad: %d %q %q", code, out, errOut)
	}
	if _, _, code := Run(t, bin, dir, "", "tools", "bogus"); code != 2 {
		t.Fatalf("bad usage exit %d", code)
	}
}

// Piped input becomes context for -p: cat err.log | harvey -p "why?".
func TestEndToEndPipedContext(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	dir := t.TempDir()
	f.Script(fakeollama.TextReply("llama3.2", "A nil map was written."))
	out, errOut, code := Run(t, bin, dir, "panic: assignment to entry in nil map\ntoken=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n", "-p", "why did it crash?", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "A nil map was written.") {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
	msgs := fakeollama.MessagesOf(f.ChatRequests()[0])
	ctxMsg := msgs[len(msgs)-2]["content"].(string)
	if !strings.HasPrefix(ctxMsg, "[context: piped input]\npanic: assignment to entry in nil map") || strings.Contains(ctxMsg, "ghp_abc") {
		t.Fatalf("context = %q", ctxMsg)
	}
	if msgs[len(msgs)-1]["content"] != "why did it crash?" {
		t.Fatalf("prompt = %v", msgs[len(msgs)-1])
	}
}

// --continue picks up the last conversation in the workspace, with its
// pinned context and the model it used.
func TestEndToEndContinue(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.txt"), []byte("/context add the user prefers tabs\nmy name is Ada\n"), 0o644)
	f.Script(fakeollama.TextReply("mistral", "Hello Ada."), fakeollama.TextReply("mistral", "Your name is Ada."))
	if _, errOut, code := Run(t, bin, dir, "", "--run", "script.txt", "--model", "mistral", "--ollama", f.URL()); code != 0 {
		t.Fatalf("first run: %d %q", code, errOut)
	}
	out, errOut, code := Run(t, bin, dir, "", "--continue", "-p", "what is my name?", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "Your name is Ada.") || !strings.Contains(errOut, "continuing the last conversation (3 messages); it ended with:\n  you: my name is Ada\n  harvey: Hello Ada.") {
		t.Fatalf("continue: %d %q %q", code, out, errOut)
	}
	reqs := f.ChatRequests()
	last := reqs[len(reqs)-1]
	if last["model"] != "mistral:latest" {
		t.Fatalf("model = %v (the saved one should be used)", last["model"])
	}
	msgs := fakeollama.MessagesOf(last)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, fmt.Sprint(m["role"]))
	}
	if strings.Join(roles, ",") != "system,user,user,assistant,user" || msgs[1]["content"] != "[pinned context]\nthe user prefers tabs" || msgs[2]["content"] != "my name is Ada" {
		t.Fatalf("messages = %s", MustJSON(msgs))
	}
	// Nothing to continue in a fresh workspace: a warning, and a fresh start.
	f.Script(fakeollama.TextReply("llama3.2", "Hi."))
	_, errOut, code = Run(t, bin, t.TempDir(), "", "-c", "-p", "hi", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(errOut, "no earlier conversation to continue") {
		t.Fatalf("fresh: %d %q", code, errOut)
	}
}

// harvey -p under a parent that leaves stdin an open, silent pipe answers
// without reading it (the parent still holds the pipe when harvey exits).
func TestEndToEndSilentPipe(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.TextReply("llama3.2", "Done."))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd := exec.Command(bin, "-p", "hi", "--model", "llama3.2", "--ollama", f.URL())
	cmd.Dir = t.TempDir()
	cmd.Env = append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST=")
	cmd.Stdin = r
	out, err := cmd.Output()
	r.Close()
	if err != nil || !strings.Contains(string(out), "Done.") {
		t.Fatalf("%v %q", err, out)
	}
	msgs := fakeollama.MessagesOf(f.ChatRequests()[0])
	for _, m := range msgs {
		if strings.Contains(fmt.Sprint(m["content"]), "piped input") {
			t.Fatal("an empty piped context was added")
		}
	}
}

// Small first-run expectations: -p "" is a usage error; a bare exit or
// quit in the REPL leaves instead of going to the model.
func TestEndToEndSmallExpectations(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir := t.TempDir()
	if _, errOut, code := Run(t, bin, dir, "", "-p", ""); code != 2 || !strings.Contains(errOut, "-p needs a prompt") {
		t.Fatalf("-p \"\": %d %q", code, errOut)
	}
	out, errOut, code := Run(t, bin, dir, "/files\nquit\n/files\n", "--ollama", "http://127.0.0.1:1")
	if code != 0 || strings.Count(out, "(empty directory)") != 1 {
		t.Fatalf("quit: %d %q %q", code, out, errOut)
	}
	// A bare y with nothing asking for it is not sent to the model; after
	// a reply that asks a question, it is.
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.TextReply("llama3.2", "Shall I add the test?"), fakeollama.TextReply("llama3.2", "Added."))
	_, errOut, _ = Run(t, bin, dir, "y\nadd a test for Parse\ny\n/exit\n", "--ollama", f.URL())
	if !strings.Contains(errOut, "nothing is waiting for a y/n answer") || len(f.ChatRequests()) != 2 {
		t.Fatalf("bare y: %d requests, stderr %q", len(f.ChatRequests()), errOut)
	}
}

// Papercuts: a bad flag is one line; !nosuchcmd says so once; agents/
// ignored through .git/info/exclude is not warned about.
func TestEndToEndPapercuts(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir := t.TempDir()
	if _, errOut, code := Run(t, bin, dir, "", "--bogus"); code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "harvey --help") {
		t.Fatalf("bad flag: %d %q", code, errOut)
	}
	out, errOut, _ := Run(t, bin, dir, "!nosuchcmd\n/exit\n", "--ollama", "http://127.0.0.1:1")
	if n := strings.Count(out+errOut, "nosuchcmd: command not found"); n != 1 {
		t.Fatalf("said %d times: %q %q", n, out, errOut)
	}
	if g := exec.Command("git", "init", "-q", dir); g.Run() != nil {
		os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755)
	}
	os.RemoveAll(filepath.Join(dir, "agents")) // as a new user's project has it: no agents/ yet
	os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("/agents/\n"), 0o644)
	if _, errOut, _ := Run(t, bin, dir, "/exit\n", "--ollama", "http://127.0.0.1:1"); strings.Contains(errOut, "is not in .gitignore") {
		t.Fatalf("warned although git ignores agents/: %q", errOut)
	}
	os.Remove(filepath.Join(dir, ".git", "info", "exclude"))
	data := []string{"XDG_DATA_HOME=" + t.TempDir()}
	// agents/ as Harvey made it ignores itself (issue 55): no line, and a
	// git project's status stays clean.
	if _, errOut, _ := RunEnv(t, bin, dir, "/exit\n", data, "--ollama", "http://127.0.0.1:1"); strings.Contains(errOut, "is not in .gitignore") {
		t.Fatalf("warned about the agents/ Harvey made, which ignores itself: %q", errOut)
	}
	if _, err := exec.LookPath("git"); err == nil {
		g := exec.Command("git", "status", "--short")
		g.Dir = dir
		if out, err := g.Output(); err != nil || strings.TrimSpace(string(out)) != "" {
			t.Errorf("git status after the first run: %q %v", out, err)
		}
	}
	// An agents/ from before (or a repository's) that git does not ignore:
	// said, once.
	os.Remove(filepath.Join(dir, "agents", ".gitignore"))
	if _, errOut, _ := RunEnv(t, bin, dir, "/exit\n", data, "--ollama", "http://127.0.0.1:1"); !strings.Contains(errOut, "is not in .gitignore") {
		t.Fatalf("no warning without an ignore rule: %q", errOut)
	}
	// Said once for a workspace, not at every start (issue 49).
	if _, errOut, _ := RunEnv(t, bin, dir, "", data, "-p", "/status", "--ollama", "http://127.0.0.1:1"); strings.Contains(errOut, "is not in .gitignore") {
		t.Fatalf("warned again: %q", errOut)
	}
	// A headless write without --yes: refused with the reason (not "by the
	// user": nobody was asked), said on stderr, and exit status 3.
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "x.txt", "content": "x\n"}}),
		fakeollama.TextReply("llama3.2", "I could not write it."),
	)
	_, errOut, code := Run(t, bin, dir, "", "-p", "write x", "--ollama", f.URL())
	if code != 3 || !strings.Contains(errOut, "1 action not approved") || !strings.Contains(errOut, "--yes") {
		t.Fatalf("headless refusal: %d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
		t.Fatal("written without approval")
	}
	m := fakeollama.MessagesOf(f.ChatRequests()[1])
	if c := m[len(m)-1]["content"].(string); strings.Contains(c, "by the user") || !strings.Contains(c, "headless") {
		t.Fatalf("the model was told %q", c)
	}
}

// /status says in words what it could not learn (issue 55): a server with
// no /api/ps is no raw Go error.
func TestStatusWithoutAPIPS(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	f.NoPS = true
	out, errOut, code := Run(t, bin, t.TempDir(), "", "-p", "/status", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out+errOut, "unknown: this server does not say which models it holds in memory") || strings.Contains(out+errOut, "404 page not found") {
		t.Errorf("exit %d:\n%s\n%s", code, out, errOut)
	}
}

// --run exits non-zero when a step fails (issue 62): a !command that exits
// 1 fails the run, which still runs the steps after it and names the step;
// the REPL says a failed command's status once, not again as an error.
func TestRunScriptStepFails(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir := t.TempDir()
	WriteFile(t, dir, "steps.txt", "!echo first\n!false\n!echo after\n")
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}
	out, errOut, code := RunEnv(t, bin, dir, "", env, "--run", "steps.txt", "--ollama", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(out+errOut, "after") || !strings.Contains(errOut, "harvey: false: [exit 1]") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	WriteFile(t, dir, "ok.txt", "!echo fine\n")
	if _, errOut, code := RunEnv(t, bin, dir, "", env, "--run", "ok.txt", "--ollama", "http://127.0.0.1:1"); code != 0 {
		t.Fatalf("a run whose steps pass: exit %d: %s", code, errOut)
	}
	out, errOut, _ = RunEnv(t, bin, dir, "!false\n/exit\n", env, "--ollama", "http://127.0.0.1:1")
	if strings.Count(out+errOut, "[exit 1]") != 1 {
		t.Errorf("the REPL said the failure %d times:\n%s\n%s", strings.Count(out+errOut, "[exit 1]"), out, errOut)
	}
}
