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
// check after it) and, of your home, only what the hook needs (issue 75):
// what its command names — its program or script, with the directory that
// holds it (a script reads what lies beside it), readable; a file it
// redirects its output to (>> ~/.claude/log.txt), writable — and what your
// config lists for it (readable:, writable:). Never a credential file (the
// sensitive-file denylist, internal/secrets) nor Harvey's own data; never
// the settings, instructions, commands, agents or skills of Harvey or
// another agent (agentConfig), unless the hook's own command or lists
// name that path. Everything else of your home (~/.config and ~/.claude
// whole, other projects, documents, keys) does not exist for it. So a
// hook that runs the workspace's code (go test, make, npx prettier) cannot
// reach past the workspace, read another tool's token or rewrite what
// another agent runs unsandboxed, whatever that code does; a hook your own
// config marks unsandboxed runs as your program.

// HookView is what a hook of the user's own gets besides a command's view.
type HookView struct {
	Home     string
	Argv     []string // its command: what it names under the home (readable) and redirects to (writable)
	Readable []string // more readable paths (readable:)
	Writable []string // more writable paths (writable:)
	Network  bool     // the network, not only the registries
}

// agentConfig is what tells an agent — Harvey or another — what to do
// under the home: its settings, instructions, commands, agents, skills and
// plugins. A hook reads or writes none of it unless its own command or
// lists name that path. (Hook scripts, ~/.claude/hooks, are readable where
// a hook's command names one, as a script's directory, and writable only
// where a list names them.)
var agentConfig = []string{
	".claude/settings.json", ".claude/settings.local.json", ".claude/CLAUDE.md", ".claude/commands", ".claude/agents",
	".claude/skills", ".claude/plugins", ".claude/output-styles", ".claude/keybindings.json", ".claude.json",
	".codex", ".gemini", ".config/harvey", ".config/opencode", ".config/goose", ".config/crush", ".config/zed",
	".cursor", ".continue", ".aider.conf.yml", ".config/github-copilot", ".copilot", ".qwen", ".amp", ".config/amp",
}

// hookHomeDepth bounds how deep the view looks for denied files before it
// grants a directory whole.
const hookHomeDepth = 4

// readable is the part of the home the hook may read: what its command
// names (each file with its directory) and its readable: list, each covered
// (homeCover).
func (v *HookView) readable() []string {
	if v.Home == "" {
		return nil
	}
	var out []string
	for _, p := range append(v.named(), v.listed(v.Readable)...) {
		out = append(out, v.cover(p)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// writable is the hook's writable: list and the files its command
// redirects its output to, less anything denied and the home itself. What
// does not exist yet is made, so a hook's log works the first time: a
// listed path as a directory, unless its name has an extension (log.txt)
// and it does not end in /; a redirect's file, empty, where its directory
// exists.
func (v *HookView) writable() []string {
	var out []string
	for _, raw := range v.Writable {
		p := filepath.Clean(datadir.ExpandHome(raw, v.Home))
		if !filepath.IsAbs(p) || p == v.Home || p == "/" || sandbox.Under(p, []string{v.Home}) && v.denied(p) {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			if filepath.Ext(p) != "" && !strings.HasSuffix(raw, "/") {
				makeFile(p, true)
			} else {
				os.MkdirAll(p, 0o700)
			}
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	for _, p := range v.redirects() {
		if v.denied(p) {
			continue
		}
		makeFile(p, false)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

// makeFile makes p an empty file (0600) where nothing is, its directory
// too with dirs.
func makeFile(p string, dirs bool) {
	if _, err := os.Lstat(p); err == nil {
		return
	}
	if dirs {
		os.MkdirAll(filepath.Dir(p), 0o700)
	}
	if f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	}
}

// listed is a readable: or writable: list as absolute, clean paths.
func (v *HookView) listed(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p = filepath.Clean(datadir.ExpandHome(p, v.Home)); filepath.IsAbs(p) {
			out = append(out, p)
		}
	}
	return out
}

// words are the hook's command's words that may be paths: ~, $HOME and
// ${HOME} spelled out, quotes dropped.
func (v *HookView) words(a string) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(a, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()<>`'\"=", r) }) {
		out = append(out, v.expand(tok))
	}
	return out
}

func (v *HookView) expand(tok string) string {
	tok = strings.Replace(strings.Replace(tok, "${HOME}", v.Home, 1), "$HOME", v.Home, 1)
	return datadir.ExpandHome(tok, v.Home)
}

// underHome reports whether p is a path under the home (not the home).
func (v *HookView) underHome(p string) bool {
	return filepath.IsAbs(p) && p != v.Home && sandbox.Under(p, []string{v.Home})
}

// named lists the existing paths under the home that the hook's command
// names (its program, a script after sh -c), with the directory of each
// file (a script reads what lies beside it); a file it only redirects
// output to is writable, not named (redirects).
func (v *HookView) named() []string {
	targets := v.redirects()
	var out []string
	for _, a := range v.Argv {
		for _, tok := range v.words(a) {
			if !v.underHome(tok) || slices.Contains(targets, filepath.Clean(tok)) {
				continue
			}
			fi, err := os.Stat(tok)
			if err != nil {
				continue
			}
			out = append(out, filepath.Clean(tok))
			if !fi.IsDir() && filepath.Dir(tok) != v.Home {
				out = append(out, filepath.Dir(tok))
			}
		}
	}
	return out
}

// redirects lists the files under the home that the hook's command (a
// string sh -c runs) sends output to: the word after > or >> (2>>, &>)
// outside quotes.
func (v *HookView) redirects() []string {
	var out []string
	for _, a := range v.Argv {
		for _, w := range redirectTargets(a) {
			if p := filepath.Clean(v.expand(w)); v.underHome(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// redirectTargets are the words after an output redirection in the shell
// line s: > or >> outside quotes, then the word, its quotes removed; a
// target that is a descriptor (>&2) is none.
func redirectTargets(s string) []string {
	var out []string
	var quote rune
	for i := 0; i < len(s); i++ {
		c := rune(s[i])
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
			continue
		case c == '\\':
			i++
			continue
		case c == '\'' || c == '"':
			quote = c
			continue
		case c != '>':
			continue
		}
		j := i + 1
		if j < len(s) && (s[j] == '>' || s[j] == '|') {
			j++
		}
		if j < len(s) && s[j] == '&' {
			continue // >&2: a descriptor
		}
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		w, end := shellWord(s, j)
		if w != "" {
			out = append(out, w)
		}
		i = end - 1
	}
	return out
}

// shellWord reads one word of s from i (quotes removed), and where it ends.
func shellWord(s string, i int) (string, int) {
	var b strings.Builder
	var quote byte
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b.WriteByte(c)
		case c == '\'' || c == '"':
			quote = c
		case strings.IndexByte(" \t\n;&|()<>`", c) >= 0:
			return b.String(), i
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), i
}

// explicit reports whether p is a path the hook's own config names: in its
// command, or under a path its lists name.
func (v *HookView) explicit(p string) bool {
	for _, a := range v.Argv {
		for _, tok := range v.words(a) {
			if filepath.Clean(tok) == p {
				return true
			}
		}
	}
	return slices.ContainsFunc(v.listed(append(slices.Clone(v.Readable), v.Writable...)), func(l string) bool {
		return p == l || sandbox.Under(p, []string{l})
	})
}

// cover is path p (under home) as readable trees: p whole when nothing
// under it to hookHomeDepth levels is denied, else its entries one by one,
// leaving the denied ones out. A link is not followed (in the sandbox it
// leads to nothing that was not granted); a link's target under the home
// is covered in its own right, so a dotfile manager's links work.
func (v *HookView) cover(p string) []string {
	out, _ := v.coverAt(p, hookHomeDepth, 0)
	return out
}

// coverAt returns the trees of p and whether that is p whole.
func (v *HookView) coverAt(p string, depth, hops int) ([]string, bool) {
	if v.denied(p) {
		return nil, false
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, false
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(p)
		if err != nil || hops > 4 || !v.underHome(t) {
			return nil, true // shows nothing in the sandbox: harmless
		}
		out, _ := v.coverAt(t, depth, hops+1)
		return out, true
	}
	if !fi.IsDir() {
		return []string{p}, true
	}
	if depth == 0 {
		if v.holdsDenied(p) {
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
		sub, w := v.coverAt(filepath.Join(p, e.Name()), depth-1, hops)
		out = append(out, sub...)
		whole = whole && w
	}
	if whole && !v.holdsDenied(p) {
		return []string{p}, true
	}
	return out, false
}

// denied reports whether p (under the home) is a path no hook may see: one
// the sensitive-file denylist names, Harvey's own data (its OAuth tokens,
// journals and trust store), or an agent's configuration the hook's own
// config does not name.
func (v *HookView) denied(p string) bool {
	rel, err := filepath.Rel(v.Home, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return true
	}
	rel = filepath.ToSlash(rel)
	if secrets.FileDenied(rel) {
		return true
	}
	if d := datadir.Path(); d != "" && (p == d || sandbox.Under(p, []string{d})) {
		return true
	}
	return isAgentConfig(rel) && !v.explicit(p)
}

// isAgentConfig reports whether rel (to the home) is or lies under an
// agent's configuration.
func isAgentConfig(rel string) bool {
	for _, a := range agentConfig {
		if strings.EqualFold(rel, a) || len(rel) > len(a) && strings.EqualFold(rel[:len(a)+1], a+"/") {
			return true
		}
	}
	return false
}

// holdsDenied reports whether p holds, beneath the depth the view looked,
// what is never granted whole: Harvey's data directory or an agent's
// configuration (a directory such as ~/.config that holds one is granted
// entry by entry).
func (v *HookView) holdsDenied(p string) bool {
	for _, d := range append([]string{datadir.Path()}, v.agentPaths()...) {
		if d != "" && d != p && sandbox.Under(d, []string{p}) && v.denied(d) {
			return true
		}
	}
	return false
}

// agentPaths are agentConfig's paths under this home.
func (v *HookView) agentPaths() []string {
	out := make([]string, len(agentConfig))
	for i, a := range agentConfig {
		out[i] = filepath.Join(v.Home, a)
	}
	return out
}
