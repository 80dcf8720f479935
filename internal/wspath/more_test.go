package wspath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/refusal"
)

// .gitignore rules as git reads them: anchored and not, directories only,
// globs and **, negation, a rule of a subdirectory's file only below it,
// and the rules a walk drops when it leaves that directory.
func TestIgnoreSet(t *testing.T) {
	var s IgnoreSet
	s.Add(".", []byte("# comment\n*.log\n/build\nnode_modules/\n!keep.log\ndocs/**/*.tmp\nfile?.txt\n[ab].c\n\\#hash\n\n"))
	for _, c := range []struct {
		rel  string
		dir  bool
		want bool
	}{
		{"a.log", false, true}, {"sub/a.log", false, true}, {"keep.log", false, false},
		{"build", true, true}, {"build/x.o", false, true}, {"sub/build", true, false},
		{"node_modules", true, true}, {"node_modules", false, false}, {"web/node_modules/x.js", false, true},
		{"docs/a/b/c.tmp", false, true}, {"docs/c.tmp", false, true}, {"c.tmp", false, false},
		{"file1.txt", false, true}, {"file10.txt", false, false}, {"a.c", false, true}, {"c.c", false, false},
		{"#hash", false, true}, {"main.go", false, false},
	} {
		if got := s.Ignored(c.rel, c.dir); got != c.want {
			t.Errorf("%s (dir %v): ignored %v, want %v", c.rel, c.dir, got, c.want)
		}
	}
	mark := s.Mark()
	s.Add("pkg", []byte("gen.go\n"))
	if !s.Ignored("pkg/gen.go", false) || s.Ignored("gen.go", false) || s.Ignored("pkgx/gen.go", false) {
		t.Error("a subdirectory's rule")
	}
	s.Truncate(mark)
	if s.Ignored("pkg/gen.go", false) {
		t.Error("the subdirectory's rule outlived its walk")
	}
}

// Harvey's own files: listed, appended to, removed (a link as a link).
func TestInternalFileOps(t *testing.T) {
	w, dir := tree(t)
	f, err := w.OpenInternalAppend("agents/log/a.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("one\n")
	f.Close()
	f, _ = w.OpenInternalAppend("agents/log/a.jsonl")
	f.WriteString("two\n")
	f.Close()
	if b, _ := w.ReadInternal("agents/log/a.jsonl"); string(b) != "one\ntwo\n" {
		t.Errorf("appended: %q", b)
	}
	os.Symlink(filepath.Join(dir, "a.txt"), filepath.Join(dir, "agents", "log", "link"))
	es, err := w.ListInternal("agents/log")
	if err != nil || len(es) != 2 {
		t.Fatalf("%v %v", es, err)
	}
	if err := w.RemoveInternal("agents/log/link"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Error("removing a link removed what it led to")
	}
	if !w.HasAgents() || w.OSRoot() == nil || w.FS() == nil {
		t.Error("the tree's accessors")
	}
}

// A resolved file is still the one checked, and holds what it held.
func TestResolvedStillTheFileChecked(t *testing.T) {
	w, dir := tree(t)
	os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("bee"), 0o644)
	rp, err := w.Resolve("sub/b.txt", OpRead)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	if !rp.StillInPlace(w) || !rp.Holds("bee") || rp.Holds("be") || rp.Holds("beet") {
		t.Error("the file as checked")
	}
	f, _, err := rp.OpenVerified()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Replaced by another file (made while the first still exists, so
	// never the same inode) with the same content.
	os.WriteFile(filepath.Join(dir, "sub", "c.txt"), []byte("bee"), 0o644)
	os.Rename(filepath.Join(dir, "sub", "c.txt"), filepath.Join(dir, "sub", "b.txt"))
	if _, _, err := rp.OpenVerified(); err == nil || !errors.Is(err, refusal.ErrRefused) {
		t.Errorf("a replaced file: %v", err)
	}
	os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "moved"))
	if rp.StillInPlace(w) {
		t.Error("a moved directory is still in place")
	}
	d, err := w.Resolve(".", OpRead)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	root, err := d.OpenDirVerified(w)
	if err != nil {
		t.Fatal(err)
	}
	root.Close()
	if _, _, err := d.OpenVerified(); err == nil {
		t.Error("a directory opened as a file")
	}
	var pe *PathError
	_, err = w.Resolve("nope/x.txt", OpRead)
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(ErrText(err), "nope/x.txt") {
		t.Errorf("a missing file: %v (%q)", err, ErrText(err))
	}
}

// internal/config names its file's place without importing the path gate:
// the two stay one.
func TestConfigPathInAgents(t *testing.T) {
	if config.Path != AgentsDir+"/harvey.yaml" {
		t.Fatalf("config.Path %q is not in %s", config.Path, AgentsDir)
	}
}
