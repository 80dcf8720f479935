// Feature: a recording cut back to its last whole turn, and old automatic
// recordings pruned.
package recorder

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/wspath"
)

// tree is a workspace of the test's own.
func tree(t *testing.T) (*wspath.Tree, string) {
	t.Helper()
	dir := t.TempDir()
	tr, err := wspath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, dir
}

// Repair cuts exactly the partial turn a kill can leave.
func TestRepairRecording(t *testing.T) {
	ws, dir := tree(t)
	r, err := Start(ws, "rep.md", "m", 1000)
	if err != nil {
		t.Fatal(err)
	}
	r.User("q")
	r.Assistant("a", "")
	r.Close()
	p := filepath.Join(dir, "agents", "sessions", "rep.md")
	good, _ := os.ReadFile(p)
	os.WriteFile(p, append(append([]byte(nil), good...), "### Turn 2\n\n**User:** half a tu"...), 0o644)
	Repair(ws, "agents/sessions/rep.md")
	if got, _ := os.ReadFile(p); !bytes.Equal(got, good) {
		t.Fatalf("after repair:\n%s", got)
	}
	Repair(ws, "agents/sessions/rep.md") // a complete file is left alone
	if got, _ := os.ReadFile(p); !bytes.Equal(got, good) {
		t.Fatal("a complete recording changed")
	}
}

// At start, automatic recordings past the newest 50 are removed; named
// ones are kept.
func TestOldRecordingsPruned(t *testing.T) {
	ws, dir := tree(t)
	sessions := filepath.Join(dir, "agents", "sessions")
	os.MkdirAll(sessions, 0o700)
	base := time.Now().Add(-time.Hour)
	for i := 0; i < Kept+7; i++ {
		p := filepath.Join(sessions, fmt.Sprintf("harvey-session-%03d.md", i))
		os.WriteFile(p, []byte("# Harvey session\n"), 0o600)
		os.Chtimes(p, base.Add(time.Duration(i)*time.Second), base.Add(time.Duration(i)*time.Second))
	}
	os.WriteFile(filepath.Join(sessions, "my-notes.md"), []byte("keep me\n"), 0o600)
	Tidy(ws, 0)
	ents, _ := os.ReadDir(sessions)
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	if len(ents) != Kept+1 || !names["my-notes.md"] || names["harvey-session-006.md"] || !names["harvey-session-007.md"] {
		t.Fatalf("%d left: %v", len(ents), names)
	}
	Tidy(ws, 10) // keep_recordings: 10
	if ents, _ := os.ReadDir(sessions); len(ents) != 10+1 {
		t.Fatalf("keep_recordings 10: %d left", len(ents))
	}
}
