package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The journal keeps everything the check needs: written before a command,
// it brings back, on its own, what the command changed in .git (a config
// that runs a program, a hook, a file hidden by skip-worktree) and in
// agents/, and is gone once its check is done.
func TestJournalRoundTrip(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(t.TempDir(), "data"))
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	writeFile(t, root, "a.txt", "a\n")
	git("add", "a.txt")
	git("commit", "-qm", "one")
	os.MkdirAll(filepath.Join(root, AgentsDir), 0o700)
	writeFile(t, root, "agents/notes.md", "notes\n")
	config, _ := os.ReadFile(filepath.Join(root, ".git", "config"))

	c := &Guard{git: guardGit(root), agents: recordAgents(root)}
	c.keep(root, "a hostile command")
	if c.journal == "" {
		t.Fatal("no journal was written")
	}
	// The command, and then Harvey gone before its check.
	git("config", "core.fsmonitor", "/tmp/planted")
	writeFile(t, root, ".git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/planted\n")
	git("update-index", "--skip-worktree", "a.txt")
	writeFile(t, root, "agents/notes.md", "planted\n")

	said := Recover(root)
	text := strings.Join(said, "\n")
	for _, want := range []string{"Harvey stopped while a command ran (a hostile command", "config", "hooks", "skip-worktree", "agents/notes.md"} {
		if !strings.Contains(text, want) {
			t.Errorf("the recovery does not say %q:\n%s", want, text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".git", "config")); string(b) != string(config) {
		t.Errorf(".git/config not restored:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(root, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("the planted hook is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "agents", "notes.md")); string(b) != "notes\n" {
		t.Errorf("agents/notes.md: %q", b)
	}
	if _, err := os.Stat(c.journal); err == nil {
		t.Error("the journal is still there after its check")
	}
	if again := Recover(root); len(again) > 0 {
		t.Errorf("a second recovery found something: %v", again)
	}
}
