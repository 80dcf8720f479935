package guard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
