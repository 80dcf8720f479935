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

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// Every git directory the workspace's git uses, found once, as git finds
// it: the one definition the sandbox's read-only mounts (Protected)
// and the check after every command (git_guard.go) both read.
//
//   - An ordinary checkout: .git is the git directory and the common
//     directory.
//   - A linked worktree (git worktree add) or a submodule: .git is a file
//     ("gitdir: PATH") naming the git directory, often outside the
//     workspace; a worktree's git directory names the common directory in
//     its commondir file (the main checkout's .git, holding the config,
//     the hooks and every worktree's entry).
//   - Each entry under the common directory's worktrees/ is a sibling
//     worktree's git directory: its commondir and config.worktree decide
//     what that worktree's git runs, so they are protected too, though the
//     sibling itself lies outside the workspace.

// gitLayout is where the workspace's git keeps its state.
type gitLayout struct {
	dotGit string // ROOT/.git
	isFile bool   // .git is a file naming the git directory
	gitDir string // the workspace's own git directory
	common string // the common directory (gitDir for an ordinary checkout)
}

// readGitLayout reads the layout of the repository at root (ok false when
// root has no .git, or a .git that is neither a directory nor a "gitdir:"
// file).
func readGitLayout(root string) (gitLayout, bool) {
	l := gitLayout{dotGit: filepath.Join(root, ".git")}
	fi, err := os.Lstat(l.dotGit)
	switch {
	case err != nil:
		return l, false
	case fi.IsDir():
		l.gitDir = l.dotGit
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(l.dotGit)
		p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if err != nil || !ok || p == "" {
			return l, false
		}
		l.isFile, l.gitDir = true, fsinfo.AbsIn(root, p)
	default:
		return l, false
	}
	l.common = l.gitDir
	if c, err := os.ReadFile(filepath.Join(l.gitDir, "commondir")); err == nil && strings.TrimSpace(string(c)) != "" {
		l.common = fsinfo.AbsIn(l.gitDir, strings.TrimSpace(string(c)))
	}
	return l, true
}

// worktreeDirs are the git directories of every linked worktree of the
// repository (the common directory's worktrees/*), sorted.
func (l gitLayout) worktreeDirs() []string {
	entries, _ := os.ReadDir(filepath.Join(l.common, "worktrees"))
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(l.common, "worktrees", e.Name()))
		}
	}
	return out
}

// Pinned are the git directories in the workspace that a command's
// sandbox binds onto themselves: .git (and a git directory in the
// workspace that a .git file names) cannot be renamed or replaced by
// another with a config and hooks of the command's choosing. One outside
// the workspace is a mount of its own already (Protected's writable),
// which cannot be either.
func Pinned(root string) []string {
	l, ok := readGitLayout(root)
	if !ok {
		return nil
	}
	var out []string
	for _, d := range []string{l.gitDir, l.common} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && sandbox.Under(d, []string{root}) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// commonRunFiles are the files in a common directory (and in a submodule's
// git directory) whose change makes git run something, look elsewhere for
// what it runs, or hide a change from git status, or show the user a
// history other than the one on disk (grafts, shallow boundaries, objects
// borrowed from elsewhere; replace refs are git_replace.go): relative to
// the directory.
var commonRunFiles = []string{"config", "config.worktree", "commondir", "info/attributes", "info/exclude", "info/grafts", "shallow", "objects/info/alternates"}

// worktreeRunFiles are a linked worktree's own files of that kind (its git
// directory under worktrees/NAME): where its common directory is, what it
// adds to the config, and where its checkout is.
var worktreeRunFiles = []string{"commondir", "gitdir", "config.worktree"}

// gitRunPaths are the paths in the workspace that the user's git runs or
// reads as if they were its own settings: what the repository's config
// includes, and the relative paths in the repository's and the user's own
// config (core.hooksPath = .githooks, core.fsmonitor = ./tool,
// core.excludesFile = .ignore): git resolves them in the worktree, so a
// command that writes there writes what the user's next git runs. (The
// repository config's includes may lie in the common directory, outside
// the workspace but writable: they are listed wherever they are.)
func gitRunPaths(root string, l gitLayout) []string {
	var out []string
	add := func(p string) {
		if p != "" && p != root && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, d := range []string{l.gitDir, l.common} {
		for _, p := range repoConfigRefs(root, filepath.Join(d, "config")) {
			add(p)
		}
	}
	for _, rel := range userConfigRelPaths() {
		add(filepath.Join(root, rel))
	}
	return out
}

// pathKeys are the settings whose whole value is a path git resolves in
// the worktree when it is relative.
var pathKeys = []string{"core.hookspath", "core.attributesfile", "core.excludesfile", "core.fsmonitor"}

var userRelPaths sync.Map // the config files' stamps → []string

// userConfigRelPaths lists the relative paths in the user's own git
// config (global and system, as git reads them with their includes): the
// value of a path setting, and the program of a setting that runs one
// (the first word, without a leading "!") when it holds a "/" — a bare
// word is looked up on PATH, never in the worktree. Kept while the config
// files are the same.
func userConfigRelPaths() []string {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	home, _ := os.UserHomeDir()
	stamp := os.Getenv("GIT_CONFIG_GLOBAL") + "\x00" + os.Getenv("GIT_CONFIG_SYSTEM") + "\x00" + os.Getenv("GIT_CONFIG_NOSYSTEM")
	for _, f := range []string{os.Getenv("GIT_CONFIG_GLOBAL"), filepath.Join(home, ".gitconfig"), filepath.Join(xdgConfigHome(home), "git", "config"), "/etc/gitconfig"} {
		if fi, err := os.Stat(f); err == nil && f != "" {
			stamp += fmt.Sprint("\x00", f, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	if v, ok := userRelPaths.Load(stamp); ok {
		return v.([]string)
	}
	var paths []string
	for _, scope := range []string{"--global", "--system"} {
		cmd := exec.Command(git, "config", scope, "--includes", "--null", "--list")
		cmd.Dir = os.TempDir()
		cmd.Env = secrets.Environ(os.Environ())
		for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"} {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v) // where the user's git finds its config
			}
		}
		out, err := cmd.Output()
		if err != nil {
			continue
		}
		for _, rec := range bytes.Split(out, []byte{0}) {
			key, val, _ := strings.Cut(string(rec), "\n")
			if p := relPathIn(strings.ToLower(key), val); p != "" && !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	userRelPaths.Store(stamp, paths)
	return paths
}

// xdgConfigHome is $XDG_CONFIG_HOME, or ~/.config.
func xdgConfigHome(home string) string {
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(home, ".config")
}

// relPathIn is the relative path a setting's value names in the worktree
// ("" when none): see userConfigRelPaths.
func relPathIn(key, val string) string {
	val = strings.TrimSpace(val)
	if !slices.Contains(pathKeys, key) {
		val = strings.TrimPrefix(val, "!")
		if f := strings.Fields(val); len(f) > 0 {
			val = strings.Trim(f[0], `"'`)
		}
		if !strings.Contains(val, "/") {
			return ""
		}
	}
	switch {
	case val == "", filepath.IsAbs(val), strings.HasPrefix(val, "~"), strings.EqualFold(val, "true"), strings.EqualFold(val, "false"):
		return ""
	}
	rel := filepath.Clean(val)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return rel
}
