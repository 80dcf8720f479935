package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// harvey hooks import, as a new user runs it: Claude Code's hooks are
// listed with where each goes (yours, or this project's), an event with no
// counterpart is named as left out, --all adds them once (a second import
// says they are there already), and harvey hooks lists yours in the order
// they run.
func TestCommandImportsClaudeHooks(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Chdir(dir)
	write := func(p, body string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	write(filepath.Join(home, ".claude", "settings.json"), `{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/.claude/guard.sh"}]}],
		"Notification": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`)
	write(filepath.Join(dir, ".claude", "settings.json"), `{"hooks": {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "npx prettier --write ."}]}]}}`)
	run := func(args ...string) (string, string, int) {
		var out, errOut strings.Builder
		code := Command(args, &out, &errOut)
		return out.String(), errOut.String(), code
	}
	if out, _, code := run("list"); code != 0 || !strings.Contains(out, "no hooks in your config") {
		t.Fatalf("list before: %d %q", code, out)
	}
	out, errOut, code := run("import")
	if code != 0 || !strings.Contains(out, "1. ") || !strings.Contains(out, "guard.sh") || !strings.Contains(out, "prettier") ||
		!strings.Contains(out, "Notification") || !strings.Contains(out, "harvey hooks import N") {
		t.Fatalf("import lists: %d %q %q", code, out, errOut)
	}
	if out, errOut, code = run("import", "--all"); code != 0 || !strings.Contains(out, "added 1 hook to") || !strings.Contains(out, "this workspace's") {
		t.Fatalf("import --all: %d %q %q", code, out, errOut)
	}
	if out, _, _ = run("import", "--all"); !strings.Contains(out, "already imported") {
		t.Errorf("a second import: %q", out)
	}
	if out, _, code = run("list"); code != 0 || !strings.Contains(out, "1. ") || !strings.Contains(out, "guard.sh") {
		t.Errorf("list after: %d %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "agents", "harvey.yaml")); !strings.Contains(string(b), "prettier") {
		t.Errorf("the project's hook is not in the workspace's config:\n%s", b)
	}
	if _, _, code = run("import", "9"); code != 1 {
		t.Errorf("a hook number that is not there: exit %d", code)
	}
	if _, _, code = run("bogus"); code != 2 {
		t.Errorf("bad usage: exit %d", code)
	}
}
