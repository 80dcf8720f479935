package wspath

import (
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"golang.org/x/sys/unix"
)

// StillInPlace reports whether the directory the plan holds is still the
// one its path leads to from the workspace root (not moved out of the
// workspace, not replaced).
func (rp *Resolved) StillInPlace(ws *Tree) bool {
	if rp.Parent == ws.root {
		return true
	}
	held, err := rp.Parent.Stat(".")
	if err != nil {
		return false
	}
	now, err := ws.root.Stat(rp.ParentRel)
	return err == nil && os.SameFile(held, now)
}

// Holds reports whether the resolved file is still the one that was
// checked (openVerified compares identities) and holds exactly want,
// comparing as it reads: the check costs no copy of the file.
func (rp *Resolved) Holds(want string) bool {
	if rp.Info == nil {
		return false
	}
	f, _, err := rp.OpenVerified()
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > len(want) || string(buf[:n]) != want[:n] {
			return false
		}
		want = want[n:]
		if err == io.EOF {
			return want == ""
		}
		if err != nil {
			return false
		}
	}
}

// OpenVerified opens the resolved regular file for reading without blocking on
// FIFOs, and checks that what was opened is the file that was checked.
func (rp *Resolved) OpenVerified() (*os.File, fs.FileInfo, error) {
	if rp.Info == nil {
		return nil, nil, Failed(rp.Rel, "no such file or directory", fs.ErrNotExist)
	}
	if rp.Info.IsDir() {
		return nil, nil, Failed(rp.Rel, "is a directory", nil)
	}
	f, err := rp.Parent.OpenFile(rp.Name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, OSFailure(rp.Rel, err)
	}
	st, err := f.Stat()
	if err != nil || !os.SameFile(st, rp.Info) || !st.Mode().IsRegular() || fsinfo.Links(st) > 1 {
		f.Close()
		return nil, nil, Refuse(rp.Rel, "refused: the file changed while it was being checked")
	}
	return f, st, nil
}

// OpenDirVerified opens the resolved directory as an os.Root, checking its
// identity against what was checked.
func (rp *Resolved) OpenDirVerified(ws *Tree) (*os.Root, error) {
	if rp.Info == nil {
		return nil, Failed(rp.Rel, "no such file or directory", fs.ErrNotExist)
	}
	if !rp.Info.IsDir() {
		return nil, Failed(rp.Rel, "not a directory", nil)
	}
	if rp.Name == "." {
		return ws.root.OpenRoot(".")
	}
	d, err := rp.Parent.OpenRoot(rp.Name)
	if err != nil {
		return nil, OSFailure(rp.Rel, err)
	}
	st, err := d.Stat(".")
	if err != nil || !os.SameFile(st, rp.Info) || ws.IsAgentsDir(st) {
		d.Close()
		return nil, Refuse(rp.Rel, "refused: the directory changed while it was being checked")
	}
	return d, nil
}

// RootFD duplicates the descriptor of an os.Root's directory.
func RootFD(d *os.Root) (int, error) {
	f, err := d.Open(".")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	return unix.Dup(int(f.Fd()))
}
