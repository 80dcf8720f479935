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
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/gitrepo"
	"github.com/harvey-agent/harvey/internal/guard"
	"golang.org/x/sys/unix"
)

// AgentsDir is the workspace subdirectory that holds Harvey's own state
// (harvey.yaml, knowledge.db, sessions/, history). No model-driven tool may
// read, list, search or write it.
const AgentsDir = guard.AgentsDir

// Workspace is the directory Harvey was started in. It is opened once as an
// os.Root and every file operation of Harvey's own process goes through that
// root, so no path (.., absolute, symlink, swapped symlink) can leave it.
type Workspace struct {
	// Root is the absolute path of the workspace, as shown to the user.
	Root string

	root   *os.Root
	agents fs.FileInfo // identity of agents/, for identity (not spelling) checks

	git *gitrepo.Repo // the private git directory (internal/gitrepo), made by openWorkspace

	// secretFree remembers, per file content (search.go's fsinfo.Stamp),
	// whether redaction leaves it unchanged.
	secretFree sync.Map

	// config is the session's configuration, whose permissions: block
	// the path gate reads at every check, so /permissions takes effect at
	// once (nil: everything is allowed).
	config *ConfigFile

	// indexMu keeps the index's syncs in this process one at a time (the
	// build started with the REPL and a query wait for each other rather
	// than meet SQLite's lock).
	indexMu sync.Mutex
	index   indexState  // the index's build, as /rag status and find_code see it
	homeOK  atomic.Bool // you said yes to indexing a workspace that is your home or /
	// madeAgents: this start made agents/ (it was not there); dropAgents:
	// remove it at exit (you declined to index your home: Harvey leaves
	// nothing there).
	madeAgents bool
	dropAgents atomic.Bool
}

// openWorkspace opens dir as the workspace and makes sure agents/ exists as a
// real directory (not a symlink) inside it.
func openWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", abs, err)
	}
	w := &Workspace{Root: abs, root: r}
	w.git = gitrepo.New(r, abs, w.runGitConfig)
	if err := w.ensureAgents(); err != nil {
		r.Close()
		return nil, err
	}
	return w, nil
}

func (w *Workspace) ensureAgents() error {
	fi, err := w.root.Lstat(AgentsDir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := w.root.Mkdir(AgentsDir, 0o700); err != nil {
			// A read-only workspace: Harvey still runs, without saved state.
			return nil
		}
		w.madeAgents = true
		// agents/ ignores itself (as Python's venv does): git never shows
		// or commits it, and no line in the project's .gitignore is needed.
		w.root.WriteFile(AgentsDir+"/.gitignore", []byte("# Harvey's own directory (history, sessions, its index): never committed.\n*\n"), 0o600)
		fi, err = w.root.Lstat(AgentsDir)
	}
	if err != nil {
		return fmt.Errorf("workspace: %s/: %w", AgentsDir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("workspace: %s/ must be a real directory (found %s); move it aside and start again", AgentsDir, fsinfo.Kind(fi.Mode()))
	}
	w.agents = fi
	return nil
}

// Close releases the workspace root and removes the private git directory.
func (w *Workspace) Close() error {
	w.git.Close()
	if w.madeAgents && w.dropAgents.Load() {
		w.root.RemoveAll(AgentsDir)
	}
	return w.root.Close()
}

// FS returns a read-only file system over the workspace root. fs.WalkDir on it
// never follows symlinked directories.
func (w *Workspace) FS() fs.FS { return w.root.FS() }

// HasAgents reports whether agents/ exists (it cannot be created in a
// read-only workspace).
func (w *Workspace) HasAgents() bool { return w.agents != nil }

// isAgentsStat is isAgentsDir for a raw device and inode number.
func (w *Workspace) isAgentsStat(dev, ino uint64) bool {
	if w.agents == nil {
		return false
	}
	st, ok := w.agents.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == dev && uint64(st.Ino) == ino
}

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
func (w *Workspace) internalParent(rel string, create bool) (int, string, error) {
	comps := splitPath(path.Clean(filepath.ToSlash(rel)))
	if len(comps) < 2 || comps[0] != AgentsDir {
		return -1, "", fmt.Errorf("%s: not under %s/", rel, AgentsDir)
	}
	if w.agents == nil {
		return -1, "", fmt.Errorf("%s/ does not exist (read-only workspace)", AgentsDir)
	}
	rootfd, err := rootFD(w.root)
	if err != nil {
		return -1, "", err
	}
	fd, err := unix.Openat(rootfd, AgentsDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	unix.Close(rootfd)
	if err != nil {
		return -1, "", fmt.Errorf("%s/: %w", AgentsDir, err)
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !w.isAgentsStat(uint64(st.Dev), st.Ino) {
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
				return -1, "", refusedf("%s: refused: a link or file stands where a directory of Harvey's state should be", rel)
			}
			return -1, "", err
		}
		fd = next
	}
	return fd, comps[len(comps)-1], nil
}

// openInternal opens rel under agents/ with flags (O_NOFOLLOW added) and
// checks it is a regular file with one link.
func (w *Workspace) openInternal(rel string, flags int, create bool) (*os.File, error) {
	dir, name, err := w.internalParent(rel, create)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, refusedf("%s: refused: it is a symlink", rel)
		}
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink > 1 {
		unix.Close(fd)
		return nil, refusedf("%s: refused: not a regular file with a single link", rel)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// ReadInternal reads one of Harvey's own files (under agents/). Harvey's own
// state is never exposed through tools; this is for Harvey itself.
func (w *Workspace) ReadInternal(rel string) ([]byte, error) {
	f, err := w.openInternal(rel, unix.O_RDONLY, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// RemoveInternal removes one of Harvey's own files (a link is removed as a
// link, never followed).
func (w *Workspace) RemoveInternal(rel string) error {
	dir, name, err := w.internalParent(rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return unix.Unlinkat(dir, name, 0)
}

// ListInternal lists a directory of Harvey's own state (no link followed).
func (w *Workspace) ListInternal(rel string) ([]fs.DirEntry, error) {
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
func (w *Workspace) WriteInternalAtomic(rel string, data []byte, perm fs.FileMode) error {
	dir, name, err := w.internalParent(rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + ".harvey-" + hex.EncodeToString(rnd[:]) + ".tmp"
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
func (w *Workspace) OpenInternalAppend(rel string) (*os.File, error) {
	return w.openInternal(rel, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT, true)
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

// UserToolsDir is where tool files live, relative to the workspace.
const UserToolsDir = "agents/tools"
