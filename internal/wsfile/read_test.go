// Feature: a file's window and a directory's listing through the path
// gate: rune boundaries, binaries, a 2 GB file, paging, what is not listed.
package wsfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// hostileWorkspace is a workspace beside a directory it must not reach,
// with agents/harvey.yaml holding a secret and ok.txt.
func hostileWorkspace(t *testing.T) (ws *wspath.Tree, dir, outside string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET-outside\n"), 0o644)
	ws, err := wspath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte("model: TOPSECRET\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("fine\n"), 0o644)
	return ws, dir, outside
}

// A large file is read with bounded memory and cut at a rune boundary.
func TestReadCapAtRuneBoundary(t *testing.T) {
	ws, dir, _ := hostileWorkspace(t)
	data := strings.Repeat("a", 65535-1) + "😀" + strings.Repeat("b", 100) // emoji straddles the cap
	os.WriteFile(filepath.Join(dir, "emoji.txt"), []byte(data), 0o644)
	rr, err := Read(ws, "emoji.txt", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(rr.Text, "[output truncated at 65536 bytes]\n[more lines follow; continue with offset=1]") && !strings.Contains(rr.Text, "[output truncated at 65536 bytes]") {
		t.Fatalf("no marker: %q", rr.Text[len(rr.Text)-80:])
	}
	if strings.ContainsRune(rr.Text, '\uFFFD') {
		t.Fatal("cut inside a rune")
	}
	// binary
	os.WriteFile(filepath.Join(dir, "bin"), []byte("ab\x00cd"), 0o644)
	rr, _ = Read(ws, "bin", 0, 0, 0)
	if rr.Text != "binary file, 5 bytes" {
		t.Fatalf("binary: %q", rr.Text)
	}
	// a sparse 2 GB file: capped, fast
	f, _ := os.Create(filepath.Join(dir, "huge.txt"))
	f.WriteString("line\n")
	f.Truncate(2 << 30)
	f.Close()
	rr, err = Read(ws, "huge.txt", 0, 0, 0)
	if err != nil || len(rr.Text) > config.DefaultMaxOutputBytes+200 {
		t.Fatalf("huge: %v %d", err, len(rr.Text))
	}
}

// A window of lines, and a listing: agents/ is never listed, a directory
// is not read as a file, and a path outside is refused by the gate.
func TestWindowsAndListings(t *testing.T) {
	ws, dir, outside := hostileWorkspace(t)
	os.WriteFile(filepath.Join(dir, "lines.txt"), []byte("one\ntwo\nthree\nfour\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	rr, err := Read(ws, "lines.txt", 2, 2, 0)
	if err != nil || !strings.HasPrefix(rr.Text, "two\nthree\n") || !strings.Contains(rr.Text, "continue with offset=4") || rr.NextLine != 4 {
		t.Fatalf("lines 2-3: %+v %v", rr, err)
	}
	if _, err := Read(ws, "sub", 0, 0, 0); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory read as a file: %v", err)
	}
	if _, err := Read(ws, filepath.Join(outside, "secret.txt"), 0, 0, 0); err == nil {
		t.Error("a file outside the workspace was read")
	}
	text, n, err := List(ws, ".", 0)
	if err != nil || n != 3 || !strings.Contains(text, "ok.txt") || !strings.Contains(text, "sub/") || strings.Contains(text, "agents") {
		t.Errorf("listing (%d): %q %v", n, text, err)
	}
	entries, err := ReadDir(ws, ".")
	if err != nil || len(entries) != 3 {
		t.Errorf("entries: %+v %v", entries, err)
	}
}
