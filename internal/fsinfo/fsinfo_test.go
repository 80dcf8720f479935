package fsinfo

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestKindAndLinks(t *testing.T) {
	d := t.TempDir()
	f := filepath.Join(d, "f")
	os.WriteFile(f, []byte("x"), 0o600)
	os.Symlink(f, filepath.Join(d, "l"))
	syscall.Mkfifo(filepath.Join(d, "p"), 0o600)
	for name, want := range map[string]string{"f": "a regular file", "l": "a symlink", "p": "a named pipe (FIFO)", ".": "a directory"} {
		fi, err := os.Lstat(filepath.Join(d, name))
		if err != nil || Kind(fi.Mode()) != want {
			t.Errorf("%s: %v %q", name, err, Kind(fi.Mode()))
		}
	}
	fi, _ := os.Lstat(f)
	if Links(fi) != 1 {
		t.Fatalf("links %d", Links(fi))
	}
	os.Link(f, filepath.Join(d, "h"))
	fi, _ = os.Lstat(f)
	if Links(fi) != 2 {
		t.Fatalf("after a hard link: %d", Links(fi))
	}
}

// An os error's reason, without the operation and the path it repeats.
func TestErrText(t *testing.T) {
	_, err := os.Open(filepath.Join(t.TempDir(), "missing"))
	if got := ErrText(err); got != "no such file or directory" {
		t.Fatalf("open: %q", got)
	}
	err = os.Link(filepath.Join(t.TempDir(), "missing"), filepath.Join(t.TempDir(), "x"))
	if got := ErrText(err); got != "no such file or directory" {
		t.Fatalf("link: %q", got)
	}
}
