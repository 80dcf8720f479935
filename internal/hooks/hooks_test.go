package hooks

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harvey-agent/harvey/internal/config"
)

// What a hook answers, read as Harvey's answers and Claude Code's.
func TestParseHookAnswer(t *testing.T) {
	args := map[string]any{"path": "a.go", "old_text": "x", "new_text": "y"}
	for _, c := range []struct {
		out   string
		block bool
		want  map[string]any
		bad   bool
	}{
		{out: ""},
		{out: `{"decision": "allow"}`},
		{out: `{"decision": "block", "reason": "no"}`, block: true},
		{out: `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}`, block: true},
		{out: `{"continue": false, "stopReason": "stop"}`, block: true},
		{out: `{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"file_path": "/ws/b.go", "old_string": "x", "new_string": "z"}}}`,
			want: map[string]any{"path": "b.go", "old_text": "x", "new_text": "z"}},
		{out: `{"modify": {"path": "c.go", "old_text": "x", "new_text": "y"}}`, want: map[string]any{"path": "c.go", "old_text": "x", "new_text": "y"}},
		{out: `not json`, bad: true},
		{out: `{"decision": "perhaps"}`, bad: true},
	} {
		a, err := parseHookAnswer([]byte(c.out), "edit_file", args, "/ws")
		if (err != nil) != c.bad || a.block != c.block {
			t.Errorf("%s: %+v %v", c.out, a, err)
		}
		if c.want != nil && fmt.Sprint(a.modify) != fmt.Sprint(c.want) {
			t.Errorf("%s: modify %v, want %v", c.out, a.modify, c.want)
		}
	}
}

// Which hooks fire: Harvey's names and Claude Code's, MCP tools, when:.
func TestHookApplies(t *testing.T) {
	cmd := map[string]any{"command": "git push origin main"}
	in := claudeInput("run_command", cmd, "/ws")
	for _, c := range []struct {
		h    config.HookConfig
		tool string
		want bool
	}{
		{config.HookConfig{Event: config.HookPre}, "run_command", true},
		{config.HookConfig{Event: config.HookPost}, "run_command", false},
		{config.HookConfig{Event: config.HookPre, Match: "Bash"}, "run_command", true},
		{config.HookConfig{Event: config.HookPre, Match: "Edit|Write"}, "run_command", false},
		{config.HookConfig{Event: config.HookPre, Match: "run"}, "run_command", false}, // matched whole
		{config.HookConfig{Event: config.HookPre, Match: "mcp__.*"}, "fs__read", true},
		{config.HookConfig{Event: config.HookPre, When: []config.HookWhen{{Field: "command", Contains: "git push"}}}, "run_command", true},
		{config.HookConfig{Event: config.HookPre, When: []config.HookWhen{{Field: "command", Matches: `^git\s+push`}}}, "run_command", true},
		{config.HookConfig{Event: config.HookPre, When: []config.HookWhen{{Field: "command", Equals: "git push"}}}, "run_command", false},
		{config.HookConfig{Event: config.HookPre, When: []config.HookWhen{{Field: "file_path", Contains: "x"}}}, "run_command", false},
	} {
		args := cmd
		if c.tool == "fs__read" {
			args = map[string]any{}
		}
		if got := hookApplies(c.h, config.HookPre, c.tool, args, in); got != c.want {
			t.Errorf("%+v on %s: %v", c.h, c.tool, got)
		}
	}
	hs := Sort([]config.HookConfig{{Priority: 2, Match: "b"}, {Priority: 1, Match: "a"}, {Priority: 2, Match: "c"}})
	if hs[0].Match != "a" || hs[1].Match != "b" || hs[2].Match != "c" {
		t.Errorf("order: %v", hs)
	}
}

// A Claude Code settings file's hooks become Harvey's.
func TestClaudeHooksImport(t *testing.T) {
	settings := `{"hooks": {
	  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/.claude/block-rm.sh", "timeout": 5}]}],
	  "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "jq -r .tool_input.file_path | xargs gofmt -w"}]}],
	  "Stop": [{"matcher": "*", "hooks": [{"type": "command", "command": "say done"}]}],
	  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}],
	  "SubagentStop": [{"matcher": "*", "hooks": [{"type": "command", "command": "check-answer"}]}],
	  "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]}}`
	hs, left, err := Import([]byte(settings))
	if err != nil || len(hs) != 5 || len(left) != 1 || !strings.Contains(left[0], "Notification") {
		t.Fatalf("%+v %v %v", hs, left, err)
	}
	if sub := hs[3]; sub.Event != config.HookSubagentStop || sub.Match != "" || sub.Check() != nil {
		t.Fatalf("SubagentStop: %+v", sub)
	}
	hs = slices.Delete(hs, 3, 4)
	if hs[1].Event != config.HookPre || hs[1].Match != "Bash" || hs[1].TimeLimit().Seconds() != 5 || hs[1].OnError != "allow" || hs[0].Event != config.HookPost {
		t.Fatalf("%+v", hs)
	}
	if hs[2].Event != config.HookStop || hs[2].Match != "" || hs[3].Event != config.HookPrompt || hs[2].Check() != nil {
		t.Fatalf("%+v", hs[2:])
	}
}

// What a conversation hook answers: plain text is context, JSON may
// block or add context; a stop hook's plain text is ignored.
func TestParseEventAnswer(t *testing.T) {
	for _, c := range []struct {
		out, event, context string
		block, bad          bool
	}{
		{out: "", event: config.HookPrompt},
		{out: "branch: main\n", event: config.HookSessionStart, context: "branch: main"},
		{out: "done", event: config.HookStop},
		{out: `{"decision": "block", "reason": "no"}`, event: config.HookPrompt, block: true},
		{out: `{"decision": "block", "reason": "go on"}`, event: config.HookStop, block: true},
		{out: `{"continue": false, "stopReason": "x"}`, event: config.HookPrompt, block: true},
		{out: `{"continue": false}`, event: config.HookStop},
		{out: `{"hookSpecificOutput": {"additionalContext": "ctx"}}`, event: config.HookPrompt, context: "ctx"},
		{out: `{"context": "mine"}`, event: config.HookSessionStart, context: "mine"},
		{out: `{"decision": "maybe"}`, event: config.HookPrompt, bad: true},
		{out: `{not json`, event: config.HookPrompt, bad: true},
	} {
		a, err := parseEventAnswer([]byte(c.out), c.event)
		got := ""
		if a.amend != nil {
			got = *a.amend
		}
		if (err != nil) != c.bad || a.block != c.block || got != c.context {
			t.Errorf("%s %q: %+v %q %v", c.event, c.out, a, got, err)
		}
	}
	for _, h := range []config.HookConfig{{Event: config.HookPrompt, Match: "Bash", Command: config.HookArgv{"x"}}, {Event: config.HookStop, OnError: "block", Command: config.HookArgv{"x"}},
		{Event: config.HookSessionStart, OnError: "block", Command: config.HookArgv{"x"}}, {Event: "PreToolUse", Command: config.HookArgv{"x"}}} {
		if h.Check() == nil {
			t.Errorf("%+v accepted", h)
		}
	}
	if s := clipContext(strings.Repeat("é", hookContextMax)); len(s) > hookContextMax+100 || !strings.Contains(s, "past their budget") || !utf8.ValidString(s) {
		t.Errorf("clip: %d bytes", len(s))
	}
}

// A hook found in your own Claude settings still belongs to the project
// when its command runs a project's script, however it is spelled; one
// that runs your own programs on the call's fields does not.
func TestProjectHookBySpelling(t *testing.T) {
	home := "/home/u/.claude/settings.json"
	for cmd, want := range map[string]bool{
		"./scripts/check.sh":                           true,
		"bash .claude/hooks/guard.sh":                  true,
		`"$PWD"/hooks/fmt.sh --all`:                    true,
		"$(pwd)/tools/x":                               true,
		"cd web && npm test; ../bin/notify":            true,
		"python3 tools/lint.py":                        true,
		".claude/hooks/log.sh":                         true,
		`"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`:     true,
		"jq -r .tool_input.file_path | xargs gofmt -w": false,
		`sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p'`:  false,
		"~/.claude/hooks/log.sh":                       false,
		"/usr/local/bin/guard --strict":                false,
		`echo "blocked: a/b" >&2; exit 2`:              false,
	} {
		if got := ProjectHook(home, cmd); got != want {
			t.Errorf("%q: project %v, want %v", cmd, got, want)
		}
	}
	if !ProjectHook(".claude/settings.json", "echo hi") {
		t.Error("a hook from the workspace's own settings is the project's")
	}
}

// A background command reaches hooks as Claude Code's Bash does
// (run_in_background in tool_input), and a plain one without it.
func TestClaudeInputBackground(t *testing.T) {
	in := claudeInput("run_command", map[string]any{"command": "npm run dev", "background": true}, "/ws")
	if in["run_in_background"] != true || in["command"] != "npm run dev" {
		t.Errorf("background: %v", in)
	}
	if _, ok := claudeInput("run_command", map[string]any{"command": "ls"}, "/ws")["run_in_background"]; ok {
		t.Error("a plain command says run_in_background")
	}
}
