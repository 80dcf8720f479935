package sandboxpolicy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// What a sandboxed command sees of the machine: a view, not the system.
//
//   - agents/ is an empty read-only directory (Harvey's history, sessions
//     and knowledge base are not the command's business);
//   - nothing else exists: the command's root is built from what it may read
//     and write (internal/sandbox: viewMounts), so no pathname socket of the
//     system or the user's session (Docker's, D-Bus, ssh-agent, gpg-agent)
//     can be reached, and /run and /var/lib are not there;
//   - .git/ is writable for commits, branches, stashes and rebases, but the
//     parts that make git run programs — config, config.worktree, hooks/,
//     and the same under modules/ — are read-only (hooks/ is created when
//     missing, so none can appear), and a commondir file a command leaves
//     behind (which would point git at another config) is removed;
//   - git reads a global config Harvey builds from an allowlist of the
//     user's keys (identity, default branch, line endings, ...): never
//     credential helpers, URL rewrites, aliases, hook paths or programs;
//   - the toolchains the user's PATH leads to (rustup and cargo homes,
//     pyenv, nvm, volta, asdf, sdkman roots, ~/.local, ~/go/bin) are
//     readable and executable, found from PATH and the toolchains' own
//     variables rather than from a list of install places; credential files
//     inside them (cargo's) read as empty.

// ToolchainRoots finds what the user's toolchains need to be read and
// executed: each PATH entry outside the system's trees (in the home, or
// /home/linuxbrew), resolved through links, with its
// parent (~/.cargo/bin → ~/.cargo; ~/.pyenv/shims → ~/.pyenv; an nvm
// version's bin → the version), and the roots the toolchains' own
// variables name (with their defaults when their bin is on PATH).
func ToolchainRoots(env []string, home string) []string {
	get := func(k string) string { return envValue(env, k) }
	r := &rootSet{home: home}
	local := filepath.Join(home, ".local")
	for _, d := range filepath.SplitList(get("PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		if home != "" && sandbox.Under(filepath.Clean(d), []string{filepath.Join(local, "bin")}) {
			for _, t := range localTrees(local) {
				r.add(t)
			}
			continue
		}
		if home != "" && filepath.Clean(d) == local || filepath.Clean(d) == filepath.Join(local, "share") {
			continue // never the whole of ~/.local or ~/.local/share
		}
		for _, p := range []string{d, resolveLinks(d)} {
			if filepath.Base(p) == "bin" || filepath.Base(p) == "shims" {
				r.add(filepath.Dir(p))
			} else {
				r.add(p)
			}
		}
	}
	onPath := func(dir string) bool {
		return slices.ContainsFunc(filepath.SplitList(get("PATH")), func(d string) bool { return sandbox.Under(d, []string{dir}) })
	}
	for _, t := range []struct{ env, def string }{
		{"RUSTUP_HOME", ".rustup"}, {"CARGO_HOME", ".cargo"}, {"PYENV_ROOT", ".pyenv"}, {"NVM_DIR", ".nvm"},
		{"VOLTA_HOME", ".volta"}, {"ASDF_DATA_DIR", ".asdf"}, {"SDKMAN_DIR", ".sdkman"}, {"BUN_INSTALL", ".bun"}, {"DENO_INSTALL", ".deno"},
	} {
		if v := get(t.env); v != "" {
			r.add(v)
		} else if onPath(filepath.Join(home, t.def)) || t.env == "RUSTUP_HOME" && onPath(filepath.Join(home, ".cargo")) {
			r.add(filepath.Join(home, t.def)) // rustup's cargo proxies read ~/.rustup
		}
	}
	return r.out
}

// localTrees is what a toolchain in ~/.local needs: its bin and lib, and
// the install trees its programs link into (pipx's and uv's venvs under
// ~/.local/share) — never the rest of ~/.local/share (the desktop's
// Trash, other programs' data, Harvey's cache layers).
func localTrees(local string) []string {
	out := []string{filepath.Join(local, "bin"), filepath.Join(local, "lib")}
	entries, _ := os.ReadDir(filepath.Join(local, "bin"))
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		t, err := filepath.EvalSymlinks(filepath.Join(local, "bin", e.Name()))
		if err != nil || !sandbox.Under(t, []string{local}) || sandbox.Under(t, []string{filepath.Join(local, "bin"), filepath.Join(local, "lib")}) {
			continue
		}
		tree := filepath.Dir(t)
		if filepath.Base(tree) == "bin" {
			tree = filepath.Dir(tree) // a venv: ~/.local/share/pipx/venvs/NAME
		}
		if tree != local && tree != filepath.Join(local, "share") && !slices.Contains(out, tree) {
			out = append(out, tree)
		}
	}
	return out
}

// envValue is k's value in env ("" when it is not set).
func envValue(env []string, k string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}

// rootSet collects toolchain roots: absolute, cleaned, each once, never
// one of the system's trees (readable already), the home itself (PATH=~/bin)
// or what holds it.
type rootSet struct {
	home string
	out  []string
}

// readableAlready are system trees every command reads already: a
// toolchain root inside one adds nothing.
var readableAlready = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt", "/nix", "/snap"}

func (r *rootSet) add(p string) {
	if p == "" || !filepath.IsAbs(p) {
		return
	}
	p = filepath.Clean(p)
	switch {
	case sandbox.Under(p, readableAlready): // readable already
	case p == "/" || r.home != "" && sandbox.Under(r.home, []string{p}):
		// never the home itself (PATH=~/bin) or what holds it
	case !slices.Contains(r.out, p):
		r.out = append(r.out, p)
	}
}

// resolveLinks is p with its links resolved, or p.
func resolveLinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// MaskedCredentials lists the files a command could read in the home's
// readable trees that the denylist (the one definition of secret files)
// names: cargo's credentials in ~/.cargo, say. Each tree's own entries are
// checked (credentials sit at a toolchain's root, not in its caches).
func MaskedCredentials(home string, trees []string) []string {
	var out []string
	for _, tree := range trees {
		if tree == home || !sandbox.Under(tree, []string{home}) {
			continue
		}
		entries, _ := os.ReadDir(tree)
		for _, e := range entries {
			p := filepath.Join(tree, e.Name())
			rel, err := filepath.Rel(home, p)
			if err == nil && e.Type().IsRegular() && secrets.FileDenied(rel) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// gitGlobalKeys are the user's git settings a command's git may see: who
// you are and how files are written, never what runs programs or holds
// credentials (credential.*, url.*.insteadOf, alias.*, core.hooksPath,
// core.fsmonitor, core.sshCommand, gpg.*, http.*, include.*, filters and
// drivers are all left out by not being here).
var gitGlobalKeys = []string{"user.name", "user.email", "init.defaultbranch", "core.autocrlf", "core.eol", "core.safecrlf",
	"core.filemode", "core.ignorecase", "core.quotepath", "core.precomposeunicode", "core.whitespace", "safe.directory",
	"pull.rebase", "pull.ff", "push.default", "push.autosetupremote", "merge.ff", "merge.conflictstyle", "rebase.autosquash",
	"rebase.autostash", "diff.algorithm", "diff.renames", "color.ui", "commit.verbose", "status.showuntrackedfiles",
	"fetch.prune", "branch.autosetuprebase", "log.date", "tag.sort", "column.ui", "rerere.enabled", "advice.detachedhead"}

var sandboxGitConfig struct {
	once sync.Once
	path string
}

// commandGitConfig writes (once a session) the global git config commands
// see, in the session's private TMPDIR, and returns its path ("" when
// there is no TMPDIR). The user's config is read by git itself (its
// parser, its includes), never by a second parser of ours.
func commandGitConfig() string {
	sandboxGitConfig.once.Do(func() {
		tmp := sandbox.Available().Tmp
		if tmp == "" {
			return
		}
		var b strings.Builder
		b.WriteString("# Written by Harvey: the keys of your git config that commands may see.\n")
		if git, err := exec.LookPath("git"); err == nil {
			cmd := exec.Command(git, "config", "--global", "--includes", "--null", "--list")
			cmd.Env = append(secrets.Environ(os.Environ()), "GIT_CONFIG_NOSYSTEM=1")
			if out, err := cmd.Output(); err == nil {
				writeGitKeys(&b, out)
			}
		}
		p := filepath.Join(tmp, "gitconfig")
		if os.WriteFile(p, []byte(b.String()), 0o600) == nil {
			sandboxGitConfig.path = p
		}
	})
	return sandboxGitConfig.path
}

// writeGitKeys writes the allowlisted entries of git config --null --list
// output ("key\nvalue\0" each) as a config file.
func writeGitKeys(b *strings.Builder, out []byte) {
	for _, rec := range bytes.Split(out, []byte{0}) {
		key, val, _ := strings.Cut(string(rec), "\n")
		key = strings.ToLower(key)
		if !slices.Contains(gitGlobalKeys, key) && !strings.HasPrefix(key, "color.") {
			continue
		}
		sec, name := key[:strings.LastIndexByte(key, '.')], key[strings.LastIndexByte(key, '.')+1:]
		if strings.ContainsAny(sec, ".\"\\") || strings.ContainsAny(val, "\x00") {
			continue // a subsection (color.diff.meta): not needed
		}
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
		fmt.Fprintf(b, "[%s]\n\t%s = \"%s\"\n", sec, name, r.Replace(val))
	}
}

// CacheOverlays gives each cache its private layer for this workspace:
// DATA/caches/HASH(workspace)/PURPOSE/N/{upper,work}. A layer that cannot
// be made (or lies inside a cache) leaves that cache without one.
func CacheOverlays(workspace, purpose string, caches []string) []sandbox.CacheLayer {
	data := datadir.Path()
	if data == "" {
		return nil
	}
	base := filepath.Join(data, "caches", datadir.Key(workspace), purpose)
	var out []sandbox.CacheLayer
	for _, c := range caches {
		d := filepath.Join(base, datadir.Key(c))
		if sandbox.Under(d, caches) {
			continue
		}
		l := sandbox.CacheLayer{Lower: c, Upper: filepath.Join(d, "upper"), Work: filepath.Join(d, "work"), Empty: filepath.Join(d, "empty")}
		if !dirExists(l.Empty) && (os.MkdirAll(l.Upper, 0o700) != nil || os.MkdirAll(l.Work, 0o700) != nil || os.MkdirAll(l.Empty, 0o700) != nil) {
			continue // made last: once it is there, the three are
		}
		out = append(out, l)
	}
	return out
}

// InstallTree is what a program named by path needs to be read and run:
// the project a node_modules/.bin link leads into (the directory holding
// node_modules), a bin directory's parent, or the program's own directory.
// System trees need nothing ("" results are dropped by the caller).
func InstallTree(prog string) []string {
	p, err := LookPath(prog)
	if err != nil || !filepath.IsAbs(p) {
		return nil
	}
	var out []string
	for _, q := range []string{p, resolveLinks(p)} {
		dir := filepath.Dir(q)
		if i := strings.LastIndex(q, "/node_modules/"); i > 0 {
			out = append(out, q[:i])
		} else if filepath.Base(dir) == "bin" {
			out = append(out, filepath.Dir(dir))
		} else {
			out = append(out, dir)
		}
	}
	return slices.DeleteFunc(out, func(d string) bool {
		return sandbox.Under(d, []string{"/usr", "/bin", "/sbin", "/lib", "/etc", "/opt"}) || d == "/"
	})
}
