package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// homeWith makes a home holding files (each "x").
func homeWith(t *testing.T, files ...string) string {
	t.Helper()
	home := t.TempDir()
	for _, f := range files {
		p := filepath.Join(home, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o600)
	}
	return home
}

// A hook's view of the home (issue 75): what its command names — its
// script, with the directory that holds it — and what its config lists;
// never ~/.claude or ~/.config whole, a credential the tools' docs name,
// another agent's settings, or Harvey's own data; a link into ~/.ssh is not
// followed into it (in the sandbox it leads to nothing granted).
func TestHookHomeView(t *testing.T) {
	home := homeWith(t, ".claude/hooks/guard.sh", ".claude/hooks/lib.py", ".claude/settings.json", ".claude/CLAUDE.md",
		".claude/.credentials.json", ".claude/projects/other/chat.jsonl", ".claude/outcomes.log",
		".config/app/settings.json", ".config/gh/hosts.yml", ".config/rclone/rclone.conf", ".config/hub",
		".config/glab-cli/config.yml", ".config/nix/nix.conf", ".config/pnpm/rc", ".config/npm/npmrc", ".config/sops/age/keys.txt",
		".config/github-copilot/hosts.json", ".config/doctl/config.yaml", ".codex/config.toml", ".gemini/settings.json",
		".config/harvey/harvey.yaml", ".ssh/id_ed25519", "bin/tool.sh", "Documents/private.txt",
		".config/xdg/harvey/mcp-oauth/t.json", ".config/mytool/rules.json", ".config/mytool/token.json", "creds/.credentials.json")
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "bin", "keys"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, ".config", "xdg")) // Harvey's data inside a listed tree
	v := &HookView{Home: home, Argv: []string{"sh", "-c", "/usr/bin/python3 ~/.claude/hooks/guard.sh && ~/bin/tool.sh --check"},
		Readable: []string{"~/.config/mytool", "~/.config/xdg", "~/creds"}}
	got := v.readable()
	can := func(f string) bool { return sandbox.Under(filepath.Join(home, f), got) }
	for _, f := range []string{".claude/hooks/guard.sh", ".claude/hooks/lib.py", "bin/tool.sh", ".config/mytool/rules.json", ".config/mytool/token.json"} {
		if !can(f) {
			t.Errorf("%s is not readable: %v", f, got)
		}
	}
	for _, f := range []string{".claude/settings.json", ".claude/CLAUDE.md", ".claude/.credentials.json", ".claude/projects/other/chat.jsonl",
		".config/app/settings.json", ".config/gh/hosts.yml", ".config/rclone/rclone.conf", ".config/hub", ".config/glab-cli/config.yml",
		".config/nix/nix.conf", ".config/pnpm/rc", ".config/npm/npmrc", ".config/sops/age/keys.txt", ".config/github-copilot/hosts.json",
		".config/doctl/config.yaml", ".codex/config.toml", ".gemini/settings.json", ".config/harvey/harvey.yaml", ".ssh/id_ed25519",
		"Documents/private.txt", ".config/xdg/harvey/mcp-oauth/t.json", "creds/.credentials.json"} {
		if can(f) {
			t.Errorf("%s is readable: %v", f, got)
		}
	}
	if slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, ".ssh") }) {
		t.Errorf("the view holds .ssh: %v", got)
	}
	if w := v.writable(); len(w) != 0 {
		t.Errorf("writable without a list or a redirect: %v", w)
	}
	v.Writable = []string{"~/.local/state/hooks", "~/.ssh", "~", "~/.claude/settings.json"}
	w := v.writable()
	if !slices.Contains(w, filepath.Join(home, ".local/state/hooks")) || slices.Contains(w, home) || slices.Contains(w, filepath.Join(home, ".ssh")) {
		t.Errorf("writable with a list: %v", w)
	}
	// Your config may give a hook another agent's settings by naming them.
	if !slices.Contains(w, filepath.Join(home, ".claude/settings.json")) {
		t.Errorf("an agent's settings your config lists are not writable: %v", w)
	}
}

// What a hook's command redirects its output to under the home is
// writable — that file alone, made where its directory exists — and brings
// no directory: the guides' logging one-liner works, and ~/.claude's other
// files stay out of sight.
func TestHookViewRedirects(t *testing.T) {
	home := homeWith(t, ".claude/settings.json", ".claude/projects/p/chat.jsonl")
	v := &HookView{Home: home, Argv: []string{"sh", "-c", `jq -r '"\(.tool_input.command) > x"' >> ~/.claude/bash-command-log.txt 2>>"$HOME/.claude/errors.log" >&2; echo >/dev/null`}}
	w := v.writable()
	want := []string{filepath.Join(home, ".claude/bash-command-log.txt"), filepath.Join(home, ".claude/errors.log")}
	if !slices.Equal(w, want) {
		t.Fatalf("writable: %v, want %v", w, want)
	}
	for _, p := range want {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s was not made: %v", p, err)
		}
	}
	if r := v.readable(); sandbox.Under(filepath.Join(home, ".claude/settings.json"), append(r, w...)) || sandbox.Under(filepath.Join(home, ".claude/projects/p/chat.jsonl"), r) {
		t.Errorf("a log's directory came with it: %v", r)
	}
	// A redirect into a credential or another agent's settings is not
	// granted unless it is named as such... it is named: but never a credential.
	v.Argv = []string{"sh", "-c", "cat > ~/.claude/.credentials.json; echo x > ~/.ssh/authorized_keys"}
	if w := v.writable(); len(w) != 0 {
		t.Errorf("a redirect into a credential is writable: %v", w)
	}
}

func TestRedirectTargets(t *testing.T) {
	for line, want := range map[string][]string{
		`a > b`:                     {"b"},
		`a >>b; c 2>> "d e"`:        {"b", "d e"},
		`a &> f >&2 >| g`:           {"f", "g"},
		`echo '> not' "2> no" \> x`: nil,
		`a >'~/x y'`:                {"~/x y"},
	} {
		if got := redirectTargets(line); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", line, got, want)
		}
	}
}
