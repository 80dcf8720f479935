package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// A hook's view of the home: ~/.claude and ~/.config, less what the
// denylist names (gh's hosts file, a key) and Harvey's own data; a link
// into ~/.ssh is not followed into it; a script the command names brings
// its directory; nothing else of the home.
func TestHookHomeView(t *testing.T) {
	home := t.TempDir()
	for _, f := range []string{".claude/hooks/guard.sh", ".claude/settings.json", ".config/app/settings.json", ".config/gh/hosts.yml",
		".config/gh/config.yml", ".config/deep/a/b/c/d/e.txt", ".ssh/id_ed25519", "bin/tool.sh", "Documents/private.txt", ".config/xdg/harvey/mcp-oauth/t.json", ".config/xdg/other/ok.txt"} {
		p := filepath.Join(home, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o600)
	}
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, ".config", "keys"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, ".config", "xdg")) // Harvey's data inside a granted tree
	v := &HookView{Home: home, Argv: []string{"sh", "-c", "~/bin/tool.sh --check"}}
	got := v.readable()
	can := func(f string) bool { return sandbox.Under(filepath.Join(home, f), got) }
	for _, f := range []string{".claude/hooks/guard.sh", ".config/app/settings.json", ".config/gh/config.yml", ".config/deep/a/b/c/d/e.txt", "bin/tool.sh", ".config/xdg/other/ok.txt"} {
		if !can(f) {
			t.Errorf("%s is not readable: %v", f, got)
		}
	}
	for _, f := range []string{".config/gh/hosts.yml", ".ssh/id_ed25519", "Documents/private.txt", ".config/keys/id_ed25519", ".config/xdg/harvey/mcp-oauth/t.json"} {
		if can(f) {
			t.Errorf("%s is readable: %v", f, got)
		}
	}
	if slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, ".ssh") }) {
		t.Errorf("the view holds .ssh: %v", got)
	}
	if w := v.writable(); len(w) != 1 || w[0] != filepath.Join(home, ".claude") {
		t.Errorf("writable: %v", w)
	}
	v.Writable = []string{"~/.local/state/hooks", "~/.ssh", "~"}
	if w := v.writable(); len(w) != 2 || w[1] != filepath.Join(home, ".local/state/hooks") {
		t.Errorf("writable with a list: %v", w)
	}
}
