package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// Hooks as people already wrote them (issue 54), kept in a home the way
// Claude Code users keep them: scripts in ~/.claude/hooks/, a log in
// ~/.claude/, switches and settings in the environment, a project's own
// hooks in its .claude/settings.json naming "$CLAUDE_PROJECT_DIR". Each is
// written here in the shape of a published one (the contract it relies on,
// not its text): Anthropic's bash_command_validator_example.py (exit 2 and
// a reason on stderr), deny_path_guard.py (CLAUDE_DENY_PATHS), the hooks
// guide's logging and file-protection one-liners, a PostToolUse hook that
// reads Bash's tool_response and answers with additionalContext, a
// PreToolUse one that adds context, a Stop hook switched on by
// IS_CLAUDE_STOP_HOOK=1 that reads transcript_path, and a project's
// formatter. Imported with harvey hooks import (twice: kept once), they
// behave as Claude Code's hooks reference says.
func TestEndToEndPublishedHooks(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"jq", "/usr/bin/python3", "gofmt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: the published hooks use it", tool)
		}
	}
	f := newHookFixture(t, "model: llama3.2\n")
	home := t.TempDir()
	claude := filepath.Join(home, ".claude")
	exe := func(dir, name, body string) {
		WriteFile(t, dir, name, body)
		os.Chmod(filepath.Join(dir, name), 0o755)
	}
	// A validator in the shape of bash_command_validator_example.py.
	exe(claude, "hooks/bash_validator.py", `#!/usr/bin/python3
import json, re, sys
data = json.load(sys.stdin)
if data.get("tool_name") != "Bash":
    sys.exit(0)
cmd = data.get("tool_input", {}).get("command", "")
if re.search(r"^grep\b(?!.*\|)", cmd):
    print("• Use 'rg' (ripgrep) instead of 'grep'", file=sys.stderr)
    sys.exit(2)
`)
	// A guard in the shape of deny_path_guard.py: configured by a variable.
	exe(claude, "hooks/deny_paths.py", `#!/usr/bin/python3
import json, os, sys
data = json.load(sys.stdin)
denied = [p for p in os.environ.get("CLAUDE_DENY_PATHS", "").split(":") if p]
cmd = data.get("tool_input", {}).get("command", "")
for d in denied:
    if d in cmd:
        print(f"Blocked: this operation would access '{d}' which is in the deny list.", file=sys.stderr)
        sys.exit(2)
`)
	// A PostToolUse hook that reads Bash's tool_response as Claude Code gives it.
	exe(claude, "hooks/bash_outcome.sh", `#!/bin/sh
jq -c '{stdout: .tool_response.stdout, stderr: .tool_response.stderr, interrupted: .tool_response.interrupted}' >> "$HOME/.claude/outcomes.log"
echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "outcome logged by the team hook"}}'
`)
	// A Stop hook switched on by a variable, reading the transcript.
	exe(claude, "hooks/stop_checks.sh", `#!/bin/sh
[ "${IS_CLAUDE_STOP_HOOK:-}" = "1" ] || exit 0
input=$(cat)
transcript=$(printf '%s' "$input" | jq -r .transcript_path)
grep -c '"tool_use"' "$transcript" > "$HOME/.claude/transcript-tool-uses.txt"
tail -1 "$transcript" | jq -r .type > "$HOME/.claude/transcript-last.txt"
cd "$CLAUDE_PROJECT_DIR" || exit 0
[ "$(printf '%s' "$input" | jq -r .stop_hook_active)" = "true" ] && exit 0
[ -f checked ] || { echo "run the checks first: touch checked" >&2; exit 2; }
`)
	WriteFile(t, claude, "settings.json", `{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/bin/python3 ~/.claude/hooks/bash_validator.py"}]},
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "jq -r '\"\\(.tool_input.command) - \\(.tool_input.description // \"No description\")\"' >> ~/.claude/bash-command-log.txt"}]},
      {"matcher": "Edit|MultiEdit|Write", "hooks": [{"type": "command", "command": "/usr/bin/python3 -c \"import json, sys; data=json.load(sys.stdin); path=data.get('tool_input',{}).get('file_path',''); sys.exit(2 if any(p in path for p in ['.env', 'package-lock.json', '.git/']) else 0)\""}]},
      {"matcher": "Bash|Glob", "hooks": [{"type": "command", "command": "/usr/bin/python3 ~/.claude/hooks/deny_paths.py"}]},
      {"matcher": "Read", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", \"additionalContext\": \"read policy: main.go is generated\"}}'"}]}
    ],
    "PostToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/.claude/hooks/bash_outcome.sh"}]}
    ],
    "Stop": [
      {"hooks": [{"type": "command", "command": "~/.claude/hooks/stop_checks.sh"}]}
    ],
    "Notification": [
      {"hooks": [{"type": "command", "command": "notify-send 'Claude Code' 'Awaiting your input'"}]}
    ]
  }
}`)
	// The project's own hook, as Claude Code's docs recommend writing it.
	exe(f.dir, ".claude/hooks/format.sh", "#!/bin/sh\nf=$(jq -r .tool_input.file_path)\ncase \"$f\" in *.go) gofmt -w \"$f\" ;; esac\n")
	WriteFile(t, f.dir, ".claude/settings.json", `{"hooks": {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/format.sh"}]}]}}`)
	WriteFile(t, f.dir, "secrets/token.txt", "FIXTURE-TOKEN\n")
	WriteFile(t, f.dir, "notes.txt", "hello\n")
	f.env = append(f.env, "HOME="+home, "PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin:"+filepath.Dir(goTool(t)),
		"CLAUDE_DENY_PATHS=secrets", "IS_CLAUDE_STOP_HOOK=1")

	out, errOut, code := RunEnv(t, f.bin, f.dir, "", f.env, "hooks", "import")
	if code != 0 || !strings.Contains(out, "→ your config") || !strings.Contains(out, "→ this workspace's agents/harvey.yaml") || !strings.Contains(out, "not imported: a Notification hook") {
		t.Fatalf("list: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = RunEnv(t, f.bin, f.dir, "", f.env, "hooks", "import", "--all")
	if code != 0 || !strings.Contains(out, "added 7 hooks to") || !strings.Contains(out, "added 1 hook to this workspace's agents/harvey.yaml") {
		t.Fatalf("import: %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "add writable: [PATH]") {
		t.Errorf("the import does not say how your hooks run and how to widen one:\n%s", out)
	}
	userCfg := ReadText(t, filepath.Join(f.cfg, "harvey", "harvey.yaml"))
	if strings.Contains(userCfg, "CLAUDE_PROJECT_DIR") {
		t.Errorf("the project's hook went into your own config:\n%s", userCfg)
	}
	wsCfg := ReadText(t, filepath.Join(f.dir, "agents", "harvey.yaml"))
	out, _, _ = RunEnv(t, f.bin, f.dir, "", f.env, "hooks", "import", "--all")
	if !strings.Contains(out, "8 hooks already imported") || strings.Contains(out, "added") {
		t.Errorf("a second import: %s", out)
	}
	if ReadText(t, filepath.Join(f.cfg, "harvey", "harvey.yaml")) != userCfg || ReadText(t, filepath.Join(f.dir, "agents", "harvey.yaml")) != wsCfg {
		t.Error("a second import changed the configs")
	}
	f.workspaceHooks(t, wsCfg) // confirmed, as a yes in the REPL does
	// The two whose scripts keep logs beside them in ~/.claude get those
	// files, as the import says (the one-liner's log is its command's
	// redirect: it needs nothing).
	for script, logs := range map[string]string{"bash_outcome.sh": "[~/.claude/outcomes.log]", "stop_checks.sh": "[~/.claude/transcript-tool-uses.txt, ~/.claude/transcript-last.txt]"} {
		line := "command: ~/.claude/hooks/" + script + "\n"
		if !strings.Contains(userCfg, line) {
			t.Fatalf("no %s in your config:\n%s", script, userCfg)
		}
		userCfg = strings.Replace(userCfg, line, line+"      writable: "+logs+"\n", 1)
	}
	WriteFile(t, f.cfg, "harvey/harvey.yaml", userCfg)

	fo := fakeollama.New(t, "llama3.2:latest")
	fo.Script(fakeollama.ToolReply("llama3.2",
		CmdCall("grep", "grep -rn TODO ."),
		CmdCall("ls", "ls"),
		fakeollama.Call{ID: "env", Name: "write_file", Args: map[string]any{"path": ".env", "content": "X=1\n"}},
		fakeollama.Call{ID: "go", Name: "write_file", Args: map[string]any{"path": "main.go", "content": "package main\nfunc  main( ) {}\n"}},
		CmdCall("deny", "cat secrets/token.txt"),
		fakeollama.Call{ID: "read", Name: "read_file", Args: map[string]any{"path": "notes.txt"}},
	), fakeollama.TextReply("llama3.2", "Done."),
		fakeollama.ToolReply("llama3.2", CmdCall("checks", "touch checked")), fakeollama.TextReply("llama3.2", "Checked and done."))
	out, errOut, code = RunEnv(t, f.bin, f.dir, "", f.env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
	if code != 0 || !strings.Contains(out, "Checked and done.") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	res := fakeollama.ToolResults(fo.ChatRequests())
	checks := map[string][]string{
		"grep": {"Use 'rg' (ripgrep)", "blocked by your hook"},
		"ls":   {"notes.txt", "outcome logged by the team hook"},
		"env":  {"blocked by your hook"},
		"deny": {"which is in the deny list"},
		"read": {"hello", "read policy: main.go is generated"},
	}
	for id, wants := range checks {
		for _, w := range wants {
			if !strings.Contains(res[id], w) {
				t.Errorf("%s: want %q in %s", id, w, res[id])
			}
		}
	}
	if strings.Contains(res["deny"], "FIXTURE-TOKEN") {
		t.Error("the deny guard, configured by a variable, did not block")
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".env")); err == nil {
		t.Error("the file-protection hook did not keep .env")
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "main.go")); string(b) != "package main\n\nfunc main() {}\n" {
		t.Errorf("the project's formatter: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(claude, "bash-command-log.txt")); !strings.Contains(string(b), "ls - No description") {
		t.Errorf("the logging one-liner's log in ~/.claude: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(claude, "outcomes.log")); !strings.Contains(string(b), `"stdout":"`) || !strings.Contains(string(b), "notes.txt") || !strings.Contains(string(b), `"interrupted":false`) {
		t.Errorf("Bash's tool_response: %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "checked")); err != nil {
		t.Error("the stop hook, switched on by IS_CLAUDE_STOP_HOOK, did not send the model on")
	}
	if b, _ := os.ReadFile(filepath.Join(claude, "transcript-tool-uses.txt")); strings.TrimSpace(string(b)) == "" || strings.TrimSpace(string(b)) == "0" {
		t.Errorf("the transcript has no tool_use: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(claude, "transcript-last.txt")); strings.TrimSpace(string(b)) != "assistant" {
		t.Errorf("the transcript's last message: %q", b)
	}
	// The project's hook stays in its project: another workspace with the
	// same path in it does not run it.
	other := t.TempDir()
	exe(other, ".claude/hooks/format.sh", "#!/bin/sh\ntouch \"$CLAUDE_PROJECT_DIR/planted-by-the-other-repo\"\n")
	fo2 := fakeollama.New(t, "llama3.2:latest")
	fo2.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "a.go", "content": "package a\n"}}), fakeollama.TextReply("llama3.2", "Done."),
		fakeollama.ToolReply("llama3.2", CmdCall("c", "touch checked")), fakeollama.TextReply("llama3.2", "Done."))
	RunEnv(t, f.bin, other, "", f.env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo2.URL())
	time.Sleep(10 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(other, "planted-by-the-other-repo")); err == nil {
		t.Error("a project's hook imported in one repository ran in another")
	}
}

// goTool is the go command of this machine (its directory holds gofmt).
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go")
	}
	return p
}
