package wspath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree is a workspace beside an outside directory, with a file, a
// subdirectory, links in and out, agents/ and a secret-looking file.
func tree(t *testing.T) (*Tree, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(base, "outside.txt"), []byte("outside"), 0o644)
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("K=v"), 0o644)
	os.Symlink("../outside.txt", filepath.Join(dir, "out"))
	os.Symlink("a.txt", filepath.Join(dir, "in"))
	os.Symlink("../agents", filepath.Join(dir, "sub", "ag"))
	os.Link(filepath.Join(base, "outside.txt"), filepath.Join(dir, "hard"))
	return w, dir
}

// The one path gate: what it accepts and what it refuses, each refusal a
// PathError of ErrRefused's kind naming the path and the rule.
func TestResolve(t *testing.T) {
	w, _ := tree(t)
	for p, want := range map[string]string{
		"a.txt": "", "in": "", "sub": "", ".": "",
		"../x": ErrOutside, "/etc/passwd": "absolute paths", "~/x": "~ is not expanded", "a\\b": "use / as the path separator",
		"a\x00b": "NUL", "out": "symlink leads outside", "agents/harvey.yaml": ErrAgents, "AGENTS/x": ErrAgents,
		"sub/ag/x": ErrAgents, ".env": ErrSecret, "hard": "other hard links", strings.Repeat("a/", 70) + "f": "too deep",
	} {
		rp, err := w.Resolve(p, OpRead)
		if want == "" {
			if err != nil {
				t.Errorf("%q refused: %v", p, err)
				continue
			}
			rp.Close()
			continue
		}
		var pe *PathError
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want a refusal saying %q", p, err, want)
		}
	}
	if _, err := w.Resolve(".git/config", OpWrite); err == nil || !strings.Contains(err.Error(), ErrGitDir) {
		t.Errorf(".git/config for a write: %v", err)
	}
	rp, err := w.Resolve("new/dir/f.txt", OpWrite)
	if err != nil || strings.Join(rp.Missing, "/") != "new/dir" || rp.Name != "f.txt" {
		t.Fatalf("a write into new directories: %+v %v", rp, err)
	}
	rp.Close()
}

// The permissions: block is read at every check, matched by whole path
// components, the most specific prefix winning.
func TestPermissions(t *testing.T) {
	w, _ := tree(t)
	perms := map[string][]string{".": {PermRead}, "sub": {PermRead, PermWrite}}
	w.SetPermissions(func() map[string][]string { return perms })
	if _, err := w.Resolve("a.txt", OpWrite); err == nil || !strings.Contains(err.Error(), "no write permission") {
		t.Errorf("a write outside sub/: %v", err)
	}
	if rp, err := w.Resolve("sub/new.txt", OpWrite); err != nil {
		t.Errorf("a write in sub/: %v", err)
	} else {
		rp.Close()
	}
	perms = nil
	if rp, err := w.Resolve("a.txt", OpWrite); err != nil {
		t.Errorf("no block: %v", err)
	} else {
		rp.Close()
	}
	if Permits(map[string][]string{"src": {PermRead}}, "srcx/a", PermRead) {
		t.Error("src covers srcx")
	}
}

// Harvey's own files: written and read through agents/ by identity, never
// through a link a repository planted there.
func TestInternalFiles(t *testing.T) {
	w, dir := tree(t)
	if err := w.WriteInternalAtomic("agents/s/x.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := w.ReadInternal("agents/s/x.json"); err != nil || string(b) != "{}" {
		t.Fatalf("read back: %q %v", b, err)
	}
	os.Symlink(filepath.Join(dir, ".."), filepath.Join(dir, "agents", "link"))
	if err := w.WriteInternalAtomic("agents/link/planted", []byte("x"), 0o600); err == nil {
		t.Fatal("a write through a link in agents/ passed")
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "planted")); err == nil {
		t.Fatal("the write left agents/")
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", "agents/harvey.yaml", "AGENTS/x", "sub/../a.txt", ".", "link", "sub/link2/a.txt", "a\x00b", "/etc/passwd", ".env", "sub/", "x/../../y"} {
		f.Add(s)
	}
	base := f.TempDir()
	dir := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(base, "outside.txt"), []byte("x"), 0o644)
	ws, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.Symlink("../outside.txt", filepath.Join(dir, "link"))
	os.Symlink("..", filepath.Join(dir, "sub", "link2"))
	os.Symlink("../agents", filepath.Join(dir, "sub", "ag"))
	agentsInfo, _ := os.Stat(filepath.Join(dir, "agents"))
	f.Fuzz(func(t *testing.T, p string) {
		rp, err := ws.Resolve(p, OpRead)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("non-PathError %T: %v", err, err)
			}
			return
		}
		defer rp.Close()
		// Oracle: what was accepted is a regular file or a directory inside
		// the workspace and outside agents/.
		full := filepath.Join(dir, filepath.FromSlash(rp.Rel))
		real, err := filepath.EvalSymlinks(full)
		if err != nil {
			t.Fatalf("%q accepted as %q, which does not resolve: %v", p, rp.Rel, err)
		}
		if real != dir && !strings.HasPrefix(real, dir+string(filepath.Separator)) {
			t.Fatalf("%q resolved outside: %s", p, real)
		}
		st, err := os.Stat(real)
		if err != nil || !(st.Mode().IsRegular() || st.IsDir()) {
			t.Fatalf("%q: not a regular file or directory", p)
		}
		for cur := real; cur != dir && len(cur) > len(dir); cur = filepath.Dir(cur) {
			if fi, err := os.Stat(cur); err == nil && os.SameFile(fi, agentsInfo) {
				t.Fatalf("%q reached agents/", p)
			}
		}
	})
}
