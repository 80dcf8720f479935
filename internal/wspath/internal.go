package wspath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/harvey-agent/harvey/internal/refusal"
	"golang.org/x/sys/unix"
)

// Harvey's own state under agents/ (config, history, sessions, recordings,
// last.jsonl, user tools) is read and written only through descriptors
// opened with O_NOFOLLOW from agents/ itself (checked by identity against
// the agents/ found at start), so a repository that ships agents/sessions
// or agents/history as a link, or a hard link to a file elsewhere, cannot
// make Harvey write outside agents/. Files are created 0600, directories
// 0700.

// internalParent opens the directory that holds rel (which starts with
// agents/), component by component without following links; with create,
// missing directories are made (0700). It returns the directory's fd (the
// caller closes it) and the final name.
func (w *Tree) internalParent(rel string, create bool) (int, string, error) {
	comps := splitPath(path.Clean(filepath.ToSlash(rel)))
	if len(comps) < 2 || comps[0] != AgentsDir {
		return -1, "", fmt.Errorf("%s: not under %s/", rel, AgentsDir)
	}
	if w.agents == nil {
		return -1, "", fmt.Errorf("%s/ does not exist (read-only workspace)", AgentsDir)
	}
	rootfd, err := RootFD(w.root)
	if err != nil {
		return -1, "", err
	}
	fd, err := unix.Openat(rootfd, AgentsDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	unix.Close(rootfd)
	if err != nil {
		return -1, "", fmt.Errorf("%s/: %w", AgentsDir, err)
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !w.IsAgentsStat(uint64(st.Dev), st.Ino) {
		unix.Close(fd)
		return -1, "", fmt.Errorf("%s/ changed since Harvey started; refusing to write there", AgentsDir)
	}
	for _, c := range comps[1 : len(comps)-1] {
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err := unix.Mkdirat(fd, c, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, "", err
			}
			next, err = unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, "", refusal.Errorf("%s: refused: a link or file stands where a directory of Harvey's state should be", rel)
			}
			return -1, "", err
		}
		fd = next
	}
	return fd, comps[len(comps)-1], nil
}

// OpenInternal opens rel under agents/ with flags (O_NOFOLLOW added) and
// checks it is a regular file with one link.
func (w *Tree) OpenInternal(rel string, flags int, create bool) (*os.File, error) {
	if flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC) != 0 {
		w.NoteOwn(rel)
	}
	dir, name, err := w.internalParent(rel, create)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, refusal.Errorf("%s: refused: it is a symlink", rel)
		}
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink > 1 {
		unix.Close(fd)
		return nil, refusal.Errorf("%s: refused: not a regular file with a single link", rel)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// ReadInternal reads one of Harvey's own files (under agents/). Harvey's own
// state is never exposed through tools; this is for Harvey itself.
func (w *Tree) ReadInternal(rel string) ([]byte, error) {
	f, err := w.OpenInternal(rel, unix.O_RDONLY, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// RemoveInternal removes one of Harvey's own files (a link is removed as a
// link, never followed).
func (w *Tree) RemoveInternal(rel string) error {
	w.NoteOwn(rel)
	dir, name, err := w.internalParent(rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return unix.Unlinkat(dir, name, 0)
}

// ListInternal lists a directory of Harvey's own state (no link followed).
func (w *Tree) ListInternal(rel string) ([]fs.DirEntry, error) {
	dir, _, err := w.internalParent(path.Join(rel, "_"), false)
	if err != nil {
		return nil, err
	}
	// Named by its absolute path: DirEntry.Info lstats NAME/entry.
	f := os.NewFile(uintptr(dir), filepath.Join(w.Root, rel))
	defer f.Close()
	return f.ReadDir(-1)
}

// WriteInternalAtomic replaces one of Harvey's own files atomically: the data
// goes to a temporary file in the same directory, is synced, and is renamed
// over the target, so a crash leaves either the old or the new version. The
// rename replaces a link instead of writing through it.
func (w *Tree) WriteInternalAtomic(rel string, data []byte, perm fs.FileMode) error {
	w.NoteOwn(rel)
	dir, name, err := w.internalParent(rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + ".harvey-" + hex.EncodeToString(rnd[:]) + ".tmp"
	w.NoteOwn(path.Join(path.Dir(filepath.ToSlash(rel)), tmp))
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()&0o600))
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		unix.Unlinkat(dir, tmp, 0)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		unix.Unlinkat(dir, tmp, 0)
		return err
	}
	f.Close()
	if err := unix.Renameat(dir, tmp, dir, name); err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return err
	}
	_ = unix.Fsync(dir)
	return nil
}

// OpenInternalAppend opens one of Harvey's own files for appending, creating
// it (0600, and its directory, 0700) when missing.
func (w *Tree) OpenInternalAppend(rel string) (*os.File, error) {
	return w.OpenInternal(rel, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT, true)
}
