package gittool

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/harvey-agent/harvey/internal/gitrepo"
	"github.com/harvey-agent/harvey/internal/match"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// git log --grep over the view the model has: git would match commit
// messages as stored, secrets included, so whether a commit is listed
// would tell what the printed (redacted) message hides. Harvey asks git for
// the candidate commits and their messages, redacts each message with the
// one redactor, matches the patterns itself, and has git show exactly the
// commits chosen (--no-walk). Patterns are read as git reads them: basic
// regular expressions by default, -E extended, -F fixed strings, -i.

// gitGrepScan bounds the commits whose messages are searched.
const gitGrepScan = 20000

// logGrep is the message search taken out of a log's options.
type logGrep struct {
	patterns                            []string
	ignoreCase, allMatch, invert, fixed bool
	extended, reverse, graph            bool
	maxCount, skip                      int      // -1: not given
	selectOpts, showOpts                []string // options for the first pass, and for the second
	compiled                            []*regexp.Regexp
	scanned                             int // commits whose messages were matched
}

// gitLogSelects are the log options that choose commits (the first pass);
// every other option shapes what is shown (the second).
var gitLogSelects = []string{"since", "after", "until", "before", "author", "committer", "all", "branches", "tags",
	"remotes", "first-parent", "merges", "no-merges", "date-order", "topo-order", "left-right", "cherry-pick", "boundary", "follow"}

// splitLogGrep returns nil when the options hold no --grep.
func splitLogGrep(opts []string) (*logGrep, error) {
	lg := &logGrep{maxCount: -1, skip: -1}
	for _, o := range opts {
		name, val, _ := strings.Cut(strings.TrimPrefix(o, "--"), "=")
		switch name {
		case "grep":
			lg.patterns = append(lg.patterns, val)
		case "regexp-ignore-case":
			lg.ignoreCase = true
		case "all-match":
			lg.allMatch = true
		case "invert-grep":
			lg.invert = true
		case "fixed-strings":
			lg.fixed = true
		case "extended-regexp":
			lg.extended = true
		case "reverse":
			lg.reverse = true
		case "graph":
			lg.graph = true
		case "max-count":
			lg.maxCount, _ = strconv.Atoi(val)
		case "skip":
			lg.skip, _ = strconv.Atoi(val)
		default:
			if slices.Contains(gitLogSelects, name) {
				lg.selectOpts = append(lg.selectOpts, o)
			} else {
				lg.showOpts = append(lg.showOpts, o)
			}
		}
	}
	if len(lg.patterns) == 0 {
		return nil, nil
	}
	if lg.graph {
		return nil, refusal.Errorf("git log: --graph cannot be combined with --grep (Harvey matches messages itself and shows the chosen commits)")
	}
	for _, p := range lg.patterns {
		re, err := compileGitGrep(p, lg.fixed, lg.extended, lg.ignoreCase)
		if err != nil {
			return nil, fmt.Errorf("git log --grep=%q: %v", p, err)
		}
		lg.compiled = append(lg.compiled, re)
	}
	return lg, nil
}

// matches decides one message, already redacted, line by line as git does.
func (lg *logGrep) matches(msg string) bool {
	lines := strings.Split(msg, "\n")
	hit := func(re *regexp.Regexp) bool {
		return slices.ContainsFunc(lines, re.MatchString)
	}
	var ok bool
	if lg.allMatch {
		ok = !slices.ContainsFunc(lg.compiled, func(re *regexp.Regexp) bool { return !hit(re) })
	} else {
		ok = slices.ContainsFunc(lg.compiled, hit)
	}
	return ok != lg.invert
}

// choose reads the first pass's output (%H NUL %B NUL, one record per
// commit) and returns the commits to show, in the order to show them.
func (lg *logGrep) choose(out string, defaultCount int) []string {
	fields := strings.Split(out, "\x00")
	var picked []string
	for i := 0; i+1 < len(fields); i += 2 {
		oid := strings.TrimLeft(fields[i], "\n")
		if !gitrepo.IsHexOID(oid) {
			continue
		}
		lg.scanned++
		if lg.matches(secrets.Redact(fields[i+1])) {
			picked = append(picked, oid)
		}
	}
	if lg.skip > 0 {
		picked = picked[min(lg.skip, len(picked)):]
	}
	n := lg.maxCount
	if n < 0 {
		n = defaultCount
	}
	picked = picked[:min(n, len(picked))]
	if lg.reverse {
		slices.Reverse(picked)
	}
	return picked
}

// compileGitGrep turns a git grep pattern into a Go regexp with git's
// meaning: fixed, extended (ERE) or basic (BRE, GNU: \( \) \{ \} \| \+ \?
// are the operators, the bare characters literals).
func compileGitGrep(p string, fixed, extended, icase bool) (*regexp.Regexp, error) {
	var expr string
	switch {
	case fixed:
		expr = regexp.QuoteMeta(p)
	default:
		expr = translateGitRE(p, !extended)
	}
	if icase {
		expr = "(?i)" + expr
	}
	return match.CompileBounded(expr) // search_files' bound on length and cost
}

// translateGitRE rewrites a POSIX basic or extended expression in RE2
// syntax: bracket expressions are copied whole, \< and \> become \b, and
// in a basic expression escaped and bare operators swap.
func translateGitRE(p string, basic bool) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '[' && i+1 < len(p):
			j := bracketEnd(p, i)
			if j >= len(p) {
				b.WriteString(regexp.QuoteMeta(p[i:]))
				return b.String()
			}
			b.WriteString(strings.ReplaceAll(p[i:j+1], `\`, `\\`))
			i = j
		case c == '\\' && i+1 < len(p):
			i++
			writeEscaped(&b, p[i], basic)
		case basic && strings.IndexByte("(){}|+?", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		case basic && c == '*' && (i == 0 || p[i-1] == '^' && i == 1):
			b.WriteString(`\*`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// bracketEnd is the index of the ']' that closes the bracket expression
// starting at p[i] (a leading ^ and ] belong to it, and so do [:class:],
// [.coll.] and [=equiv=]), or len(p) when none does.
func bracketEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) && p[j] != ']' {
		if p[j] == '[' && j+1 < len(p) && (p[j+1] == ':' || p[j+1] == '.' || p[j+1] == '=') {
			if k := strings.Index(p[j+2:], string(p[j+1])+"]"); k >= 0 {
				j += k + 4
				continue
			}
		}
		j++
	}
	return j
}

// writeEscaped writes the escape \d: \< and \> are word boundaries, and
// in a basic expression an escaped operator is the operator.
func writeEscaped(b *strings.Builder, d byte, basic bool) {
	switch {
	case d == '<' || d == '>':
		b.WriteString(`\b`)
	case basic && strings.IndexByte("(){}|+?", d) >= 0:
		b.WriteByte(d)
	default:
		b.WriteByte('\\')
		b.WriteByte(d)
	}
}

// grepArgv runs the first pass and returns the second pass's arguments
// (nil: no commit matched) and a note for the answer.
func (g *gitRunner) grepArgv(lg *logGrep, revs, pathArgs []string) ([]string, string, error) {
	first := append([]string{"log", "--no-color", "--format=%H%x00%B%x00", "--max-count=" + strconv.Itoa(gitGrepScan)}, lg.selectOpts...)
	first = append(append(first, revs...), pathArgs...)
	res := g.run(first, 64<<20)
	if res.Err != nil {
		return nil, "", fmt.Errorf("git log: %v", res.Err)
	}
	if res.ExitCode != 0 {
		return nil, "", fmt.Errorf("git log failed (exit %d): %s", res.ExitCode, runner.ErrLine(res.Stderr))
	}
	picked := lg.choose(string(res.Output), gitDefaultCount)
	note := ""
	if lg.scanned >= gitGrepScan || res.Dropped > 0 {
		note = fmt.Sprintf("\n[--grep searched the newest %d commits' messages]", lg.scanned)
	}
	if len(picked) == 0 {
		return nil, note, nil
	}
	argv := append([]string{"log", "--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"}, lg.showOpts...)
	argv = append(append(append(argv, "--no-walk=unsorted"), picked...), pathArgs...)
	return argv, note, nil
}
