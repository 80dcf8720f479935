package guard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/wspath"
)

// A file in agents/ too large to keep a copy of is stamped, and a command
// that changes it — same size, its modification time set back — is
// reported; one it leaves alone is not. (The stamp was once always zero,
// and such a change was never said.)
func TestAgentsGuardLargeFile(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, AgentsDir, "big.bin")
	writeFile(t, root, "agents/big.bin", strings.Repeat("a", 2<<20))
	writeFile(t, root, "agents/notes.md", "notes\n")
	g := recordAgents(root)
	if g == nil || len(g.stamps) != 1 {
		t.Fatalf("the large file is not stamped: %+v", g)
	}
	if said := g.check(); len(said) != 0 {
		t.Fatalf("nothing changed, yet: %v", said)
	}
	fi, _ := os.Stat(big)
	writeFile(t, root, "agents/big.bin", strings.Repeat("b", 2<<20))
	os.Chtimes(big, fi.ModTime(), fi.ModTime())
	said := strings.Join(g.check(), "\n")
	if !strings.Contains(said, "agents/big.bin, too large to keep a copy of") {
		t.Fatalf("the change to a large file is not said: %q", said)
	}
}

// Harvey's own writes to agents/ while a job or a server runs — its session
// journal, a config it saves — are its own, and a check of that job's (as
// often as it runs) takes them as the record's; what the job itself wrote
// there is undone as before (issue 75: the job's check had put Harvey's
// history back as it was when the job started).
func TestAgentsGuardKeepsHarveysOwnWrites(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "agents/notes.md", "notes\n")
	ws, err := wspath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	g := recordAgents(root)
	if err := ws.WriteInternalAtomic("agents/sessions/last.jsonl", []byte("{\"turn\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "agents/harvey.yaml", "model: planted\n") // the job's
	said := strings.Join(g.check(), "\n")
	if !strings.Contains(said, "created agents/harvey.yaml") || strings.Contains(said, "sessions") {
		t.Fatalf("check: %q", said)
	}
	if b, err := os.ReadFile(filepath.Join(root, "agents/sessions/last.jsonl")); err != nil || string(b) != "{\"turn\":1}\n" {
		t.Fatalf("Harvey's own write was undone: %q %v", b, err)
	}
	// Harvey appends again; then the job rewrites the same file: its
	// change, made after Harvey's, is undone back to Harvey's.
	f, _ := ws.OpenInternalAppend("agents/sessions/last.jsonl")
	f.WriteString("{\"turn\":2}\n")
	f.Close()
	if said := g.check(); len(said) != 0 {
		t.Fatalf("Harvey's append was taken as a change: %v", said)
	}
	writeFile(t, root, "agents/sessions/last.jsonl", "{\"planted\":true}\n")
	if said := strings.Join(g.check(), "\n"); !strings.Contains(said, "changed agents/sessions/last.jsonl") {
		t.Fatalf("the job's rewrite was not undone: %q", said)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "agents/sessions/last.jsonl")); string(b) != "{\"turn\":1}\n{\"turn\":2}\n" {
		t.Errorf("not Harvey's: %q", b)
	}
}
