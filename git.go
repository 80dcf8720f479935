package harvey

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// git_command and /git: read-only git, hardened as security.md §4 describes.
// Even "read-only" subcommands run programs from .git/config (fsmonitor,
// hooks, textconv, filter drivers, diff.external, gpg.program), write files
// (--output), read outside the repository (--no-index, --contents) or leak
// denied files from history (HEAD:.env). Each of those is closed here.

// GitSubcommands are the only subcommands Harvey runs.
var GitSubcommands = []string{"status", "diff", "log", "show", "blame"}

// gitDeniedOptions are long options refused by name, and by any abbreviation
// of the name (git accepts unique prefixes of long options).
var gitDeniedOptions = []string{
	"--output", "--output-directory", "--no-index", "--contents", "--ignore-revs-file",
	"--ext-diff", "--textconv", "--show-signature", "--remerge-diff", "--diff-merges",
	"--git-dir", "--work-tree", "--exec-path", "--namespace", "--config-env", "--paginate",
	"--open-files-in-pager", "--exec", "--upload-pack", "--receive-pack", "--orderfile",
	"--recurse-submodules", "--super-prefix", "--attr-source",
}

var shaRE = regexp.MustCompile(`^[0-9a-fA-F]{7,64}$`)

// gitExcludes keep agents/ and denylisted files out of what git prints.
var gitExcludes = []string{
	":(exclude,icase)agents",
	":(exclude,icase,glob)**/.env",
	":(exclude,icase,glob)**/.env.*",
	":(exclude,icase,glob)**/.envrc",
	":(exclude,icase,glob)**/*.pem",
	":(exclude,icase,glob)**/*.key",
	":(exclude,icase,glob)**/*.p12",
	":(exclude,icase,glob)**/*.pfx",
	":(exclude,icase,glob)**/id_rsa*",
	":(exclude,icase,glob)**/id_dsa*",
	":(exclude,icase,glob)**/id_ecdsa*",
	":(exclude,icase,glob)**/id_ed25519*",
	":(exclude,icase,glob)**/.ssh/**",
	":(exclude,icase,glob)**/.aws/**",
	":(exclude,icase,glob)**/credentials*",
	":(exclude,icase,glob)**/.netrc",
	":(exclude,icase,glob)**/.npmrc",
	":(exclude,icase,glob)**/.pypirc",
	":(exclude,icase,glob)**/.git-credentials",
	":(exclude,icase,glob)**/*.tfvars",
	":(exclude,icase,glob)**/terraform.tfstate*",
}

// RunGit runs one hardened read-only git subcommand in the workspace. args is
// what the user or model typed after the subcommand.
func RunGit(ctx context.Context, ws *Workspace, sub string, args []string, limit int) (string, error) {
	sub = strings.ToLower(strings.TrimSpace(sub))
	if !contains(GitSubcommands, sub) {
		return "", fmt.Errorf("git %s: not allowed; only %s (read-only)", sub, strings.Join(GitSubcommands, ", "))
	}
	fi, err := ws.root.Lstat(".git")
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("not a git repository (no .git directory in the workspace)")
	}
	if err != nil {
		return "", fmt.Errorf(".git: %s", errText(err))
	}
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("refused: .git is %s, not a directory (a .git file can point git outside the workspace)", fileKind(fi.Mode()))
	}
	flags, revs, paths, err := vetGitArgs(ws, sub, args)
	if err != nil {
		return "", err
	}
	g := newGitRunner(ctx, ws)
	if sub == "show" {
		for _, r := range revs {
			if shaRE.MatchString(r) {
				t := strings.TrimSpace(string(g.run([]string{"cat-file", "-t", r}, 4096).Output))
				if t != "commit" {
					return "", fmt.Errorf("git show %s: refused: bare object IDs are shown only for commits (this is %q)", r, t)
				}
			}
		}
	}
	argv := []string{sub}
	switch sub {
	case "diff", "log", "show":
		argv = append(argv, "--no-ext-diff", "--no-textconv", "--no-color")
	case "blame":
		argv = append(argv, "--no-textconv")
	}
	argv = append(argv, flags...)
	argv = append(argv, revs...)
	if sub == "blame" {
		if len(paths) == 0 {
			return "", errors.New("git blame: give a file to blame")
		}
		argv = append(argv, "--")
		argv = append(argv, paths...)
	} else {
		argv = append(argv, "--")
		argv = append(argv, paths...)
		argv = append(argv, gitExcludes...)
	}
	res := g.run(argv, limit)
	if res.Err != nil {
		return "", fmt.Errorf("git %s: %v", sub, res.Err)
	}
	text := redactSecrets(capOutput(res.Output, limit, res.Dropped > 0))
	if res.ExitCode != 0 {
		return "", fmt.Errorf("git %s failed (exit %d): %s", sub, res.ExitCode, firstLine(text))
	}
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
	}
	if sub != "status" && sub != "blame" && g.agentsInHistory() {
		text += "\n[note: agents/ was committed to this repository; its changes are left out of git output. " +
			"Remove it from the history and add agents/ to .gitignore]"
	}
	return text, nil
}

// agentsInHistory reports, once per session, whether agents/ (Harvey's
// config, history and database) appears in any commit, so that output with
// its hunks removed says why.
func (g *gitRunner) agentsInHistory() bool {
	g.ws.gitAgentsOnce.Do(func() {
		res := g.run([]string{"log", "--all", "-1", "--format=%h", "--", ":(icase)agents"}, 256)
		g.ws.gitAgents = res.ExitCode == 0 && strings.TrimSpace(string(res.Output)) != ""
	})
	return g.ws.gitAgents
}

// vetGitArgs splits args into flags, revisions and paths and refuses anything
// that writes files, reads outside the workspace, changes git's target, or
// names a denied path (including REV:PATH forms).
func vetGitArgs(ws *Workspace, sub string, args []string) (flags, revs, paths []string, err error) {
	afterDashDash := false
	for _, a := range args {
		if strings.ContainsRune(a, 0) || strings.ContainsAny(a, "\n\r") {
			return nil, nil, nil, fmt.Errorf("git: refused: argument %q contains control characters", a)
		}
		if afterDashDash {
			if err := vetGitPath(a); err != nil {
				return nil, nil, nil, err
			}
			paths = append(paths, a)
			continue
		}
		if a == "--" {
			afterDashDash = true
			continue
		}
		if a == "--end-of-options" {
			continue
		}
		if strings.HasPrefix(a, "-") {
			if err := vetGitOption(sub, a); err != nil {
				return nil, nil, nil, err
			}
			flags = append(flags, a)
			continue
		}
		if i := strings.IndexByte(a, ':'); i >= 0 {
			// REV:PATH, :PATH, :N:PATH (index), or pathspec magic.
			p := a[i+1:]
			if len(p) >= 2 && p[1] == ':' && p[0] >= '0' && p[0] <= '3' {
				p = p[2:]
			}
			if strings.HasPrefix(a, ":(") || strings.HasPrefix(a, ":!") || strings.HasPrefix(a, ":^") {
				return nil, nil, nil, fmt.Errorf("git: refused: pathspec magic %q is not allowed", a)
			}
			if strings.HasPrefix(a, ":/") {
				revs = append(revs, a) // :/message searches commit messages
				continue
			}
			if p != "" {
				if err := vetGitPath(p); err != nil {
					return nil, nil, nil, err
				}
			}
			revs = append(revs, a)
			continue
		}
		if err := vetGitPath(a); err != nil {
			return nil, nil, nil, err
		}
		if _, statErr := ws.root.Lstat(filepath.FromSlash(strings.TrimPrefix(a, "./"))); statErr == nil || sub == "blame" && !looksLikeRev(a) {
			paths = append(paths, a)
		} else {
			revs = append(revs, a)
		}
	}
	return flags, revs, paths, nil
}

func looksLikeRev(a string) bool {
	return shaRE.MatchString(a) || strings.ContainsAny(a, "~^@") || strings.Contains(a, "..") || a == "HEAD"
}

// vetGitOption refuses dangerous options and their abbreviations.
func vetGitOption(sub, a string) error {
	name := a
	if i := strings.IndexByte(a, '='); i >= 0 {
		name = a[:i]
	}
	if strings.HasPrefix(name, "--") {
		for _, d := range gitDeniedOptions {
			if name == d || (len(name) >= 4 && strings.HasPrefix(d, name)) {
				return fmt.Errorf("git: refused: option %s is not allowed (it can write files, read outside the workspace or run programs)", name)
			}
		}
		return nil
	}
	// Short options: -O<orderfile>; blame -S <revs-file> and --contents.
	if strings.HasPrefix(a, "-O") || (sub == "blame" && strings.HasPrefix(a, "-S")) {
		return fmt.Errorf("git: refused: option %s reads a file named by the caller", a)
	}
	return nil
}

// vetGitPath applies the workspace path rules to a path operand.
func vetGitPath(p string) error {
	if p == "." || p == "./" {
		return nil
	}
	clean, err := lexicalClean(strings.TrimSuffix(p, "/"))
	if err != nil {
		return fmt.Errorf("git: %w", err)
	}
	if err := lexicalPolicy(p, clean, opRead); err != nil {
		return fmt.Errorf("git: %w", err)
	}
	return nil
}

// gitRunner runs git with hardened globals and a scrubbed environment.
type gitRunner struct {
	ctx     context.Context
	ws      *Workspace
	globals []string
	env     []string
}

func newGitRunner(ctx context.Context, ws *Workspace) *gitRunner {
	gitDir := filepath.Join(ws.Root, ".git")
	g := &gitRunner{ctx: ctx, ws: ws}
	g.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"LANG=C.UTF-8",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS=true",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(ws.Root),
	}
	g.globals = []string{
		"--no-pager", "--no-optional-locks",
		"--git-dir=" + gitDir, "--work-tree=" + ws.Root,
		"-c", "core.fsmonitor=false",
		"-c", "core.hooksPath=/dev/null",
		"-c", "diff.external=",
		"-c", "log.showSignature=false",
		"-c", "core.pager=cat",
		"-c", "color.ui=never",
		"-c", "core.untrackedCache=false",
		"-c", "protocol.allow=never",
	}
	// Blank every filter/diff/merge driver the repository configures: these
	// run programs even under the flags above.
	res := runArgv(ctx, ws.Root, append(append([]string{"git"}, g.globals...), "config", "--get-regexp", `^(filter|diff|merge)\.`), g.env, 10*time.Second, 1<<16)
	for _, line := range strings.Split(string(res.Output), "\n") {
		key, _, _ := strings.Cut(line, " ")
		if strings.Count(key, ".") >= 2 {
			g.globals = append(g.globals, "-c", key+"=")
		}
	}
	return g
}

func (g *gitRunner) run(args []string, limit int) RunResult {
	argv := append(append([]string{"git"}, g.globals...), args...)
	return runArgv(g.ctx, g.ws.Root, argv, g.env, 60*time.Second, limit)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
