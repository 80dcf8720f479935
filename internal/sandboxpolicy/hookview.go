package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// A hook of your own runs in a sandbox made for it: a command's view (the
// workspace writable, the toolchains and caches, the registry proxy, the
// check after it) and, of your home, what hooks are written to use —
// ~/.claude and ~/.config readable less the sensitive-file denylist and
// Harvey's own data, the files its command names, ~/.claude and the
// paths it lists writable, your environment less what looks secret, and
// the network when it says so. Everything else of your home (other
// projects, documents, keys) does not exist for it. So a hook that runs
// the workspace's code (go test, make, npx prettier) cannot reach past
// the workspace, whatever that code does; a hook your own config marks
// unsandboxed runs as your program.

// HookView is what a hook of the user's own gets besides a command's view.
type HookView struct {
	Home     string
	Argv     []string // its command: the files it names under the home become readable
	Writable []string // more writable paths (~/.claude always, where it exists)
	Network  bool     // the network, not only the registries
}

// hookHomeDepth bounds how deep the view looks for denied files before it
// grants a directory whole.
const hookHomeDepth = 4

// readable is the part of the home the hook may read: ~/.claude and
// ~/.config, and what its command names, each covered (homeCover).
func (v *HookView) readable() []string {
	if v.Home == "" {
		return nil
	}
	var out []string
	for _, p := range append([]string{filepath.Join(v.Home, ".claude"), filepath.Join(v.Home, ".config")}, v.named()...) {
		out = append(out, homeCover(v.Home, p, hookHomeDepth)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// writable is ~/.claude (where it exists) and the hook's own list (a
// directory it names that does not exist yet is made, so a hook's log
// directory works the first time), less anything denied and the home
// itself.
func (v *HookView) writable() []string {
	var out []string
	claude := filepath.Join(v.Home, ".claude")
	for _, p := range append([]string{claude}, v.Writable...) {
		p = filepath.Clean(datadir.ExpandHome(p, v.Home))
		if !filepath.IsAbs(p) || p == v.Home || p == "/" || sandbox.Under(p, []string{v.Home}) && hookDenied(v.Home, p) {
			continue
		}
		if _, err := os.Stat(p); err != nil && p != claude {
			os.MkdirAll(p, 0o700)
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// named lists the existing paths under the home that the hook's command
// names (its program, a script after sh -c, ~ and $HOME spelled out), with
// the directory of each file (a script reads what lies beside it).
func (v *HookView) named() []string {
	var out []string
	for _, a := range v.Argv {
		for _, tok := range strings.FieldsFunc(a, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()<>`'\"=", r) }) {
			tok = strings.Replace(strings.Replace(tok, "${HOME}", v.Home, 1), "$HOME", v.Home, 1)
			tok = datadir.ExpandHome(tok, v.Home)
			if !filepath.IsAbs(tok) || !sandbox.Under(tok, []string{v.Home}) || tok == v.Home {
				continue
			}
			fi, err := os.Stat(tok)
			if err != nil {
				continue
			}
			if !fi.IsDir() {
				tok = filepath.Dir(tok)
			}
			if tok != v.Home {
				out = append(out, tok)
			}
		}
	}
	return out
}

// homeCover is path p (under home) as readable trees: p whole when nothing
// under it to depth levels is denied, else its entries one by one, leaving
// the denied ones out. A link is not followed (in the sandbox it leads to
// nothing that was not granted); a link's target under the home is
// covered in its own right, so a dotfile manager's links work.
func homeCover(home, p string, depth int) []string {
	out, _ := cover(home, p, depth, 0)
	return out
}

// cover returns the trees of p and whether that is p whole.
func cover(home, p string, depth, hops int) ([]string, bool) {
	if hookDenied(home, p) {
		return nil, false
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, false
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(p)
		if err != nil || hops > 4 || !sandbox.Under(t, []string{home}) || t == home {
			return nil, true // shows nothing in the sandbox: harmless
		}
		out, _ := cover(home, t, depth, hops+1)
		return out, true
	}
	if !fi.IsDir() {
		return []string{p}, true
	}
	if depth == 0 {
		if holdsData(p) {
			return nil, false
		}
		return []string{p}, true
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, false
	}
	var out []string
	whole := true
	for _, e := range entries {
		sub, w := cover(home, filepath.Join(p, e.Name()), depth-1, hops)
		out = append(out, sub...)
		whole = whole && w
	}
	if whole && !holdsData(p) {
		return []string{p}, true
	}
	return out, false
}

// hookDenied reports whether p (under home) is a path no hook may see: one
// the sensitive-file denylist names, or Harvey's own data (its OAuth
// tokens, journals and trust store).
func hookDenied(home, p string) bool {
	rel, err := filepath.Rel(home, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return true
	}
	if secrets.FileDenied(filepath.ToSlash(rel)) {
		return true
	}
	d := datadir.Path()
	return d != "" && (p == d || sandbox.Under(p, []string{d}))
}

// holdsData reports whether Harvey's data directory lies under p: p is
// never granted whole.
func holdsData(p string) bool {
	d := datadir.Path()
	return d != "" && d != p && sandbox.Under(d, []string{p})
}
