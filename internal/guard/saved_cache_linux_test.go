package guard

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file of .git is taken from what was kept only while its identity is
// the same: a write of the same size changes its ctime, and is read; a
// file changed within the racy window is read every time, never kept.
func TestKeptContentFollowsEveryChange(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pre-commit")
	os.WriteFile(p, []byte("#!/bin/sh\necho safe\n"), 0o755)
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := func() string {
		fi, err := r.Lstat("pre-commit")
		if err != nil {
			t.Fatal(err)
		}
		b, err := readKept(r, "pre-commit", fi)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// Changed just now: read, and not kept.
	if read() != "#!/bin/sh\necho safe\n" {
		t.Fatal("first read")
	}
	fi, _ := r.Lstat("pre-commit")
	if _, ok := keyOf(fi); ok {
		t.Fatal("a file changed just now may be kept")
	}

	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0 // as if the file had been there for a while
	read()
	keptFiles.Lock()
	n := len(keptFiles.m)
	keptFiles.Unlock()
	if n == 0 {
		t.Fatal("an old file's content was not kept")
	}
	// The same size, other bytes: a new identity, read again.
	time.Sleep(20 * time.Millisecond)
	os.WriteFile(p, []byte("#!/bin/sh\necho EVIL\n"), 0o755)
	if got := read(); got != "#!/bin/sh\necho EVIL\n" {
		t.Fatalf("a rewrite of the same size was missed: %q", got)
	}
	// Replaced by another file (a rename over it): read again.
	os.WriteFile(p+".new", []byte("#!/bin/sh\necho more\n"), 0o755)
	os.Rename(p+".new", p)
	if got := read(); got != "#!/bin/sh\necho more\n" {
		t.Fatalf("a file renamed over it was missed: %q", got)
	}
}
