// Package gittool is git's tool: read-only git subcommands the model and
// the user run in the workspace, as git parses them (internal/gitargs vets
// the arguments), against the private git directory (internal/gitrepo)
// and in a sandbox of their own. Every path git is asked about or prints
// passes the same rules as read_file — the name rules, the denylist and
// the permissions: block (internal/wspath) — before the question, as
// pathspecs git applies, and after, filtered from its output; a log's
// --grep patterns are translated from git's syntax and bounded like
// search_files'. Run is the tool; ErrLine is git's error in one line.
package gittool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/gitargs"
	"github.com/harvey-agent/harvey/internal/gitrepo"
	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// git_command, /git and <!-- @git-status -->: read-only git, safe by
// construction rather than by a list of bad inputs (security.md §4):
//
//   - git runs against a private git directory whose config Harvey wrote
//     (internal/gitrepo): no hook, driver, fsmonitor or gpg program of the
//     repository exists for it, and the environment is built from nothing;
//   - options come from a per-subcommand allowlist, parsed as git parses
//     them and passed on in one canonical spelling (internal/gitargs);
//   - every other argument is resolved by git itself to an object ID (a
//     commit or tag; a blob or tree only as REV:PATH, split as git splits
//     it, with PATH under the same path policy as read_file), and only
//     object IDs and checked paths reach the command line;
//   - the path policy (agents/, the denylist, permissions) also applies to
//     every path git prints: pathspec excludes generated from the one
//     denylist, then a filter that drops the diff of any denied file.

// gitDefaultCount bounds git log when no -n is given: the answer must not
// cost the whole history.
const gitDefaultCount = 50

// gitLogCommitsOnly are the log options that neither print a file's name
// nor read a file's content (the pickaxe -S/-G, diffs, stats, --follow and
// --cherry-pick do): with only these, log lists commits and their messages.
var gitLogCommitsOnly = []string{
	"max-count", "skip", "since", "after", "until", "before", "author", "committer", "grep",
	"regexp-ignore-case", "all-match", "invert-grep", "fixed-strings", "extended-regexp",
	"all", "branches", "tags", "remotes", "reverse", "first-parent", "merges", "no-merges",
	"graph", "date-order", "topo-order", "left-right", "boundary", "relative-date", "parents", "children",
	"oneline", "abbrev-commit", "no-abbrev-commit", "format", "pretty", "date", "decorate", "no-decorate",
	"notes", "no-notes", "no-patch",
}

// logShowsNoFiles reports whether vetted log options (canonical spellings)
// are all in gitLogCommitsOnly.
func logShowsNoFiles(opts []string) bool {
	for _, o := range opts {
		name, ok := strings.CutPrefix(o, "--")
		if !ok {
			return false
		}
		name, _, _ = strings.Cut(name, "=")
		if !slices.Contains(gitLogCommitsOnly, name) {
			return false
		}
	}
	return true
}

// gitPolicy decides a workspace-relative path for git: nil when it may be
// shown, else the refusal (agents/, the denylist, permissions).
type gitPolicy func(rel string) error

// Run runs one read-only git subcommand in the workspace. args is what
// the user or model typed after the subcommand. Every path git is asked
// about or prints passes the same rules as read_file: the name rules
// (agents/, the denylist) and the permissions: block.
func Run(ctx context.Context, ws *wspath.Tree, repo *gitrepo.Repo, sub string, args []string, limit int) (string, error) {
	sub = strings.ToLower(strings.TrimSpace(sub))
	if limit <= 0 || limit > config.DefaultMaxOutputBytes {
		limit = config.DefaultMaxOutputBytes
	}
	policy := func(rel string) error {
		if err := wspath.LexicalPolicy(rel, rel, wspath.OpRead); err != nil {
			return err
		}
		return ws.Allow(rel, rel, wspath.PermRead)
	}
	ga, err := gitargs.Vet(sub, args)
	if err != nil {
		return "", err
	}
	dir, err := repo.Dir(ctx) // the private git directory (internal/gitrepo)
	if err != nil {
		return "", err
	}
	g := &gitRunner{ctx: ctx, ws: ws, dir: dir}
	revs, paths, err := g.resolveOperands(sub, ga, policy)
	if err != nil {
		return "", err
	}
	var grep *logGrep
	if sub == "log" {
		if grep, err = splitLogGrep(ga.Opts); err != nil {
			return "", err
		}
	}
	argv, pathArgs := gitArgv(ws, sub, ga, revs, paths)
	note := ""
	if grep != nil {
		if argv, note, err = g.grepArgv(grep, revs, pathArgs); err != nil {
			return "", err
		}
		if argv == nil {
			return "(no output)" + note, nil
		}
	}
	res := g.run(argv, limit+1)
	if res.Err != nil {
		return "", fmt.Errorf("git %s: %v", sub, res.Err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("git %s failed (exit %d): %s", sub, res.ExitCode, runner.ErrLine(res.Stderr))
	}
	return gitAnswer(res, sub, ga, policy, limit) + note, nil
}

// gitArgv is the git command line for a checked request, and the path
// arguments it ends with ("--" and the pathspecs: the paths asked, and the
// excludes of every file Harvey hides).
func gitArgv(ws *wspath.Tree, sub string, ga *gitargs.Args, revs, paths []string) (argv, pathArgs []string) {
	argv = []string{sub}
	switch sub {
	case "diff", "log", "show":
		argv = append(argv, "--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all")
	case "status":
		argv = append(argv, "--ignore-submodules=all")
	case "blame":
		argv = append(argv, "--no-textconv")
	}
	argv = append(argv, ga.Opts...)
	if sub == "log" && !ga.Count {
		argv = append(argv, "--max-count="+strconv.Itoa(gitDefaultCount))
	}
	pathArgs = append([]string{"--"}, paths...)
	switch {
	case sub == "blame":
	case sub == "log" && len(paths) == 0 && logShowsNoFiles(ga.Opts):
		// Commits only: no path or file content is read or printed, so
		// there is nothing to exclude (and a hundred exclude pathspecs
		// would make git diff every commit it walks against its parent).
	default:
		pathArgs = append([]string{"--"}, gitPathspecs(ws, paths)...)
	}
	return append(append(argv, revs...), pathArgs...), pathArgs
}

// gitAnswer is what git printed as the model sees it: files the policy
// hides left out (and counted), redacted, within the cap.
func gitAnswer(res runner.Result, sub string, ga *gitargs.Args, policy gitPolicy, limit int) string {
	text, dropped := filterGitOutput(string(res.Output), func(p string) bool { return policy(p) != nil })
	text = secrets.RedactWindow(text) // hunks and blame ranges are windows of files
	text = outputcap.Cap([]byte(text), limit, res.Dropped > 0 || len(text) > limit)
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
	}
	if dropped > 0 {
		text += fmt.Sprintf("\n[%s of files Harvey does not show (agents/, secrets, or no read permission) left out]", termtext.Plural(dropped, "entry"))
	}
	if sub == "log" && !ga.Count {
		text += fmt.Sprintf("\n[at most %d commits; use -n N for more or fewer]", gitDefaultCount)
	}
	return text
}

// resolveOperands has git resolve every operand before "--" and puts every
// path through the policy. It returns the object names to pass (object IDs,
// OID:PATH, :N:PATH) and the checked paths.
func (g *gitRunner) resolveOperands(sub string, ga *gitargs.Args, policy gitPolicy) (revs, paths []string, err error) {
	pl := &operandPlan{policy: policy}
	for _, p := range ga.Paths {
		c, err := pl.checkPath(p)
		if err != nil {
			return nil, nil, err
		}
		pl.paths = append(pl.paths, c)
	}
	for _, op := range ga.Operands {
		if err := pl.add(sub, op); err != nil {
			return nil, nil, err
		}
	}
	if len(pl.names) == 0 {
		return nil, pl.paths, nil
	}
	answers, err := g.lookup(pl.names)
	if err != nil {
		return nil, nil, err
	}
	if revs, err = pl.build(answers); err != nil {
		return nil, nil, err
	}
	if err := pl.verify(answers); err != nil {
		return nil, nil, err
	}
	if sub == "blame" {
		if len(revs) > 1 {
			return nil, nil, errors.New("git blame: give at most one revision")
		}
		if len(pl.paths) != 1 {
			return nil, nil, errors.New("git blame: give exactly one file to blame")
		}
	}
	return revs, pl.paths, nil
}

// operandPlan collects the names git must resolve (in one batch) and, per
// operand, how to build its argument from the answers.
type operandPlan struct {
	policy gitPolicy
	names  []gitLookup
	ops    []gitOperand
	paths  []string
}

type gitLookup struct {
	name  string
	kinds []string // the object types accepted
	peel  bool     // a tag must peel to a commit (name^{} is asked too)
}

type gitOperand struct {
	build  func(oid func(int) string) string
	asPath string // a plain operand that may turn out to be a path
	ref    int    // its lookup, when asPath is set (else -1)
}

var gitCommitish = []string{"commit", "tag"}

func (pl *operandPlan) ask(name string, kinds ...string) int {
	pl.names = append(pl.names, gitLookup{name: name, kinds: kinds, peel: slices.Contains(kinds, "tag") && !slices.Contains(kinds, "tree")})
	return len(pl.names) - 1
}

// checkPath puts one path through the policy (pathspec magic refused).
func (pl *operandPlan) checkPath(p string) (string, error) {
	if strings.HasPrefix(p, ":") {
		return "", refusal.Errorf("git: refused: pathspec magic %q is not allowed", p)
	}
	if p == "." || p == "./" {
		return ".", nil
	}
	clean, err := wspath.LexicalClean(strings.TrimSuffix(p, "/"))
	if err != nil {
		return "", fmt.Errorf("git: %w", err)
	}
	if err := pl.policy(clean); err != nil {
		return "", fmt.Errorf("git: %w", err)
	}
	return clean, nil
}

// add plans one operand: a range, ^REV, REV:PATH, :PATH, or a plain
// revision that may turn out to be a path.
func (pl *operandPlan) add(sub, op string) error {
	if strings.HasPrefix(op, ":/") || strings.Contains(op, "{/") {
		// :/text and REV^{/text} name the newest commit whose message
		// matches, as stored: an answer about text Harvey redacts.
		return refusal.Errorf("git: refused: %q searches commit messages as stored; list commits with git log --grep=TEXT instead (it matches what you are shown)", op)
	}
	if a, sep, b, ok := gitargs.SplitRange(op); ok && sub != "blame" {
		ra, rb := pl.ask(cmp.Or(a, "HEAD"), gitCommitish...), pl.ask(cmp.Or(b, "HEAD"), gitCommitish...)
		pl.ops = append(pl.ops, gitOperand{ref: -1, build: func(oid func(int) string) string { return oid(ra) + sep + oid(rb) }})
		return nil
	}
	if rest, ok := strings.CutPrefix(op, "^"); ok && sub != "blame" {
		r := pl.ask(rest, gitCommitish...)
		pl.ops = append(pl.ops, gitOperand{ref: -1, build: func(oid func(int) string) string { return "^" + oid(r) }})
		return nil
	}
	if rev, p, ok := gitargs.SplitRevPath(op); ok && sub != "blame" {
		return pl.addRevPath(op, rev, p)
	}
	// blame takes one revision and one file; elsewhere a plain operand.
	r := pl.ask(op, gitCommitish...)
	pl.ops = append(pl.ops, gitOperand{ref: r, asPath: op, build: func(oid func(int) string) string { return oid(r) }})
	return nil
}

// addRevPath plans REV:PATH, :PATH, :N:PATH and :/message.
func (pl *operandPlan) addRevPath(op, rev, p string) error {
	clean := "."
	if p != "" {
		c, err := pl.checkPath(p)
		if err != nil {
			return err
		}
		clean = c
	}
	tp := cleanTreePath(clean)
	if strings.HasPrefix(rev, ":") { // the index: :PATH or :N:PATH
		name := ":0:" + tp
		if rev != ":" {
			name = rev + ":" + tp
		}
		pl.ask(name, "blob")
		pl.ops = append(pl.ops, gitOperand{ref: -1, build: func(func(int) string) string { return name }})
		return nil
	}
	// git splits "REV:PATH" at the same colon splitRevPath found, so REV
	// and REV:PATH can be resolved side by side.
	r := pl.ask(rev, "commit", "tag", "tree")
	pl.ask(rev+":"+tp, "blob", "tree", "commit")
	pl.ops = append(pl.ops, gitOperand{ref: -1, build: func(oid func(int) string) string { return oid(r) + ":" + tp }})
	return nil
}

// build turns the answers into arguments; a plain operand git does not
// know is a path (which need not exist: deleted files) and is checked.
func (pl *operandPlan) build(answers []gitObject) ([]string, error) {
	oid := func(i int) string { return answers[i].oid }
	var revs []string
	for _, op := range pl.ops {
		if op.asPath != "" && answers[op.ref].missing {
			c, err := pl.checkPath(op.asPath)
			if err != nil {
				return nil, err
			}
			pl.paths = append(pl.paths, c)
			continue
		}
		revs = append(revs, op.build(oid))
	}
	return revs, nil
}

// verify refuses unknown names (other than operands taken as paths) and
// objects of a type the operand may not name.
func (pl *operandPlan) verify(answers []gitObject) error {
	takenAsPath := map[int]bool{}
	for _, op := range pl.ops {
		if op.asPath != "" {
			takenAsPath[op.ref] = true
		}
	}
	for i, n := range pl.names {
		a := answers[i]
		switch {
		case a.missing && takenAsPath[i]:
		case a.missing:
			return fmt.Errorf("git: %q is not a revision or object in this repository", n.name)
		case !slices.Contains(n.kinds, a.typ):
			return refusal.Errorf("git: refused: %q is a %s; name blobs and trees as REV:PATH so the path can be checked", n.name, a.typ)
		}
	}
	return nil
}

// lookup resolves the names in one batch. An object is checked as what it
// really is: a tag is peeled (name^{}) and stands for the commit it names;
// a tag of a blob or a tree (which git show would print without a path to
// check) is refused.
func (g *gitRunner) lookup(names []gitLookup) ([]gitObject, error) {
	list := make([]string, 0, 2*len(names))
	for _, n := range names {
		list = append(list, n.name)
		if n.peel {
			list = append(list, n.name+"^{}")
		}
	}
	all, err := g.batchCheck(list)
	if err != nil {
		return nil, err
	}
	out := make([]gitObject, len(names))
	k := 0
	for i, n := range names {
		out[i] = all[k]
		k++
		if !n.peel {
			continue
		}
		peeled := all[k]
		k++
		if out[i].typ == "tag" && peeled.typ != "commit" {
			return nil, refusal.Errorf("git: refused: %q is a tag of a %s; name blobs and trees as REV:PATH so the path can be checked", n.name, cmp.Or(peeled.typ, "missing object"))
		}
	}
	return out, nil
}

// cleanTreePath is a checked path as a tree path ("." is the root tree).
func cleanTreePath(p string) string {
	if p == "." {
		return ""
	}
	return p
}

type gitObject struct {
	oid, typ string
	missing  bool
}

// batchCheck resolves object names with git's own resolver (cat-file
// --batch-check reads them from stdin, so no name is ever an option).
func (g *gitRunner) batchCheck(names []string) ([]gitObject, error) {
	res := g.runIn([]string{"cat-file", "--batch-check=%(objectname) %(objecttype)"}, strings.Join(names, "\n")+"\n", 1<<20)
	if res.Err != nil || res.ExitCode != 0 {
		return nil, fmt.Errorf("git: cannot resolve revisions: %s", runner.ErrLine(res.Stderr))
	}
	lines := strings.Split(strings.TrimRight(string(res.Output), "\n"), "\n")
	if len(lines) != len(names) {
		return nil, errors.New("git: cannot resolve revisions (unexpected answer)")
	}
	out := make([]gitObject, len(names))
	for i, l := range lines {
		oid, typ, ok := strings.Cut(l, " ")
		if !ok || !gitrepo.IsHexOID(oid) {
			out[i].missing = true
			continue
		}
		out[i] = gitObject{oid: oid, typ: typ}
	}
	return out, nil
}

// gitRunner runs git against the private git directory.
type gitRunner struct {
	ctx context.Context
	ws  *wspath.Tree
	dir string
}

func (g *gitRunner) argv(args []string) []string {
	return append([]string{"git", "--no-pager", "--no-optional-locks", "--git-dir=" + g.dir, "--work-tree=" + g.ws.Root}, args...)
}

func (g *gitRunner) run(args []string, limit int) runner.Result {
	return runner.Run(g.ctx, runner.Proc{Dir: g.ws.Root, Argv: g.argv(args), Env: gitrepo.Env(g.dir), Timeout: 60 * time.Second, Limit: limit, SplitStderr: true, StopAtCap: true, Sandbox: sandboxpolicy.GitSpec(g.ws.Root, g.dir)})
}

func (g *gitRunner) runIn(args []string, stdin string, limit int) runner.Result {
	return runner.Run(g.ctx, runner.Proc{Dir: g.ws.Root, Argv: g.argv(args), Env: gitrepo.Env(g.dir), Timeout: 60 * time.Second, Limit: limit, SplitStderr: true, Stdin: stdin, Sandbox: sandboxpolicy.GitSpec(g.ws.Root, g.dir)})
}
