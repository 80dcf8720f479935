// Package gitrepo is the private git directory Harvey runs git against, so
// that git never reads the repository's own configuration: a config file
// that holds only an allowlist of keys copied from the real one (the
// repository format and its extensions, read with git's own parser), and
// links to the data git needs (objects, refs, index) in the real .git/, with
// HEAD copied on every use. Hooks, drivers, fsmonitor, gpg.program,
// core.worktree, includes and every other setting of the repository simply
// do not exist for that git: a filter or diff driver that is not configured
// does nothing, so .gitattributes cannot name a program. Env is the whole
// environment git gets, built from nothing (no system, global or XDG
// config; HOME is the private directory).
//
// Contract: Dir refuses, with an error that wraps refusal.ErrRefused and says why
// in one line, a .git that is not a real directory, a commondir or
// alternates, a HEAD that is not a branch reference or object ID, and any
// link among the data it would use: each could lead git outside the
// workspace. The caller runs git itself (the RunGit it gives New reads the
// config, confined as the caller confines every git).
package gitrepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/refusal"
)

// gitConfigAllow are the only keys copied from the repository's config.
var gitConfigAllow = []string{
	"core.repositoryformatversion",
	"extensions.objectformat",
	"extensions.compatobjectformat",
	"extensions.refstorage",
}

// gitDataEntries are what the private directory links from the real .git/.
// Each must be a real file or directory (not a link); a missing one is left
// out. hooks/, config, commondir, info/grafts and the rest are not linked.
var gitDataEntries = []string{"objects", "refs", "packed-refs", "reftable", "index", "shallow", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD"}

// gitSettings are Harvey's own settings for the git it runs.
var gitSettings = [][2]string{
	{"core.bare", "false"},
	{"core.quotePath", "false"},
	{"core.pager", "cat"},
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.untrackedCache", "false"},
	{"core.precomposeUnicode", "false"},
	{"color.ui", "never"},
	{"diff.ignoreSubmodules", "all"},
	{"status.submoduleSummary", "false"},
	{"submodule.recurse", "false"},
	{"log.showSignature", "false"},
	{"gpg.program", "/nonexistent/harvey-no-gpg"},
	{"protocol.allow", "never"},
	{"fetch.recurseSubmodules", "false"},
	{"advice.detachedHead", "false"},
}

// RunGit runs git with argv in the directory home (the private directory,
// also its HOME) and the environment Env(home), and returns what it printed.
type RunGit func(ctx context.Context, home string, argv []string) []byte

// Repo is the private git directory for one workspace, built once.
type Repo struct {
	root *os.Root // the workspace
	path string   // the workspace's path
	run  RunGit
	once sync.Once
	dir  string // the private GIT_DIR ("" when it could not be built)
	err  error
}

// New is the private git directory for the workspace opened as root at path
// (built at the first Dir).
func New(root *os.Root, path string, run RunGit) *Repo {
	return &Repo{root: root, path: path, run: run}
}

// Dir builds (once per session) and checks (every call) the private git
// directory. A .git that is not a real directory, a
// commondir, alternates, or a linked entry that is itself a link, is
// refused with one line: each could lead git outside the workspace.
func (r *Repo) Dir(ctx context.Context) (string, error) {
	fi, err := r.root.Lstat(".git")
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("not a git repository (no .git directory in the workspace)")
	}
	if err != nil {
		return "", fmt.Errorf(".git: %s", fsinfo.ErrText(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return "", refusal.Errorf("refused: .git is %s, not a directory (a .git file or link can point git outside the workspace)", fsinfo.Kind(fi.Mode()))
	}
	if err := r.checkGitData(); err != nil {
		return "", err
	}
	r.once.Do(func() { r.dir, r.err = r.build(ctx) })
	if r.err != nil {
		return "", r.err
	}
	// HEAD is copied, not linked (git accepts a linked HEAD only when the
	// link says refs/...), and copied each time: the branch can change.
	head, err := r.root.ReadFile(".git/HEAD")
	if err != nil || !validGitHead(head) {
		return "", refusal.Errorf("refused: .git/HEAD is missing or not a branch reference or object ID")
	}
	if err := os.WriteFile(filepath.Join(r.dir, "HEAD"), head, 0o600); err != nil {
		return "", fmt.Errorf("git: %v", err)
	}
	return r.dir, nil
}

// validGitHead accepts "ref: refs/..." or an object ID, one line.
func validGitHead(b []byte) bool {
	s := strings.TrimSuffix(string(b), "\n")
	if ref, ok := strings.CutPrefix(s, "ref: "); ok {
		return strings.HasPrefix(ref, "refs/") && !strings.ContainsAny(ref, "\x00\n\r \\") && !strings.Contains(ref, "..")
	}
	return IsHexOID(s)
}

// checkGitData refuses a .git/ whose data could lead git elsewhere.
func (r *Repo) checkGitData() error {
	for _, name := range []string{"commondir", "objects/info/alternates", "objects/info/http-alternates"} {
		if _, err := r.root.Lstat(".git/" + name); err == nil {
			return refusal.Errorf("refused: .git/%s points git at another repository's data, which may be outside the workspace", name)
		}
	}
	for _, name := range append([]string{"HEAD"}, gitDataEntries...) {
		fi, err := r.root.Lstat(".git/" + name)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 || !(fi.IsDir() || fi.Mode().IsRegular()) {
			return refusal.Errorf("refused: .git/%s is %s; git data must be real files inside the workspace", name, fsinfo.Kind(fi.Mode()))
		}
	}
	// The object and ref directories themselves: a link among them could
	// serve another repository's objects or refs.
	for _, dir := range []string{".git/objects", ".git/objects/pack", ".git/refs"} {
		if err := r.noLinksIn(dir, dir == ".git/refs"); err != nil {
			return err
		}
	}
	return nil
}

// noLinksIn refuses a symlink among the entries of dir (and below, when
// deep). A missing dir is fine.
func (r *Repo) noLinksIn(dir string, deep bool) error {
	entries, err := fs.ReadDir(r.root.FS(), dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			return refusal.Errorf("refused: %s/%s is a symlink; git data must be real files inside the workspace", dir, e.Name())
		}
		if deep && e.IsDir() {
			if err := r.noLinksIn(dir+"/"+e.Name(), true); err != nil {
				return err
			}
		}
	}
	return nil
}

// build creates the private directory: config from the allowlist plus
// Harvey's settings, and links to the real data.
func (r *Repo) build(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", datadir.TempPrefix("git"))
	if err != nil {
		return "", fmt.Errorf("git: cannot prepare a private git directory: %v", err)
	}
	real := filepath.Join(r.path, ".git")
	var cfg strings.Builder
	values := r.readConfigAllowlist(ctx, filepath.Join(real, "config"), dir)
	sections := map[string][][2]string{}
	var order []string
	add := func(key, val string) {
		sec, name, _ := strings.Cut(key, ".")
		if _, ok := sections[sec]; !ok {
			order = append(order, sec)
		}
		sections[sec] = append(sections[sec], [2]string{name, val})
	}
	version := values["core.repositoryformatversion"]
	if version == "" {
		version = "0"
	}
	add("core.repositoryformatversion", version)
	for _, k := range gitConfigAllow[1:] {
		if v := values[k]; v != "" {
			add(k, v)
		}
	}
	for _, kv := range gitSettings {
		add(kv[0], kv[1])
	}
	for _, sec := range order {
		fmt.Fprintf(&cfg, "[%s]\n", sec)
		for _, kv := range sections[sec] {
			fmt.Fprintf(&cfg, "\t%s = %s\n", kv[0], gitConfigQuote(kv[1]))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(cfg.String()), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("git: cannot prepare a private git directory: %v", err)
	}
	for _, name := range gitDataEntries {
		// A link is made even when the entry does not exist yet (the index
		// and packed-refs appear later); git treats a dangling one as absent.
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(dir, name)); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("git: cannot prepare a private git directory: %v", err)
		}
	}
	// info/exclude (the user's ignore rules) is useful to status; nothing
	// else in info/ is linked.
	if err := os.Mkdir(filepath.Join(dir, "info"), 0o700); err == nil {
		_ = os.Symlink(filepath.Join(real, "info", "exclude"), filepath.Join(dir, "info", "exclude"))
	}
	return dir, nil
}

// readConfigAllowlist reads the allowlisted keys from a config file with
// git's own parser (no includes: git config --file ignores them unless
// asked). It runs git with the same clean environment as every git call.
func (r *Repo) readConfigAllowlist(ctx context.Context, file, home string) map[string]string {
	out := map[string]string{}
	argv := []string{"git", "config", "--file", file, "--no-includes", "--null", "--get-regexp", `^(core\.repositoryformatversion|extensions\.)`}
	sc := bufio.NewScanner(strings.NewReader(string(r.run(ctx, home, argv))))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		for i, b := range data {
			if b == 0 {
				return i + 1, data[:i], nil
			}
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), "\n")
		key = strings.ToLower(key)
		if slices.Contains(gitConfigAllow, key) && gitConfigValueOK(val) {
			out[key] = val
		}
	}
	return out
}

// gitConfigValueOK accepts the short word values those keys take.
func gitConfigValueOK(v string) bool {
	if v == "" || len(v) > 32 {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// gitConfigQuote writes a value git reads back as it is.
func gitConfigQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// Env is the whole environment git gets: nothing inherited but PATH and
// a locale; no system, global or XDG configuration.
func Env(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS=true",
	}
}

// Close removes the private git directory.
func (r *Repo) Close() {
	if r != nil && r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

// IsHexOID reports whether s is a full object ID (SHA-1 or SHA-256).
func IsHexOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
