// Feature: a change commits only what was approved, whatever happens to
// the file between plan and commit; the undo journal stays bounded.
package wsfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// /undo takes back only what Harvey wrote: a file it created goes, with
// the directories the write made while they are empty; an older version
// comes back with its permissions; a file someone changed since is left
// alone; nothing is undone through agents/.
func TestUndoTakesBackOnlyWhatHarveyWrote(t *testing.T) {
	ws, dir, _ := hostileWorkspace(t)
	var j Journal
	yes := approverFunc(func() error { return nil })
	write := func(p, content string) {
		t.Helper()
		if _, err := ChangeFile(t.Context(), ws, p, content, nil, yes, &j, "write_file"); err != nil {
			t.Fatal(err)
		}
	}
	undo := func() ([]string, error) {
		t.Helper()
		e, ok := j.Pop()
		if !ok {
			t.Fatal("nothing to undo")
		}
		return Undo(ws, e)
	}
	write("n/m/a.txt", "made\n")
	if removed, err := undo(); err != nil || strings.Join(removed, ",") != "n/m,n" {
		t.Errorf("undo of a new file: removed %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "n")); err == nil {
		t.Error("the directories the write made are still there")
	}

	write("k/a.txt", "made\n")
	os.WriteFile(filepath.Join(dir, "k", "yours.txt"), []byte("yours\n"), 0o644)
	if removed, err := undo(); err != nil || len(removed) != 0 {
		t.Errorf("a directory holding your file: removed %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "k", "yours.txt")); err != nil {
		t.Error("your file went with the undo")
	}

	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("old\n"), 0o700)
	write("run.sh", "new\n")
	if fi, _ := os.Stat(filepath.Join(dir, "run.sh")); fi.Mode().Perm() != 0o700 {
		t.Errorf("the write changed the file's mode to %v", fi.Mode().Perm())
	}
	if _, err := undo(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run.sh")); string(b) != "old\n" {
		t.Errorf("the old version did not come back: %q", b)
	}

	write("ok.txt", "harvey's\n")
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("yours since\n"), 0o644)
	if _, err := undo(); !errors.Is(err, ErrUndoStale) {
		t.Errorf("undo over your later change: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ok.txt")); string(b) != "yours since\n" {
		t.Errorf("your change was undone: %q", b)
	}

	if _, err := Undo(ws, JournalEntry{Path: "agents/harvey.yaml", Existed: true, Old: "x", Wrote: "model: TOPSECRET\n"}); err == nil {
		t.Error("an undo wrote agents/")
	}
	if _, ok := j.Pop(); ok {
		t.Error("the journal kept an entry it gave")
	}
}

// A plan refuses what must not be written, before anything is asked: a
// failed edit (said as the edit's), a binary file, a file over the limit,
// redaction markers over the secrets they hide; the same content is no
// change; a refused approval writes nothing.
func TestPlanRefusesBeforeAsking(t *testing.T) {
	ws, dir, _ := hostileWorkspace(t)
	os.WriteFile(filepath.Join(dir, "bin.dat"), []byte("a\x00b\x00c"), 0o644)
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("x", MaxEditBytes+1)), 0o644)
	key := "AKIA" + "ABCDEFGHIJKLMNOP"
	os.WriteFile(filepath.Join(dir, "deploy.txt"), []byte("AWS_ACCESS_KEY_ID="+key+"\n"), 0o644)
	notThere := errors.New("old text not found")
	if _, err := Plan(ws, "ok.txt", "", func(string, bool) (string, string, error) { return "", "", notThere }); !errors.Is(err, notThere) || !errors.As(err, new(Failed)) {
		t.Errorf("a failed edit: %v", err)
	}
	for p, want := range map[string]string{"bin.dat": "binary", "big.txt": "too large", "deploy.txt": "destroy"} {
		if _, err := Plan(ws, p, "AWS_ACCESS_KEY_ID=[REDACTED]\n", nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if fc, err := Plan(ws, "ok.txt", "fine\n", nil); fc != nil || err != nil {
		t.Errorf("the same content: %+v %v", fc, err)
	}
	if fc, err := Plan(ws, "deploy.txt", "AWS_ACCESS_KEY_ID="+key+"\n", nil); fc == nil || err != nil {
		t.Errorf("a write of a secret file's own bytes was not asked about: %v", err)
	} else {
		fc.Close()
	}
	var j Journal
	no := errors.New("denied")
	fc, err := ChangeFile(t.Context(), ws, "ok.txt", "changed\n", nil, approverFunc(func() error { return no }), &j, "write_file")
	if !errors.Is(err, no) || fc == nil || fc.Target != "ok.txt" || len(j.List()) != 0 {
		t.Errorf("a refused approval: %+v %v", fc, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ok.txt")); string(b) != "fine\n" {
		t.Errorf("written after a refusal: %q", b)
	}
	if err := fc.Commit(ws, &j, "x"); err == nil {
		t.Error("a closed plan committed")
	}
}

// A temporary file a killed Harvey left beside the target goes at the
// next write of it, once over a minute old; a fresh one (a write under
// way) stays.
func TestStaleTempsGo(t *testing.T) {
	ws, dir, _ := hostileWorkspace(t)
	stale := filepath.Join(dir, ".ok.txt.harvey-0123456789ab.tmp")
	fresh := filepath.Join(dir, ".ok.txt.harvey-ba9876543210.tmp")
	os.WriteFile(stale, []byte("half"), 0o644)
	os.WriteFile(fresh, []byte("half"), 0o644)
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(stale, old, old)
	var j Journal
	if _, err := ChangeFile(t.Context(), ws, "ok.txt", "new\n", nil, approverFunc(func() error { return nil }), &j, "write_file"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the stale temporary file stayed")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh temporary file went")
	}
}
