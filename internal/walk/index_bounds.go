package walk

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/termtext"
	"golang.org/x/sys/unix"
)

// Where the workspace index stops (issue 49): started by mistake above a
// project, it walked module caches, a mounted /proc and /sys, and left a
// 2.6 GB index. The walk the index makes (Walk, with these
// bounds; search_files has none) stays on the workspace's filesystem — a
// mounted proc, sys, dev, tmpfs or another disk is not entered — leaves
// out the well-known dependency and build directories even where
// .gitignore does not name them, and stops at a cap on files and bytes,
// saying what it left out. A workspace that is the home directory or /
// is not indexed unless the user's own config says so.

// Index caps (rag.workspace.max_files and max_bytes in your config).
const (
	defaultIndexMaxFiles = 20000
	defaultIndexMaxBytes = 256 << 20
)

// Bounds is what one index walk may take, and what it left out.
type Bounds struct {
	maxFiles int
	maxBytes int64
	dev      uint64 // the workspace's filesystem
	files    int
	bytes    int64
	capped   bool
	left     map[string]int            // directories left out, by why
	names    map[string]map[string]int // and their names, by why
	cutAt    string                    // the directory the walk was in when the cap stopped it
}

func NewBounds(root string, cfg config.RagWorkspace) *Bounds {
	b := &Bounds{maxFiles: cmpPositive(cfg.MaxFiles, defaultIndexMaxFiles), maxBytes: int64(cmpPositive(cfg.MaxBytes, defaultIndexMaxBytes)), left: map[string]int{}, names: map[string]map[string]int{}}
	var st unix.Stat_t
	if unix.Stat(root, &st) == nil {
		b.dev = uint64(st.Dev)
	}
	return b
}

func cmpPositive(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// alwaysDeps are directories of installed or generated code, whatever is
// around them.
var alwaysDeps = []string{"node_modules", "bower_components", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gradle", ".next", ".nuxt", ".terraform", ".venv", ".cargo", ".rustup"}

// skipDir reports whether the walk leaves out directory name (open as fd)
// in the directory parentFd, and counts why.
func (b *Bounds) skipDir(parentFd int, name string, fd int) bool {
	why := b.dirWhy(parentFd, name, fd)
	if why != "" {
		b.left[why]++
		if b.names[why] == nil {
			b.names[why] = map[string]int{}
		}
		b.names[why][name]++
	}
	return why != ""
}

func (b *Bounds) dirWhy(parentFd int, name string, fd int) string {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && b.dev != 0 && uint64(st.Dev) != b.dev {
		return "another filesystem (a mount: proc, sys, a disk)"
	}
	has := func(dirfd int, f string) bool {
		var s unix.Stat_t
		return unix.Fstatat(dirfd, f, &s, unix.AT_SYMLINK_NOFOLLOW) == nil
	}
	if why := cacheWhy(parentFd, name, fd, has); why != "" {
		return why
	}
	switch {
	case slices.Contains(alwaysDeps, name):
	case (name == "venv" || name == "env") && has(fd, "pyvenv.cfg"):
	case name == "target" && (has(parentFd, "Cargo.toml") || has(parentFd, "pom.xml")):
	case name == "vendor" && (has(fd, "modules.txt") || has(fd, "autoload.php")):
	case (name == "dist" || name == "build" || name == "out") && has(parentFd, "package.json"):
	default:
		return ""
	}
	return "dependencies or build output"
}

// caches are directories of caches and installed toolchains by their
// names (a home's, mostly): never a project.
var caches = []string{".cache", "go-build", ".npm", ".m2", ".ivy2", ".nuget", ".pyenv", ".nvm", ".volta", ".sdkman", ".asdf",
	".bun", ".deno", ".conda", ".local", ".vscode-server", ".cursor-server", ".Trash", "Trash"}

// cacheWhy says why a directory is a cache or a toolchain by what it is:
// a cache that says so (CACHEDIR.TAG, the cache directory tagging
// standard), Go's module cache (pkg/mod with cache/download), a conda
// install (conda-meta), or one of the names above.
func cacheWhy(parentFd int, name string, fd int, has func(int, string) bool) string {
	switch {
	case has(fd, "CACHEDIR.TAG"), name == "mod" && has(fd, "cache/download"), has(fd, "conda-meta"), slices.Contains(caches, name):
		return "caches and toolchains"
	}
	return ""
}

// take counts a file of size bytes; false once the cap is reached (the
// walk stops there).
func (b *Bounds) take(size int64) bool {
	if b.files >= b.maxFiles || b.bytes+size > b.maxBytes {
		b.capped = true
		return false
	}
	b.files++
	b.bytes += size
	return true
}

// Note says in one sentence what the walk left out ("" when nothing):
// how many directories, of what, by name, and where a cap stopped it.
func (b *Bounds) Note() string {
	var parts []string
	whys := make([]string, 0, len(b.left))
	for why := range b.left {
		whys = append(whys, why)
	}
	sort.Strings(whys)
	for _, why := range whys {
		parts = append(parts, fmt.Sprintf("%s of %s (%s)", termtext.Plural(b.left[why], "directory"), why, namesCounted(b.names[why], 6)))
	}
	out := ""
	if len(parts) > 0 {
		out = "The workspace index left out " + strings.Join(parts, " and ") + "."
	}
	if b.capped {
		where := ""
		if b.cutAt != "" {
			where = " in " + b.cutAt + ", and the files after it were not indexed"
		}
		out = strings.TrimSpace(out + fmt.Sprintf(" It stopped at its cap of %d files or %d MB%s (rag: {workspace: {max_files, max_bytes}} in your config).", b.maxFiles, b.maxBytes>>20, where))
	}
	return out
}

// namesCounted lists names with how often each was seen ("node_modules ×3,
// target"), at most max of them and how many more.
func namesCounted(names map[string]int, max int) string {
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if names[keys[i]] != names[keys[j]] {
			return names[keys[i]] > names[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var out []string
	for i, k := range keys {
		if i == max {
			out = append(out, fmt.Sprintf("%d more", len(keys)-max))
			break
		}
		if n := names[k]; n > 1 {
			k = fmt.Sprintf("%s ×%d", k, n)
		}
		out = append(out, k)
	}
	return strings.Join(out, ", ")
}

// Refusal refuses to index a workspace that is the home directory
// or / (the index would walk everything in it), unless the user's own
// config sets rag: {workspace: {index_home: true}} or the user said yes
// when the REPL asked (askIndexHome).
func Refusal(root string, cfg config.RagWorkspace, homeOK bool) error {
	if cfg.IndexHome || homeOK {
		return nil
	}
	home, _ := os.UserHomeDir()
	root = filepath.Clean(root)
	if root == "/" || (home != "" && root == filepath.Clean(home)) {
		return refusal.Errorf("refused: %s is your home directory or /, and the workspace index would walk all of it; start Harvey in a project, or set rag: {workspace: {index_home: true}} in your own config", root)
	}
	return nil
}
