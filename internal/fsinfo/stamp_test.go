//go:build unix

package fsinfo

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A FileInfo from the os package has the same stamp as an Lstat of its
// path (it carries syscall's Stat_t, which a check for x/sys/unix's misses),
// and a write changes it.
func TestStampOfInfo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := LstatStamp(p)
	if !ok || StampOfInfo(fi) != st || st == (Stamp{}) {
		t.Fatalf("StampOfInfo %+v, LstatStamp %+v %v", StampOfInfo(fi), st, ok)
	}
	r, err := os.OpenRoot(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if RootStamp(r, "f") != st {
		t.Fatal("RootStamp differs")
	}
	old := time.Now().Add(-time.Hour)
	os.WriteFile(p, []byte("two"), 0o600)
	os.Chtimes(p, old, fi.ModTime()) // the owner sets the time back: ctime still moves
	if now, _ := LstatStamp(p); now == st {
		t.Fatal("a write with its time set back kept the stamp")
	}
}
