package harvey

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	anyllm "github.com/mozilla-ai/any-llm-go"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

const asyncToolFile = "---\nparameters:\n  n: {type: string, required: true}\ncommand: [sh, -c, 'sleep 1; echo RESULT-$1', sh, \"{{n}}\"]\neffect: read\nasync: true\n---\nA slow check.\n"

// Async tools (issue 63): a call of a tool with async: true returns its
// task id at once and the conversation goes on; the result arrives in the
// next turn's message (once), or by task_wait in the same reply, in call
// order. task_status and task_wait are offered only beside an async tool.
func TestAsyncToolGoesOn(t *testing.T) {
	e2e.RequireSandbox(t)
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	t.Cleanup(env.a.Close)
	if slices.ContainsFunc(env.a.toolsFor("llama3.2", 0), func(x anyllm.Tool) bool { return x.Function.Name == "task_wait" }) {
		t.Fatal("task tools offered with no async tool")
	}
	writeTool(t, env, "slowcheck", asyncToolFile)

	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c1", Name: "slowcheck", Args: map[string]any{"n": "7"}}), fakeollama.TextReply("llama3.2", "started it"))
	start := time.Now()
	if err := env.a.RunPrompt(t.Context(), "check"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	reqs := f.ChatRequests()
	if names := fakeollama.ToolNamesOf(reqs[0]); !slices.Contains(names, "task_wait") || !slices.Contains(names, "task_status") {
		t.Errorf("task tools not offered beside an async tool: %v", names)
	}
	res := fakeollama.ToolResults(reqs)["c1"]
	if !strings.Contains(res, "started task 1") || strings.Contains(res, "RESULT-7") {
		t.Fatalf("the call waited for its result (%v): %q", took, res)
	}
	if env.a.gate.tasks.Running() != 1 {
		t.Fatalf("the task should still run after the turn (%v)", took)
	}
	tk, _ := env.a.gate.tasks.Get(1)
	if !tk.Wait(t.Context(), 30*time.Second) {
		t.Fatal("the task did not end")
	}

	f.Script(fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "next"); err != nil {
		t.Fatal(err)
	}
	m := fakeollama.MessagesOf(f.ChatRequests()[2])
	last := m[len(m)-1]["content"].(string)
	if !strings.Contains(last, "[a background task ended: task 1 (slowcheck) done in") || !strings.Contains(last, "RESULT-7") || !strings.HasSuffix(last, "next") {
		t.Errorf("the next turn's message lacks the result: %q", last)
	}
	f.Script(fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "again"); err != nil {
		t.Fatal(err)
	}
	m = fakeollama.MessagesOf(f.ChatRequests()[3])
	if last := m[len(m)-1]["content"].(string); last != "again" {
		t.Errorf("a result told twice: %q", last)
	}

	// Started and waited for in one reply: task_wait reads it, in order.
	f.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "s", Name: "slowcheck", Args: map[string]any{"n": "8"}},
		fakeollama.Call{ID: "w", Name: "task_wait", Args: map[string]any{"id": 2, "timeout": 30}},
		fakeollama.Call{ID: "st", Name: "task_status", Args: map[string]any{"id": 2}}), fakeollama.TextReply("llama3.2", "done"))
	if err := env.a.RunPrompt(t.Context(), "check and wait"); err != nil {
		t.Fatal(err)
	}
	got := fakeollama.ToolResults(f.ChatRequests())
	if !strings.Contains(got["s"], "started task 2") || !strings.Contains(got["w"], "task 2 (slowcheck) done in") || !strings.Contains(got["w"], "RESULT-8") || !strings.Contains(got["st"], "RESULT-8") {
		t.Errorf("start %q, wait %q, status %q", got["s"], got["w"], got["st"])
	}
	f.Script(fakeollama.TextReply("llama3.2", "ok"))
	env.a.RunPrompt(t.Context(), "last")
	m = fakeollama.MessagesOf(f.ChatRequests()[len(f.ChatRequests())-1])
	if last := m[len(m)-1]["content"].(string); last != "last" {
		t.Errorf("a result the model waited for was told again: %q", last)
	}
	var buf strings.Builder
	if err := cmdTasks(t.Context(), env.a, nil, &buf); err != nil || !strings.Contains(buf.String(), "1  done in") || !strings.Contains(buf.String(), "slowcheck: sh -c") {
		t.Errorf("/tasks: %v %q", err, buf.String())
	}
	var log strings.Builder
	env.a.Audit.Print(&log, 50)
	if !strings.Contains(log.String(), "task") || !strings.Contains(log.String(), "1: slowcheck: sh -c") {
		t.Errorf("the audit log has no task: %s", log.String())
	}
}

// A task left running ends with the session: after Close nothing it
// started runs on (the file it would write later never appears), and an
// async tool that changes things asks first, saying it keeps running.
func TestAsyncTaskEndsWithTheSession(t *testing.T) {
	e2e.RequireSandbox(t)
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	var asked []string
	env.a.approvals.observe = func(r approvalRequest, _ bool, _ string) { asked = append(asked, r.action) }
	writeTool(t, env, "later", "---\ncommand: [sh, -c, 'sleep 2; echo late > late.txt']\neffect: write\nasync: true\n---\nWrites later.\n")
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c1", Name: "later", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "started"))
	if err := env.a.RunPrompt(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "in the background") {
		t.Errorf("the approval did not say it keeps running: %q", asked)
	}
	if env.a.gate.tasks.Running() != 1 {
		t.Fatal("no task runs")
	}
	env.a.Close()
	if env.a.gate.tasks.Running() != 0 {
		t.Fatal("a task outlived Close")
	}
	time.Sleep(3 * time.Second)
	if _, err := os.Stat(filepath.Join(env.dir, "late.txt")); err == nil {
		t.Fatal("the task's program went on after the session ended")
	}
	tk, _ := env.a.gate.tasks.Get(1)
	if !strings.HasPrefix(tk.State(), "stopped") {
		t.Errorf("state %q", tk.State())
	}
}

// A task keeps the tool's timeout: its program is stopped at it, and the
// result says so.
func TestAsyncTaskKeepsItsTimeout(t *testing.T) {
	e2e.RequireSandbox(t)
	env := newTestEnv(t, nil, "")
	t.Cleanup(env.a.Close)
	writeTool(t, env, "stuck", "---\ncommand: [sleep, '20']\ntimeout: 1s\neffect: read\nasync: true\n---\nHangs.\n")
	out, err := callTool(t, env, "stuck", map[string]any{})
	if err != nil || !strings.Contains(out, "started task 1") {
		t.Fatalf("%q %v", out, err)
	}
	tk, _ := env.a.gate.tasks.Get(1)
	if !tk.Wait(t.Context(), 10*time.Second) {
		t.Fatal("the task ran past its timeout")
	}
	if r := tk.Report(); !strings.Contains(r, "timed out") {
		t.Errorf("the result does not say it timed out: %q", r)
	}
}
