package wspath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/harvey-agent/harvey/internal/fsinfo"
)

// AgentsDir is the workspace subdirectory that holds Harvey's own state
// (harvey.yaml, knowledge.db, sessions/, history). No model-driven tool may
// read, list, search or write it.
const AgentsDir = "agents"

// UserToolsDir is where user tools live, relative to the workspace.
const UserToolsDir = AgentsDir + "/tools"

// Tree is the workspace as the path policy sees it: the directory opened
// once as an os.Root, through which every file operation of Harvey's own
// process goes, so no path (.., absolute, symlink, swapped symlink) can
// leave it; agents/ known by identity; and the permissions: block.
type Tree struct {
	// Root is the absolute path of the workspace, as shown to the user.
	Root string

	root   *os.Root
	agents fs.FileInfo // identity of agents/, for identity (not spelling) checks
	made   bool        // this start made agents/ (it was not there)
	// perms is the permissions: block, read at every check so
	// /permissions takes effect at once (nil, or a nil map: everything
	// is allowed).
	perms func() map[string][]string
}

// Open opens dir as the workspace and makes sure agents/ exists as a real
// directory (not a symlink) inside it; a read-only workspace has none.
func Open(dir string) (*Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", abs, err)
	}
	w := &Tree{Root: abs, root: r}
	if err := w.EnsureAgents(); err != nil {
		r.Close()
		return nil, err
	}
	return w, nil
}

// SetPermissions makes the path gate read the permissions: block from
// perms at every check.
func (w *Tree) SetPermissions(perms func() map[string][]string) { w.perms = perms }

// Permissions is the permissions: block as it is now (nil: everything
// is allowed).
func (w *Tree) Permissions() map[string][]string {
	if w.perms == nil {
		return nil
	}
	return w.perms()
}

// OSRoot is the workspace's os.Root (every open goes through it).
func (w *Tree) OSRoot() *os.Root { return w.root }

// MadeAgents reports whether this start made agents/ (it was not there).
func (w *Tree) MadeAgents() bool { return w.made }

// Close closes the workspace's root.
func (w *Tree) Close() error { return w.root.Close() }

// EnsureAgents makes agents/ when it is missing (not in a read-only
// workspace) and checks it is a real directory.
func (w *Tree) EnsureAgents() error {
	fi, err := w.root.Lstat(AgentsDir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := w.root.Mkdir(AgentsDir, 0o700); err != nil {
			// A read-only workspace: Harvey still runs, without saved state.
			return nil
		}
		w.made = true
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

// FS returns a read-only file system over the workspace root. fs.WalkDir on it
// never follows symlinked directories.
func (w *Tree) FS() fs.FS { return w.root.FS() }

// HasAgents reports whether agents/ exists (it cannot be created in a
// read-only workspace).
func (w *Tree) HasAgents() bool { return w.agents != nil }

// IsAgentsStat is IsAgentsDir for a raw device and inode number.
func (w *Tree) IsAgentsStat(dev, ino uint64) bool {
	if w.agents == nil {
		return false
	}
	st, ok := w.agents.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == dev && uint64(st.Ino) == ino
}
