package guard

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// Protected lists, for the repository at root, what stays read-only to
// commands (the parts that make git run programs, in every git directory
// the workspace's git uses: gitLayout) and what git directories outside
// the workspace must be writable (a worktree's .git file points at one,
// and at the common directory it shares with its siblings).
func Protected(root string) (readOnly, writable []string) {
	l, ok := readGitLayout(root)
	if !ok {
		if _, err := os.Lstat(filepath.Join(root, ".git")); err == nil {
			return []string{filepath.Join(root, ".git")}, nil
		}
		return nil, nil
	}
	if l.isFile {
		readOnly = append(readOnly, l.dotGit)
	}
	for _, d := range []string{l.gitDir, l.common} {
		if !sandbox.Under(d, []string{root}) && !slices.Contains(writable, d) {
			writable = append(writable, d)
		}
	}
	for _, f := range commonRunFiles {
		readOnly = append(readOnly, filepath.Join(l.common, f))
	}
	readOnly = append(readOnly, filepath.Join(l.common, "hooks"))
	mods, _ := filepath.Glob(filepath.Join(l.common, "modules", "*"))
	for _, m := range mods {
		readOnly = append(readOnly, filepath.Join(m, "config"), filepath.Join(m, "config.worktree"), filepath.Join(m, "hooks"))
	}
	for _, w := range append(l.worktreeDirs(), l.gitDir) {
		for _, f := range worktreeRunFiles {
			if p := filepath.Join(w, f); !slices.Contains(readOnly, p) {
				readOnly = append(readOnly, p)
			}
		}
	}
	// What the repository's config reads besides itself (include.path,
	// includeIf), and the relative paths git resolves in the workspace
	// (a core.hooksPath of .githooks/, in its config or the user's): git
	// runs what they name, so they are read-only too.
	readOnly = append(readOnly, gitRunPaths(root, l)...)
	// A hooks directory that is a link (shared hooks): what it leads to is
	// read-only too (the link itself is checked after each command).
	for _, p := range readOnly {
		if filepath.Base(p) != "hooks" {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if t, err := filepath.EvalSymlinks(p); err == nil {
				readOnly = append(readOnly, t)
			}
		}
	}
	return readOnly, writable
}

// repoConfigRefs lists the files a repository config includes and the
// directory its core.hooksPath names, as git itself reads them (git
// config --includes --show-origin: git's parser, never a second one).
// Every command's sandbox asks, so the answer is kept while the config
// file is the same (size, modification time, inode); an included file that
// changes alone is read again at the config's next change (commands cannot
// change either: both are read-only to them).
func repoConfigRefs(root, config string) []string {
	fi, err := os.Stat(config)
	if err != nil {
		return nil
	}
	stamp := fmt.Sprint(fi.Size(), fi.ModTime().UnixNano(), fsinfo.Links(fi), inodeOf(fi))
	if c, ok := configRefsCache.Load(config); ok && c.(configRefs).stamp == stamp {
		return c.(configRefs).refs
	}
	refs := readConfigRefs(root, config)
	configRefsCache.Store(config, configRefs{stamp, refs})
	return refs
}

type configRefs struct {
	stamp string
	refs  []string
}

var configRefsCache sync.Map // config path → configRefs

func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// readConfigRefs asks git (repoConfigRefs).
func readConfigRefs(root, config string) []string {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	cmd := exec.Command(git, "config", "--file", config, "--includes", "--show-origin", "--null", "--list")
	cmd.Dir = root
	cmd.Env = append(secrets.Environ(os.Environ()), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var refs []string
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		origin, _ := strings.CutPrefix(string(fields[i]), "file:")
		key, val, _ := strings.Cut(string(fields[i+1]), "\n")
		if origin != "" && filepath.Clean(origin) != filepath.Clean(config) && !slices.Contains(refs, origin) {
			refs = append(refs, fsinfo.AbsIn(root, origin))
		}
		if strings.EqualFold(key, "core.hookspath") && val != "" {
			home, _ := os.UserHomeDir()
			refs = append(refs, fsinfo.AbsIn(root, datadir.ExpandHome(val, home)))
		}
	}
	return refs
}

// Life is the check that spans a stdio server's life: its git and
// agents/ (the files it changes are named per call), journaled as what
// (a server killed with Harvey is checked by its guardian, or at the next
// start).
func Life(root, what string) *Guard {
	c := &Guard{git: guardGit(root), agents: guardAgents(root)}
	c.git.inherit(oldestOpen(root)) // live.go
	c.keep(root, what)
	return c
}
