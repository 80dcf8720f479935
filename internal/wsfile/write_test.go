// Feature: a change commits only what was approved, whatever happens to
// the file between plan and commit; the undo journal stays bounded.
package wsfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/wspath"
)

// approverFunc is an approval that does something while it is asked: the
// hostile change a test makes between plan and commit.
type approverFunc func() error

func (f approverFunc) ApproveChange(context.Context, *Change) error { return f() }

// TestChangeCommitsWhatWasApproved changes the file system while a change
// is being approved, in every way the plan's hold on its target must see:
// the file, its directory, a link on the way, a directory the write was to
// make. Nothing that changed is overwritten, and nothing is written outside
// the workspace; a link retargeted meanwhile still writes the target the
// approval named.
func TestChangeCommitsWhatWasApproved(t *testing.T) {
	mkfile := func(t *testing.T, p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	cases := []struct {
		name    string
		setup   func(ws, out string)
		path    string
		during  func(ws, out string)
		refused bool
		want    map[string]string // file (ws/ or out/ prefixed) → content; "" = absent
	}{
		{name: "nothing changes", path: "a.txt",
			setup: func(ws, out string) { mkfile(t, ws+"/a.txt", "one\n") },
			want:  map[string]string{"ws/a.txt": "NEW"}},
		{name: "new file in new directories", path: "n/m/a.txt",
			want: map[string]string{"ws/n/m/a.txt": "NEW"}},
		{name: "the file is edited meanwhile", path: "a.txt", refused: true,
			setup:  func(ws, out string) { mkfile(t, ws+"/a.txt", "one\n") },
			during: func(ws, out string) { must(os.WriteFile(ws+"/a.txt", []byte("two\n"), 0o644)) },
			want:   map[string]string{"ws/a.txt": "two\n"}},
		{name: "the file is replaced by another with the same bytes", path: "a.txt", refused: true,
			setup: func(ws, out string) { mkfile(t, ws+"/a.txt", "one\n") },
			during: func(ws, out string) {
				must(os.WriteFile(ws+"/b.txt", []byte("one\n"), 0o644))
				must(os.Rename(ws+"/b.txt", ws+"/a.txt"))
			},
			want: map[string]string{"ws/a.txt": "one\n"}},
		{name: "the new file is created meanwhile", path: "a.txt", refused: true,
			during: func(ws, out string) { must(os.WriteFile(ws+"/a.txt", []byte("theirs"), 0o644)) },
			want:   map[string]string{"ws/a.txt": "theirs"}},
		{name: "its directory is moved out of the workspace", path: "sub/a.txt", refused: true,
			setup:  func(ws, out string) { mkfile(t, ws+"/sub/a.txt", "one\n") },
			during: func(ws, out string) { must(os.Rename(ws+"/sub", out+"/sub")) },
			want:   map[string]string{"out/sub/a.txt": "one\n", "ws/sub/a.txt": ""}},
		{name: "its directory becomes a link out", path: "sub/a.txt", refused: true,
			setup: func(ws, out string) { mkfile(t, ws+"/sub/a.txt", "one\n"); mkfile(t, out+"/sub/a.txt", "one\n") },
			during: func(ws, out string) {
				must(os.Rename(ws+"/sub", ws+"/old"))
				must(os.Symlink(out+"/sub", ws+"/sub"))
			},
			want: map[string]string{"out/sub/a.txt": "one\n", "ws/old/a.txt": "one\n"}},
		{name: "a directory it was to make appears", path: "n/a.txt", refused: true,
			during: func(ws, out string) { must(os.Symlink(out, ws+"/n")) },
			want:   map[string]string{"out/a.txt": ""}},
		{name: "the link it went through is retargeted", path: "link.txt",
			setup: func(ws, out string) {
				mkfile(t, ws+"/a.txt", "one\n")
				mkfile(t, ws+"/b.txt", "b\n")
				must(os.Symlink("a.txt", ws+"/link.txt"))
			},
			during: func(ws, out string) {
				must(os.Remove(ws + "/link.txt"))
				must(os.Symlink("b.txt", ws+"/link.txt"))
			},
			want: map[string]string{"ws/a.txt": "NEW", "ws/b.txt": "b\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			wsDir, out := filepath.Join(root, "ws"), filepath.Join(root, "out")
			must(os.MkdirAll(wsDir, 0o755))
			must(os.MkdirAll(out, 0o755))
			if c.setup != nil {
				c.setup(wsDir, out)
			}
			ws, err := wspath.Open(wsDir)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			var j Journal
			asked := false
			fc, err := ChangeFile(t.Context(), ws, c.path, "NEW", nil, approverFunc(func() error {
				asked = true
				if c.during != nil {
					c.during(wsDir, out)
				}
				return nil
			}), &j, "write_file")
			if !asked {
				t.Fatalf("not asked: %v", err)
			}
			switch {
			case c.refused && (err == nil || !strings.Contains(err.Error(), "changed while")):
				t.Fatalf("want a refusal, got %v", err)
			case !c.refused && err != nil:
				t.Fatal(err)
			}
			if fc.rp != nil {
				t.Errorf("the plan still holds its directory")
			}
			if n := len(j.List()); (n == 1) == c.refused {
				t.Errorf("undo entries = %d", n)
			}
			for f, want := range c.want {
				b, err := os.ReadFile(filepath.Join(root, f))
				if got := string(b); got != want || (want == "" && err == nil) {
					t.Errorf("%s = %q (%v), want %q", f, got, err, want)
				}
			}
			for _, f := range []string{"a.txt", "sub/a.txt", "n/a.txt"} {
				if b, err := os.ReadFile(filepath.Join(out, f)); err == nil && string(b) == "NEW" {
					t.Errorf("written outside the workspace: out/%s", f)
				}
			}
		})
	}
}

func TestUndoStackBounded(t *testing.T) {
	var u Journal
	for i := 0; i < undoMaxEntries+20; i++ {
		u.Push(JournalEntry{Path: "a", Old: strings.Repeat("x", 1<<20)})
	}
	if n := len(u.List()); n > undoMaxEntries || u.bytes > undoMaxBytes {
		t.Fatalf("%d entries, %d bytes", n, u.bytes)
	}
}
