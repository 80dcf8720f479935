package guard

import (
	"encoding/json"
	"fmt"
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

// A journal names git's index and the larger hooks by their blobs instead
// of holding them (a few kilobytes however large the index); a check from
// it puts a changed index back from its blob; a journal whose blob is
// gone is said and not run half; and the blob directory of a Harvey that
// is gone goes once no journal of it is left.
func TestJournalBlobs(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(t.TempDir(), "data"))
	git := gitIn(t, root)
	git("init", "-q")
	for i := 0; i < 200; i++ {
		writeFile(t, root, fmt.Sprintf("src/file-%03d.txt", i), "x\n")
	}
	git("add", "src")
	index, _ := os.ReadFile(filepath.Join(root, ".git", "index"))
	if len(index) < blobMin {
		t.Fatalf("the index (%d bytes) is smaller than a blob", len(index))
	}
	c := Command(root, "a hostile command")
	b, _ := os.ReadFile(c.journal)
	var j journal
	if err := json.Unmarshal(b, &j); err != nil || j.Git == nil || len(j.Git.Dirs) == 0 {
		t.Fatalf("the journal: %v %s", err, b)
	}
	if d := j.Git.Dirs[0]; len(d.Index) > 0 || d.IndexBlob == "" || len(b) > 16<<10 {
		t.Fatalf("the journal (%d bytes) holds the index (%d bytes; blob %q)", len(b), len(d.Index), d.IndexBlob)
	}
	git("update-index", "--skip-worktree", "src/file-007.txt")
	said := strings.Join(Recover(root), "\n")
	if !strings.Contains(said, "skip-worktree") {
		t.Errorf("the recovery did not put the index back:\n%s", said)
	}
	if out, _ := exec.Command("git", "-C", root, "ls-files", "-v", "src/file-007.txt").Output(); !strings.HasPrefix(string(out), "H ") {
		t.Errorf("the entry is still hidden: %q", out)
	}

	c = Command(root, "another")
	os.RemoveAll(ownBlobDir())
	blobs.Lock()
	clear(blobs.size)
	blobs.Unlock()
	said = strings.Join(Recover(root), "\n")
	if !strings.Contains(said, "could not be run") {
		t.Errorf("a journal whose blob is gone: %q", said)
	}
	c.Forget()

	// A Harvey that is gone: its blobs stay while a journal of it is
	// left, and go with the last.
	dir := journalDir()
	gone := filepath.Join(dir, "999999999-12345.blobs")
	os.MkdirAll(gone, 0o700)
	os.WriteFile(filepath.Join(dir, "key-999999999-1.journal"), []byte("{"), 0o600)
	sweepBlobs(dir)
	if _, err := os.Stat(gone); err != nil {
		t.Error("blobs a journal may name were removed")
	}
	os.Remove(filepath.Join(dir, "key-999999999-1.journal"))
	sweepBlobs(dir)
	if _, err := os.Stat(gone); err == nil {
		t.Error("the blobs of a Harvey that is gone are still there")
	}
}

// The index a snapshot read is taken again, unread, while its stamp is
// the same, and read anew once the index is written (a hidden entry a
// later command sets is then seen as the check's change, not as the
// state before it).
func TestIndexMemo(t *testing.T) {
	racy := racyWindow
	racyWindow = 0
	defer func() { racyWindow = racy }()
	root := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(t.TempDir(), "data"))
	git := gitIn(t, root)
	git("init", "-q")
	writeFile(t, root, "a.txt", "a\n")
	git("add", "a.txt")
	first := Command(root, "one")
	first.Check()
	second := Command(root, "two")
	d1, d2 := first.git.dirs[0], second.git.dirs[0]
	if len(d1.index) == 0 || &d1.index[0] != &d2.index[0] {
		t.Error("the unchanged index was read again")
	}
	second.Check()
	git("update-index", "--skip-worktree", "a.txt")
	third := Command(root, "three")
	if d3 := third.git.dirs[0]; len(d3.hidden) != 1 || &d3.index[0] == &d1.index[0] {
		t.Errorf("the written index was taken from before: hidden %v", d3.hidden)
	}
	third.Check()
}

// gitIn runs git in root, failing the test when it fails.
func gitIn(t *testing.T, root string) func(args ...string) {
	return func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}
