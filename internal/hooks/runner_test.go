package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// scriptHost runs each hook as its command's first word says, and keeps
// what the session would show, emit and audit, and each hook's stdin.
type scriptHost struct {
	mu      sync.Mutex
	answers map[string]runner.Result // by the hook's first word
	stdin   map[string][]map[string]any
	said    []string
	audited []string
}

func newScriptHost() *scriptHost {
	return &scriptHost{answers: map[string]runner.Result{}, stdin: map[string][]map[string]any{}}
}

func (h *scriptHost) run(hc config.HookConfig, stdin string) (runner.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var in map[string]any
	json.Unmarshal([]byte(stdin), &in)
	h.stdin[hc.Command[0]] = append(h.stdin[hc.Command[0]], in)
	return h.answers[hc.Command[0]], nil
}
func (h *scriptHost) RunHook(_ context.Context, hc config.HookConfig, stdin string, _ []string, _ string) (runner.Result, error) {
	return h.run(hc, stdin)
}
func (h *scriptHost) Audit(action, detail string, _ error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.audited = append(h.audited, action+": "+detail)
}
func (h *scriptHost) Summary(tool string, _ map[string]any) string { return tool }
func (h *scriptHost) Say(_ termtext.Tone, line string) {
	h.mu.Lock()
	h.said = append(h.said, line)
	h.mu.Unlock()
}
func (h *scriptHost) Emit(map[string]any) {}

func hook(event, match, prog string, extra ...func(*config.HookConfig)) config.HookConfig {
	h := config.HookConfig{Event: event, Match: match, Command: config.HookArgv{prog}}
	for _, f := range extra {
		f(&h)
	}
	return h
}

func answer(s string) runner.Result { return runner.Result{Output: []byte(s)} }

var schema = map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []any{"command"}}

// Around a call: a pre_tool hook blocks (exit 2, its stderr the reason),
// changes the arguments (which must fit the tool), or adds context; a
// failing one blocks unless on_error: allow; a post_tool hook amends the
// result, notes something (exit 2) or adds context; each firing said and
// audited; the hook reads Claude Code's tool_input.
func TestRunnerAroundACall(t *testing.T) {
	h := newScriptHost()
	h.answers["guard"] = runner.Result{ExitCode: 2, Stderr: []byte("no rm here")}
	h.answers["rewrite"] = answer(`{"hookSpecificOutput":{"updatedInput":{"command":"ls -la"},"additionalContext":"use -la"}}`)
	h.answers["badshape"] = answer(`{"modify":{"nope":1}}`)
	h.answers["broken"] = runner.Result{ExitCode: 1, Stderr: []byte("oops")}
	h.answers["amend"] = answer(`{"amend":"shorter"}`)
	h.answers["note"] = runner.Result{ExitCode: 2, Stderr: []byte("look at the tests too")}
	r := New([]config.HookConfig{
		hook(config.HookPre, "run_command", "guard", func(c *config.HookConfig) { c.When = []config.HookWhen{{Field: "command", Contains: "rm "}} }),
		hook(config.HookPre, "run_command", "rewrite"),
		hook(config.HookPost, "run_command", "amend", func(c *config.HookConfig) { c.When = []config.HookWhen{{Field: "command", Equals: "ls -la"}} }),
		hook(config.HookPost, "read_file", "note"),
		hook(config.HookPre, "write_file", "broken", func(c *config.HookConfig) { c.OnError = "allow" }),
		hook(config.HookPre, "edit_file", "broken"),
		hook(config.HookPre, "search_files", "badshape"),
	}, h, "/ws", "test")
	ctx := t.Context()
	_, _, err := r.Pre(ctx, "run_command", "c1", schema, map[string]any{"command": "rm -rf /"})
	if !errors.Is(err, refusal.ErrDenied) || !strings.Contains(err.Error(), "no rm here") {
		t.Fatalf("blocked: %v", err)
	}
	args, added, err := r.Pre(ctx, "run_command", "c2", schema, map[string]any{"command": "ls"})
	if err != nil || args["command"] != "ls -la" || added != "use -la" {
		t.Fatalf("rewritten: %v %q %v", args, added, err)
	}
	if in := h.stdin["rewrite"][0]; in["tool_name"] != "Bash" || in["tool_input"].(map[string]any)["command"] != "ls" {
		t.Errorf("the hook's input: %v", in)
	}
	if _, _, err := r.Pre(ctx, "write_file", "c3", schema, map[string]any{"command": "x"}); err != nil {
		t.Errorf("on_error: allow blocked: %v", err)
	}
	if _, _, err := r.Pre(ctx, "edit_file", "c4", schema, map[string]any{"command": "x"}); err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("a failing pre_tool hook: %v", err)
	}
	if _, _, err := r.Pre(ctx, "search_files", "c5", schema, map[string]any{"command": "x"}); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("arguments that do not fit: %v", err)
	}
	out, err := r.Post(ctx, "run_command", "c2", args, Outcome{Text: "a long listing"}, nil)
	if err != nil || out.Text != "shorter" {
		t.Errorf("amended: %+v %v", out, err)
	}
	out, err = r.Post(ctx, "read_file", "c6", map[string]any{"path": "a.go"}, Outcome{Text: "package a"}, nil)
	if err != nil || !strings.Contains(out.Text, "look at the tests too") {
		t.Errorf("noted: %+v %v", out, err)
	}
	if !r.ReadsStreams("run_command", args) || r.ReadsStreams("run_command", map[string]any{"command": "pwd"}) {
		t.Error("ReadsStreams")
	}
	if n, ran, fired := r.Counts(); n != 7 || ran < 6 || fired < 5 {
		t.Errorf("counts %d %d %d", n, ran, fired)
	}
	if d := r.Describe(); !strings.Contains(d, "1. pre_tool run_command: guard") || !strings.Contains(d, `when command contains "rm "`) {
		t.Errorf("Describe:\n%s", d)
	}
	if len(h.audited) < 5 || len(h.said) < 5 {
		t.Errorf("said %v, audited %v", h.said, h.audited)
	}
	var none *Runner
	if a, _, err := none.Pre(ctx, "x", "", nil, map[string]any{"k": 1}); err != nil || a["k"] != 1 || none.Describe() == "" {
		t.Error("no hooks")
	}
	if _, err := WithContext(Outcome{}, errors.New("failed"), "ctx"); err == nil || !strings.Contains(err.Error(), "[context from your hooks: ctx]") {
		t.Errorf("WithContext on an error: %v", err)
	}
}

// The conversation's events: session_start's context waits for the first
// prompt, user_prompt may add context or stop the prompt, stop sends the
// model on once.
func TestRunnerConversationEvents(t *testing.T) {
	h := newScriptHost()
	h.answers["start"] = answer(`{"hookSpecificOutput":{"additionalContext":"branch main"}}`)
	h.answers["prompt"] = answer(`{"context":"today is Friday"}`)
	h.answers["stop"] = answer(`{"decision":"block","reason":"run the tests first"}`)
	h.answers["sub"] = answer("")
	r := New([]config.HookConfig{
		hook(config.HookSessionStart, "", "start"), hook(config.HookPrompt, "", "prompt"),
		hook(config.HookStop, "", "stop"), hook(config.HookSubagentStop, "", "sub"),
	}, h, "/ws", "test")
	ctx := t.Context()
	r.SessionStart(ctx, "startup")
	added, err := r.Prompt(ctx, "fix the bug")
	if err != nil || !strings.Contains(added, "branch main") || !strings.Contains(added, "today is Friday") {
		t.Fatalf("the first prompt: %q %v", added, err)
	}
	if added, _ := r.Prompt(ctx, "again"); strings.Contains(added, "branch main") {
		t.Errorf("session_start's context came twice: %q", added)
	}
	if in := h.stdin["prompt"][0]; in["prompt"] != "fix the bug" || in["hook_event_name"] != "UserPromptSubmit" {
		t.Errorf("the prompt hook's input: %v", in)
	}
	if why, again := r.Stop(ctx, "Done.", false); !again || why != "run the tests first" {
		t.Errorf("stop: %q %v", why, again)
	}
	if _, again := r.SubagentStop(ctx, "find x", "found", false); again {
		t.Error("an empty answer sent the sub-agent on")
	}
	h.answers["prompt"] = runner.Result{ExitCode: 2, Stderr: []byte("no secrets in prompts")}
	if _, err := r.Prompt(ctx, "my password is x"); err == nil || !strings.Contains(err.Error(), "no secrets in prompts") {
		t.Errorf("a blocked prompt: %v", err)
	}
}
