// Package gitargs is the grammar of the git arguments Harvey accepts: an
// allowlist of read-only subcommands (Subcommands) and, per subcommand, of
// options, parsed the way git parses them (short clusters such as -wS<x>, a
// short option's value glued on or in the next argument, --opt=value and
// --opt value, -- and --end-of-options) and emitted again in one canonical
// spelling (--long=value, or -xVALUE for a short-only option), so what git
// reads is exactly what was checked.
//
// Contract: Vet returns the options in canonical spelling and the other
// arguments as typed (operands before "--", paths after it) for the caller
// to resolve, or an error. An option not on the list, an abbreviation,
// standard input ("-") and control characters are refused with an error
// that wraps refusal.ErrRefused and names what is allowed; a malformed value of an
// allowed option is an error that says which. No listed option names a
// file, and every %G placeholder of --format (it runs gpg) is refused.
// SplitRevPath and SplitRange split REV:PATH and A..B as git does.
package gitargs

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/harvey-agent/harvey/internal/lazyre"
	"github.com/harvey-agent/harvey/internal/refusal"
)

type gitValue int

const (
	gvNone     gitValue = iota // a flag
	gvRequired                 // --opt=V, --opt V, -oV, -o V
	gvGlued                    // optional, only --opt=V or -oV (git's optional values)
)

type gitOpt struct {
	long  string // without "--"; "" for short-only
	short byte   // 0 for long-only
	value gitValue
	check func(string) error
}

// The value patterns, compiled when first used: every program Harvey
// starts (the sandbox's launcher is Harvey) runs this package's
// initialisers, and few of them ever check a git argument.
var (
	reCount      = lazyre.New(`^[0-9]{1,7}$`)
	reDate       = lazyre.New(`^[A-Za-z0-9 :.,+/_-]{1,64}$`)
	reDiffFilter = lazyre.New(`^[ACDMRTUXBacdmrtuxb*]{1,16}$`)
	reSimilarity = lazyre.New(`^[0-9]{1,3}%?$`)
	reBlameRange = lazyre.New(`^[0-9]{1,9}(,[+-]?([0-9]{1,9})?)?$`)
	reDateMode   = lazyre.New(`^((relative|local|iso|iso8601|iso-strict|iso8601-strict|rfc|rfc2822|short|raw|human|unix|default)(-local)?|format(-local)?:[^\x00-\x1f]{0,64})$`)
)

func matches(re func() *regexp.Regexp, what string) func(string) error {
	return func(v string) error {
		if !re().MatchString(v) {
			return fmt.Errorf("bad %s %q", what, v)
		}
		return nil
	}
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(vals, v) {
			return fmt.Errorf("%q is not one of %s", v, strings.Join(vals, ", "))
		}
		return nil
	}
}

// textValue accepts a search string: one line, bounded.
func textValue(v string) error {
	if len(v) > 256 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("bad value %q (one line, at most 256 bytes)", v)
	}
	return nil
}

// gitPrettyNames are git's named formats.
var gitPrettyNames = []string{"oneline", "short", "medium", "full", "fuller", "reference", "raw", "email", "mboxrd"}

// checkFormat accepts a named format or a format string, read with git's
// placeholder grammar (pretty-formats): "%%", "%n", "%xNN", a modifier
// (+, - or space) before any placeholder, "%C..." colours, "%w(...)",
// "%<(...)" and the other column placeholders, "%(...)" atoms, and the
// one- or two-letter placeholders. Every %G placeholder, with or without a
// modifier (%G?, %+GS, %<(9)%GK), verifies a signature, which runs gpg: refused.
func checkFormat(v string) error {
	if slices.Contains(gitPrettyNames, v) {
		return nil
	}
	if len(v) > 512 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("bad format %q", v)
	}
	body := v
	for _, p := range []string{"format:", "tformat:"} {
		body = strings.TrimPrefix(body, p)
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '%' {
			continue
		}
		i++
		if i < len(body) && strings.IndexByte("+- ", body[i]) >= 0 {
			i++ // a modifier applies to the placeholder that follows
		}
		if i >= len(body) {
			break
		}
		switch c := body[i]; c {
		case 'G':
			return fmt.Errorf("format placeholder %%G%s verifies signatures (runs gpg); not allowed", body[i+1:min(i+2, len(body))])
		case '(', '<', '>', 'w', 'C':
			i = skipFormatArgument(body, i)
		}
	}
	return nil
}

// skipFormatArgument, at the placeholder body[i] of %(atom), %<(N),
// %>|(N), %><(N), %w(...) or %C(...), returns the index of the ')' that
// ends its parenthesised argument (a %G inside it is not a placeholder),
// or i when it has none.
func skipFormatArgument(body string, i int) int {
	c, k := body[i], i
	if c != '(' {
		k++
		for n := 0; n < 2 && (c == '<' || c == '>') && k < len(body) && strings.IndexByte("<>|", body[k]) >= 0; n++ {
			k++
		}
	}
	if k < len(body) && body[k] == '(' {
		if j := strings.IndexByte(body[k:], ')'); j >= 0 {
			return k + j
		}
	}
	return i
}

var (
	gitDiffOpts = []gitOpt{
		{long: "patch", short: 'p'}, {long: "patch", short: 'u'},
		{long: "no-patch", short: 's'},
		{long: "unified", short: 'U', value: gvRequired, check: matches(reCount, "line count")},
		{long: "stat"}, {long: "shortstat"}, {long: "numstat"}, {long: "summary"},
		{long: "name-only"}, {long: "name-status"}, {long: "raw"},
		{long: "ignore-all-space", short: 'w'}, {long: "ignore-space-change", short: 'b'},
		{long: "ignore-blank-lines"}, {long: "ignore-space-at-eol"},
		{long: "diff-filter", value: gvRequired, check: matches(reDiffFilter, "diff filter")},
		{long: "find-renames", short: 'M', value: gvGlued, check: matches(reSimilarity, "similarity")},
		{long: "find-copies", short: 'C', value: gvGlued, check: matches(reSimilarity, "similarity")},
		{short: 'R'}, {long: "minimal"}, {long: "histogram"}, {long: "patience"},
		{long: "function-context", short: 'W'}, {long: "full-index"}, {long: "binary"},
		{long: "abbrev", value: gvGlued, check: matches(reCount, "length")},
		{long: "no-renames"}, {long: "text", short: 'a'},
	}
	gitCommitOpts = []gitOpt{
		{long: "oneline"}, {long: "abbrev-commit"}, {long: "no-abbrev-commit"},
		{long: "format", value: gvRequired, check: checkFormat},
		{long: "pretty", value: gvGlued, check: checkFormat},
		{long: "date", value: gvRequired, check: matches(reDateMode, "date format")},
		{long: "decorate", value: gvGlued, check: oneOf("short", "full", "no")}, {long: "no-decorate"},
		{long: "notes"}, {long: "no-notes"},
	}
	gitLogOpts = []gitOpt{
		{long: "max-count", short: 'n', value: gvRequired, check: matches(reCount, "count")},
		{long: "skip", value: gvRequired, check: matches(reCount, "count")},
		{long: "since", value: gvRequired, check: matches(reDate, "date")},
		{long: "after", value: gvRequired, check: matches(reDate, "date")},
		{long: "until", value: gvRequired, check: matches(reDate, "date")},
		{long: "before", value: gvRequired, check: matches(reDate, "date")},
		{long: "author", value: gvRequired, check: textValue},
		{long: "committer", value: gvRequired, check: textValue},
		{long: "grep", value: gvRequired, check: textValue},
		{long: "regexp-ignore-case", short: 'i'}, {long: "all-match"}, {long: "invert-grep"},
		{long: "fixed-strings", short: 'F'}, {long: "extended-regexp", short: 'E'},
		{long: "all"}, {long: "branches"}, {long: "tags"}, {long: "remotes"},
		{long: "reverse"}, {long: "first-parent"}, {long: "merges"}, {long: "no-merges"},
		{long: "graph"}, {long: "follow"}, {long: "date-order"}, {long: "topo-order"},
		{long: "left-right"}, {long: "cherry-pick"}, {long: "boundary"},
		{long: "relative-date"}, {long: "parents"}, {long: "children"},
	}
	gitStatusOpts = []gitOpt{
		{long: "short", short: 's'}, {long: "branch", short: 'b'}, {long: "long"},
		{long: "porcelain", value: gvGlued, check: oneOf("v1", "v2")},
		{long: "untracked-files", short: 'u', value: gvGlued, check: oneOf("no", "normal", "all")},
		{long: "ignored", value: gvGlued, check: oneOf("traditional", "no", "matching")},
		{long: "ahead-behind"}, {long: "no-ahead-behind"}, {long: "show-stash"},
		{long: "renames"}, {long: "no-renames"},
	}
	gitBlameOpts = []gitOpt{
		{short: 'L', value: gvRequired, check: checkBlameRange},
		{short: 'w'}, {short: 'M', value: gvGlued, check: matches(reCount, "score")},
		{short: 'C', value: gvGlued, check: matches(reCount, "score")},
		{long: "show-email", short: 'e'}, {short: 'l'}, {short: 's'}, {short: 't'},
		{long: "show-name", short: 'f'}, {long: "show-number", short: 'n'},
		{long: "porcelain", short: 'p'}, {long: "line-porcelain"}, {long: "root"},
		{long: "date", value: gvRequired, check: matches(reDateMode, "date format")},
		{long: "abbrev", value: gvGlued, check: matches(reCount, "length")},
	}
)

// gitAllowed is each subcommand's option table.
var gitAllowed = map[string][]gitOpt{
	"status": gitStatusOpts,
	"diff":   append([]gitOpt{{long: "cached"}, {long: "staged"}, {long: "merge-base"}}, gitDiffOpts...),
	"log":    append(append(append([]gitOpt{}, gitLogOpts...), gitCommitOpts...), gitDiffOpts...),
	"show":   append(append([]gitOpt{}, gitCommitOpts...), gitDiffOpts...),
	"blame":  gitBlameOpts,
}

// Subcommands are the only subcommands Harvey runs.
var Subcommands = []string{"status", "diff", "log", "show", "blame"}

// Args is a vetted argument list: canonical options, and the other
// arguments still as typed (they are resolved by git next).
type Args struct {
	Opts     []string
	Operands []string // before "--": revisions (or paths, decided by git)
	Paths    []string // after "--"
	Count    bool     // a -n / --max-count was given
}

// Vet parses args for sub against the allowlist.
func Vet(sub string, args []string) (*Args, error) {
	table, ok := gitAllowed[sub]
	if !ok {
		return nil, refusal.Errorf("git %s: not allowed; only %s (read-only)", sub, strings.Join(Subcommands, ", "))
	}
	g := &Args{}
	sc := &argCursor{args: args}
	endOpts, dashdash := false, false
	for ; sc.i < len(args); sc.i++ {
		a := args[sc.i]
		if strings.ContainsFunc(a, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, refusal.Errorf("git: refused: argument %q contains control characters", a)
		}
		var err error
		switch {
		case dashdash:
			g.Paths = append(g.Paths, a)
		case a == "--":
			dashdash = true
		case a == "-":
			return nil, refusal.Errorf("git: refused: %q (standard input)", a)
		case endOpts || !strings.HasPrefix(a, "-"):
			g.Operands = append(g.Operands, a)
		case a == "--end-of-options":
			endOpts = true
		case strings.HasPrefix(a, "--"):
			err = g.addLong(sub, table, a[2:], sc)
		case sub == "log" && reCount().MatchString(a[1:]):
			g.Opts = append(g.Opts, "--max-count="+a[1:])
			g.Count = true
		default:
			err = g.addShorts(sub, table, a[1:], sc)
		}
		if err != nil {
			return nil, err
		}
	}
	return g, nil
}

// argCursor walks the arguments; an option's separate value is the next.
type argCursor struct {
	args []string
	i    int
}

func (c *argCursor) next() (string, bool) {
	if c.i+1 < len(c.args) {
		c.i++
		return c.args[c.i], true
	}
	return "", false
}

// addLong vets one --name or --name=value.
func (g *Args) addLong(sub string, table []gitOpt, body string, sc *argCursor) error {
	name, val, hasVal := strings.Cut(body, "=")
	o := findLong(table, name)
	if o == nil {
		return gitOptionRefused(sub, table, "--"+name)
	}
	if o.value == gvNone && hasVal {
		return fmt.Errorf("git %s: --%s takes no value", sub, name)
	}
	if o.value == gvRequired && !hasVal {
		v, ok := sc.next()
		if !ok {
			return fmt.Errorf("git %s: --%s needs a value", sub, name)
		}
		val, hasVal = v, true
	}
	return g.add(sub, o, val, hasVal)
}

// addShorts vets a short option or a cluster of them, as git reads it: the
// first option that takes a value takes the rest of the cluster (or the
// next argument).
func (g *Args) addShorts(sub string, table []gitOpt, body string, sc *argCursor) error {
	for j := 0; j < len(body); j++ {
		o := findShort(table, body[j])
		if o == nil {
			return gitOptionRefused(sub, table, "-"+string(body[j]))
		}
		if o.value == gvNone {
			if err := g.add(sub, o, "", false); err != nil {
				return err
			}
			continue
		}
		val, hasVal := body[j+1:], j+1 < len(body)
		if !hasVal && o.value == gvRequired {
			v, ok := sc.next()
			if !ok {
				return fmt.Errorf("git %s: -%c needs a value", sub, body[j])
			}
			val, hasVal = v, true
		}
		return g.add(sub, o, val, hasVal)
	}
	return nil
}

// add checks a value and appends the option in its canonical spelling.
func (g *Args) add(sub string, o *gitOpt, val string, hasVal bool) error {
	name := "-" + string(o.short)
	if o.long != "" {
		name = "--" + o.long
	}
	if hasVal && o.check != nil {
		if err := o.check(val); err != nil {
			return fmt.Errorf("git %s %s: %v", sub, name, err)
		}
	}
	if o.long == "max-count" {
		g.Count = true
	}
	switch {
	case !hasVal:
		g.Opts = append(g.Opts, name)
	case o.long != "":
		g.Opts = append(g.Opts, name+"="+val)
	default:
		g.Opts = append(g.Opts, name+val) // -L10,20: glued, so git reads it as the value
	}
	return nil
}

func findLong(table []gitOpt, name string) *gitOpt {
	for i := range table {
		if table[i].long != "" && table[i].long == name {
			return &table[i]
		}
	}
	return nil
}

func findShort(table []gitOpt, c byte) *gitOpt {
	for i := range table {
		if table[i].short == c {
			return &table[i]
		}
	}
	return nil
}

// checkBlameRange accepts line numbers only (10,20 10,+5 10,-5 10,): the
// /regex/ and :function forms search the file as stored, secrets included,
// so whether they find a line would tell what Harvey redacts.
func checkBlameRange(v string) error {
	if reBlameRange().MatchString(v) {
		return nil
	}
	return fmt.Errorf("line range %q: give line numbers (10,20 or 10,+5); /regex/ and :function ranges search the file as stored, secrets included, so they are not allowed (find the line with search_files)", v)
}

// gitContentQueries are options git would answer from file contents or
// messages as stored, secrets included, where Harvey shows them redacted: a
// yes/no from them would tell what the redacted text hides.
var gitContentQueries = map[string]string{
	"-S": "the pickaxe", "-G": "the pickaxe", "--pickaxe-regex": "the pickaxe", "--pickaxe-all": "the pickaxe",
}

// gitOptionRefused lists what is allowed.
func gitOptionRefused(sub string, table []gitOpt, name string) error {
	if what, ok := gitContentQueries[name]; ok {
		return refusal.Errorf("git %s: refused: %s (%s) is not allowed: it searches file contents as stored, secrets included, and its answer would tell what Harvey redacts; use search_files for content and git log -- PATH for a file's history", sub, name, what)
	}
	seen := map[string]bool{}
	var names []string
	for _, o := range table {
		n := ""
		switch {
		case o.long != "" && o.short != 0:
			n = fmt.Sprintf("-%c/--%s", o.short, o.long)
		case o.long != "":
			n = "--" + o.long
		default:
			n = "-" + string(o.short)
		}
		if o.value == gvRequired {
			n += " V"
		} else if o.value == gvGlued {
			n += "[=V]"
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return refusal.Errorf("git %s: option %s is not allowed (exact spellings only); allowed: %s", sub, name, strings.Join(names, " "))
}

// SplitRevPath splits REV:PATH the way git does: at the first colon that is
// not inside {...} (HEAD^{/a:b}:x is REV "HEAD^{/a:b}", PATH "x"). ":PATH"
// and ":N:PATH" name the index. ok is false when arg has no such colon.
func SplitRevPath(arg string) (rev, p string, ok bool) {
	if strings.HasPrefix(arg, ":") {
		rest := arg[1:]
		if len(rest) >= 2 && rest[0] >= '0' && rest[0] <= '3' && rest[1] == ':' {
			return arg[:3], rest[2:], true
		}
		return ":", rest, true
	}
	if i := indexOutsideBraces(arg, func(i int) bool { return arg[i] == ':' }); i >= 0 {
		return arg[:i], arg[i+1:], true
	}
	return arg, "", false
}

// SplitRange splits A..B and A...B (either side may be empty: HEAD).
func SplitRange(arg string) (a, sep, b string, ok bool) {
	i := indexOutsideBraces(arg, func(i int) bool { return i+1 < len(arg) && arg[i] == '.' && arg[i+1] == '.' })
	if i < 0 {
		return arg, "", "", false
	}
	sep = ".."
	if i+2 < len(arg) && arg[i+2] == '.' {
		sep = "..."
	}
	return arg[:i], sep, arg[i+len(sep):], true
}

// indexOutsideBraces is the first position where at holds that is not
// inside {...}: git skips "^{/a:b}" and "@{1..2}" text this way.
func indexOutsideBraces(arg string, at func(int) bool) int {
	depth := 0
	for i := 0; i < len(arg); i++ {
		switch {
		case arg[i] == '{':
			depth++
		case arg[i] == '}':
			if depth > 0 {
				depth--
			}
		case depth == 0 && at(i):
			return i
		}
	}
	return -1
}
