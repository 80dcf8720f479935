package harvey

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
	"strings"
	"syscall"
	"time"
)

// AgentsDir is the workspace subdirectory that holds Harvey's own state
// (harvey.yaml, knowledge.db, sessions/, history). No model-driven tool may
// read, list, search or write it.
const AgentsDir = "agents"

// Workspace is the directory Harvey was started in. It is opened once as an
// os.Root and every file operation of Harvey's own process goes through that
// root, so no path (.., absolute, symlink, swapped symlink) can leave it.
type Workspace struct {
	// Root is the absolute path of the workspace, as shown to the user.
	Root string

	root   *os.Root
	agents fs.FileInfo // identity of agents/, for identity (not spelling) checks

	git gitRepo // the private git directory (git_repo.go)
}

// OpenWorkspace opens dir as the workspace and makes sure agents/ exists as a
// real directory (not a symlink) inside it.
func OpenWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", abs, err)
	}
	w := &Workspace{Root: abs, root: r}
	if err := w.ensureAgents(); err != nil {
		r.Close()
		return nil, err
	}
	return w, nil
}

func (w *Workspace) ensureAgents() error {
	fi, err := w.root.Lstat(AgentsDir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := w.root.Mkdir(AgentsDir, 0o755); err != nil {
			// A read-only workspace: Harvey still runs, without saved state.
			return nil
		}
		fi, err = w.root.Lstat(AgentsDir)
	}
	if err != nil {
		return fmt.Errorf("workspace: %s/: %w", AgentsDir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("workspace: %s/ must be a real directory (found %s); move it aside and start again", AgentsDir, fileKind(fi.Mode()))
	}
	w.agents = fi
	return nil
}

// Close releases the workspace root and removes the private git directory.
func (w *Workspace) Close() error {
	w.closeGit()
	return w.root.Close()
}

// FS returns a read-only file system over the workspace root. fs.WalkDir on it
// never follows symlinked directories.
func (w *Workspace) FS() fs.FS { return w.root.FS() }

// HasAgents reports whether agents/ exists (it cannot be created in a
// read-only workspace).
func (w *Workspace) HasAgents() bool { return w.agents != nil }

// isAgentsDir reports whether fi is the workspace's agents/ directory, by file
// identity: a symlink to it, a differently-cased name on a case-insensitive
// file system or a path through ".." all resolve to the same identity.
func (w *Workspace) isAgentsDir(fi fs.FileInfo) bool {
	return w.agents != nil && fi != nil && os.SameFile(w.agents, fi)
}

// isAgentsStat is isAgentsDir for a raw device and inode number.
func (w *Workspace) isAgentsStat(dev, ino uint64) bool {
	if w.agents == nil {
		return false
	}
	st, ok := w.agents.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == dev && uint64(st.Ino) == ino
}

// ReadInternal reads one of Harvey's own files (under agents/). Harvey's own
// state is never exposed through tools; this is for Harvey itself.
func (w *Workspace) ReadInternal(rel string) ([]byte, error) {
	return w.root.ReadFile(rel)
}

// WriteInternalAtomic replaces one of Harvey's own files atomically: the data
// goes to a temporary file in the same directory, is synced, and is renamed
// over the target, so a crash leaves either the old or the new version.
func (w *Workspace) WriteInternalAtomic(rel string, data []byte, perm fs.FileMode) error {
	dir, name := path.Split(filepath.ToSlash(rel))
	dir = strings.TrimSuffix(dir, "/")
	if dir != "" {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	} else {
		dir = "."
	}
	d, err := w.root.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return atomicWrite(d, name, data, perm)
}

// OpenInternalAppend opens one of Harvey's own files for appending, creating
// it (and its directory) when missing.
func (w *Workspace) OpenInternalAppend(rel string) (*os.File, error) {
	if dir := path.Dir(filepath.ToSlash(rel)); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	return w.root.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// atomicWrite writes data to name inside dir via a temporary file created with
// O_EXCL (never follows a symlink) and a rename, which replaces a symlink or a
// hard link instead of writing through it.
func atomicWrite(dir *os.Root, name string, data []byte, perm fs.FileMode) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	removeStaleTemps(dir, name)
	tmp := "." + name + ".harvey-" + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			dir.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := dir.Rename(tmp, name); err != nil {
		dir.Remove(tmp)
		ok = true
		return err
	}
	ok = true
	syncDir(dir)
	return nil
}

// removeStaleTemps deletes temporary files that an earlier Harvey, killed
// between creating and renaming them, left beside name. Only files over a
// minute old go, so a concurrent write is not disturbed.
func removeStaleTemps(dir *os.Root, name string) {
	d, err := dir.Open(".")
	if err != nil {
		return
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return
	}
	prefix := "." + name + ".harvey-"
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, ".tmp") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
			dir.Remove(n)
		}
	}
}

// syncDir flushes a directory entry change (best effort).
func syncDir(dir *os.Root) {
	if d, err := dir.Open("."); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// fileKind names a file mode for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	case m.IsRegular():
		return "a regular file"
	}
	return "an unknown file type"
}

// readAtMost reads up to limit bytes from r and reports whether more remained.
func readAtMost(r io.Reader, limit int) ([]byte, bool, error) {
	buf, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	if len(buf) > limit {
		return buf[:limit], true, nil
	}
	return buf, false, nil
}
