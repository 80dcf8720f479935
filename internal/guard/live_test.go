package guard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command's check taken while a background job's is open (Landlock
// only: the job can write .git) never records what the job planted as the
// state to keep: the job's check undoes the plant, the job ends, and the
// command's check after it leaves .git/config as the user had it — where
// a check of its own would have put the plant back. What the command did
// on purpose (git add) stays; once no check is open, a change of the
// user's is the state the next one records.
func TestAChecksRecordIsNotWhatAJobPlanted(t *testing.T) {
	root, env := gitFixture(t)
	cfg := filepath.Join(root, ".git", "config")
	original, _ := os.ReadFile(cfg)
	job := Command(root, "background job: the planter")
	gitSh(t, root, env, "git config core.fsmonitor /tmp/planted-by-job")
	cmd := Command(root, "go test ./...") // taken while the plant stands
	if undone := job.Recheck(); len(undone) == 0 {
		t.Fatal("the job's check undid nothing")
	}
	gitSh(t, root, env, "echo b > b.txt && git add b.txt") // the command's own work
	job.Check()                                            // the job ended
	undone, _ := cmd.Check()
	if b, _ := os.ReadFile(cfg); string(b) != string(original) {
		t.Errorf("the command's check put back what the job planted (undone %q):\n%s", undone, b)
	}
	if staged := gitSh(t, root, env, "git diff --cached --name-only"); strings.TrimSpace(staged) != "b.txt" {
		t.Errorf("the command's git add was undone: %q", staged)
	}
	gitSh(t, root, env, "git config user.name 'You Yourself'")
	next := Command(root, "ls")
	if undone, _ := next.Check(); len(undone) != 0 {
		t.Errorf("your own change, made while no check was open, was undone: %q", undone)
	}
	if !strings.Contains(gitSh(t, root, env, "git config user.name"), "You Yourself") {
		t.Error("your config change is gone")
	}
	if oldestOpen(root) != nil {
		t.Error("a check was left open")
	}
}
