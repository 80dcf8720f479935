package harvey

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// The tool takes args as a list (what llama3.2 sends) or a string, and the
// policy includes permissions: a directory without read permission is left
// out of git output just as read_file refuses it.
func TestGitToolArgsAndPermissions(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	e2e.WriteFile(t, dir, "main.go", "package main\n")
	e2e.WriteFile(t, dir, "src/x.go", "package x // SRCSECRET\n")
	git("add", ".")
	git("commit", "-qm", "first")
	e2e.WriteFile(t, dir, "main.go", "package main\n\nfunc main() {}\n")
	git("commit", "-qam", "second")
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	cf := &configfile.File{Config: config.Default()}
	cf.Permissions = map[string][]string{".": {"read"}, "src": {}}
	a := newAgent(ws, cf, newLineReader(strings.NewReader("")), &strings.Builder{}, &strings.Builder{})
	ctx := context.Background()
	out, err := invokeTool(a, "git_command", ctx, map[string]any{"subcommand": "log", "args": []any{"--oneline", "-n", "3"}})
	if err != nil || !strings.Contains(out, "second") {
		t.Fatalf("list args: %v\n%s", err, out)
	}
	if out, err := invokeTool(a, "git_command", ctx, map[string]any{"subcommand": "log", "args": "--oneline -n 1"}); err != nil || strings.Count(strings.TrimSpace(out), "\n") > 2 {
		t.Fatalf("string args: %v\n%s", err, out)
	}
	if _, err := invokeTool(a, "git_command", ctx, map[string]any{"subcommand": "show", "args": []any{"HEAD:src/x.go"}}); err == nil || !strings.Contains(err.Error(), "permission") {
		t.Fatalf("show HEAD:src/x.go: %v", err)
	}
	out, err = invokeTool(a, "git_command", ctx, map[string]any{"subcommand": "show", "args": []any{"HEAD~1"}})
	// git is not even asked about src/: the hidden set is its excludes.
	if err != nil || strings.Contains(out, "SRCSECRET") || strings.Contains(out, "src/x.go") || !strings.Contains(out, "first") {
		t.Fatalf("show HEAD~1 with src denied: %v\n%s", err, out)
	}
	// Through the executor, coercion keeps a list a list.
	if err := coerce.Args(mustTool(t, a, "git_command").Function.Parameters, map[string]any{"subcommand": "log", "args": []any{"-n", 3.0}}); err != nil {
		t.Fatalf("coerce: %v", err)
	}
}

func mustTool(t *testing.T, a *Agent, name string) anyllm.Tool {
	t.Helper()
	tool, _, ok := a.Tools.GetTool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool
}

// /git colours what it shows on a terminal as git would; the model gets
// the text without colour codes.
func TestGitCommandColours(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	env := newTestEnv(t, nil, "")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = env.dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	e2e.WriteFile(t, env.dir, "a.txt", "one\ntwo\n")
	git("add", "a.txt")
	git("commit", "-qm", "first")
	e2e.WriteFile(t, env.dir, "a.txt", "one\nthree\n")
	env.a.Color = true
	out, err := dispatch(t, env.a, "/git diff")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\x1b[31m-two\x1b[0m") || !strings.Contains(out, "\x1b[32m+three\x1b[0m") || !strings.Contains(out, "\x1b[36m@@") {
		t.Fatalf("not coloured: %q", out)
	}
	last := env.a.History[len(env.a.History)-1].Content
	if strings.Contains(last, "\x1b[") || !strings.Contains(last, "+three") {
		t.Fatalf("the conversation got %q", last)
	}
	// Names are shown as they are, not as octal escapes.
	e2e.WriteFile(t, env.dir, "café.txt", "x\n")
	if out, err := dispatch(t, env.a, "/git status --short"); err != nil || !strings.Contains(out, "café.txt") || strings.Contains(out, `\303`) {
		t.Fatalf("status: %q %v", out, err)
	}
}

// oneViewRepo is a repository whose allowed files and commit messages hold
// secrets in the shapes git prints with a prefix, and a tag of a denied blob.
func oneViewRepo(t *testing.T) (*Workspace, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	e2e.WriteFile(t, dir, "app.yaml", "db:\n  POSTGRES_PASSWORD: pgv4lue0ld\n")
	e2e.WriteFile(t, dir, ".env", "API_TOKEN="+oneViewToken+"\n")
	git("add", "-f", ".")
	git("commit", "-qm", "first\n\ndeploy token "+oneViewToken)
	e2e.WriteFile(t, dir, "app.yaml", "db:\n  POSTGRES_PASSWORD: pgv4luen3w # rotated\n")
	e2e.WriteFile(t, dir, "app.properties", "spring.datasource.password=spr1ngv4lue\n")
	e2e.WriteFile(t, dir, "deploy.sh", "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCY\n")
	git("add", ".")
	git("commit", "-qm", "second")
	e2e.WriteFile(t, dir, "local.env.sh", "DB_PASSWORD=hunter2hunter2 # uncommitted\n")
	git("add", "-N", "local.env.sh")
	blob := git("rev-parse", "HEAD:.env")
	git("tag", "lightweight-env", blob)
	git("tag", "-a", "-m", "annotated", "annotated-env", blob)
	git("tag", "-a", "-m", "a tree", "tree-tag", "HEAD^{tree}")
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, dir
}

const oneViewToken = "ghp_Q7x9Lm2Pz8Rt4Vw6Ys1Ab3Cd5Ef7Gh9Ij0Kl"

var oneViewValues = []string{"pgv4lue0ld", "pgv4luen3w", "spr1ngv4lue", "wJalrXUtnFEMIK7MDENGbPxRfiCY", "hunter2hunter2", oneViewToken, "Q7x9Lm2Pz8"}

// One view (issue 27): every KEY=value git prints with a prefix (+, -,
// context, blame columns, a trailing comment) is hidden; history queries are
// answered over what the model is shown, so a right and a wrong guess at a
// secret answer alike; a tag is checked as what it names.
func TestGitOneView(t *testing.T) {
	t.Parallel()
	ws, _ := oneViewRepo(t)
	ctx := context.Background()
	for _, args := range [][]string{
		{"diff"}, {"diff", "HEAD~1"}, {"show", "HEAD"}, {"show", "HEAD~1"}, {"log", "-p"}, {"log", "-p", "-U5", "--all"},
		{"blame", "app.yaml"}, {"blame", "-L", "1,1", "app.properties"}, {"blame", "HEAD~1", "--", "app.yaml"},
		{"show", "HEAD:deploy.sh"}, {"log", "--format=%H %s %b"}, {"log", "--grep=deploy", "--format=%B"},
	} {
		out, err := runGit(ctx, ws, args[0], args[1:], 0)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		for _, v := range oneViewValues {
			if strings.Contains(out, v) {
				t.Fatalf("git %v shows %q:\n%s", args, v, out)
			}
		}
		if !strings.Contains(out, "[REDACTED") {
			t.Fatalf("git %v: nothing redacted, so nothing was tested:\n%s", args, out)
		}
	}
	// The message search: a right and a wrong guess at the token in a
	// commit message answer alike; the redacted text itself is found.
	probe := func(args ...string) string {
		out, err := runGit(ctx, ws, "log", append([]string{"--oneline"}, args...), 0)
		if err != nil {
			return err.Error()
		}
		return out
	}
	for _, p := range [][2]string{{"ghp_Q7", "ghp_Q8"}, {"Q7x9Lm", "Q7x9Ln"}, {"token ghp_[Q]", "token ghp_[R]"}} {
		if r, w := probe("--grep="+p[0]), probe("--grep="+p[1]); r != w {
			t.Fatalf("--grep %q and %q answer differently:\n%s\n%s", p[0], p[1], r, w)
		}
		if r, w := probe("-F", "--invert-grep", "--grep="+p[0]), probe("-F", "--invert-grep", "--grep="+p[1]); r != w {
			t.Fatalf("--invert-grep %q and %q answer differently", p[0], p[1])
		}
	}
	if out := probe("--grep=token \\[REDACTED"); !strings.Contains(out, "first") {
		t.Fatalf("the redacted message is not what --grep searches: %s", out)
	}
	// What git would answer from contents or messages as stored is refused.
	for _, args := range [][]string{
		{"log", "-S", "pgv4lue0ld"}, {"log", "-G", "pgv4"}, {"blame", "-L", "/pgv4lue/,+1", "app.yaml"}, {"blame", "-L", ":POSTGRES", "app.yaml"},
		{"show", ":/deploy token ghp"}, {"show", "HEAD^{/ghp_Q7}"}, {"log", "HEAD^{/ghp_Q7}..HEAD"},
		{"show", "lightweight-env"}, {"show", "annotated-env"}, {"show", "tree-tag"}, {"log", "annotated-env"}, {"diff", "annotated-env", "HEAD"},
		{"log", "--format=%+G?"}, {"log", "--format=%-GS"}, {"log", "--format=% GK"}, {"log", "--format=%<(9)%GG"}, {"log", "--pretty=tformat:%Cred%G?%(x)"},
	} {
		out, err := runGit(ctx, ws, args[0], args[1:], 0)
		if err == nil {
			t.Fatalf("git %v was answered:\n%s", args, out)
		}
		for _, v := range oneViewValues {
			if strings.Contains(err.Error(), v) {
				t.Fatalf("git %v: the refusal shows %q: %v", args, v, err)
			}
		}
	}
	// Formats that only look like %G stay usable.
	for _, f := range []string{"%%G?", "%h %<(20)%s", "%w(72,4,8)%b", "%C(yellow)%h%Creset", "%(describe)"} {
		if _, err := runGit(ctx, ws, "log", []string{"-n1", "--format=" + f}, 0); err != nil {
			t.Fatalf("--format=%s: %v", f, err)
		}
	}
}

// git log --grep patterns are bounded like search_files': one that would
// cost seconds per message is refused with what to change.
func TestGitGrepPatternBounded(t *testing.T) {
	t.Parallel()
	ws, _ := oneViewRepo(t)
	_, err := runGit(context.Background(), ws, "log", []string{"-E", "--grep=[a-z]{0,1000}c"}, 0)
	if err == nil || !strings.Contains(err.Error(), "too costly") {
		t.Fatalf("err = %v", err)
	}
}

// Hardened git: hostile .git/config and .gitattributes run nothing.
func TestGitHardening(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ws, dir, outside := hostileWorkspace(t)
	marker := filepath.Join(outside, "pwned")
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run("init", "-q")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".env"), []byte(secret), 0o644)
	run("add", "-f", "a.txt", ".env", "agents/harvey.yaml")
	run("commit", "-qm", "init")
	evil := "touch " + marker
	cfg := "\n[core]\n\tfsmonitor = " + evil + "\n[diff]\n\texternal = " + evil + "\n[diff \"x\"]\n\ttextconv = " + evil + "\n[filter \"x\"]\n\tclean = " + evil + "\n\tsmudge = " + evil + "\n[log]\n\tshowSignature = true\n[gpg]\n\tprogram = " + evil + "\n"
	f, _ := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(cfg)
	f.Close()
	os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("*.txt diff=x filter=x\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git", "hooks", "post-index-change"), []byte("#!/bin/sh\n"+evil+"\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644)
	ctx := context.Background()
	for _, sub := range []string{"status", "diff", "log", "show"} {
		if _, err := runGit(ctx, ws, sub, []string{"-p"}[:0], 0); err != nil {
			t.Fatalf("git %s: %v", sub, err)
		}
	}
	if _, err := runGit(ctx, ws, "blame", []string{"a.txt"}, 0); err != nil {
		t.Fatalf("blame: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hostile git config ran a program")
	}
	log, _ := runGit(ctx, ws, "log", []string{"-p"}, 0)
	if strings.Contains(log, secret) {
		t.Fatalf("log -p leaked a denied file: %s", log)
	}
	refused := [][]string{
		{"diff", "--output=" + marker}, {"diff", "--outp=" + marker}, {"log", "--output", marker},
		{"diff", "/etc/passwd", "/dev/null"}, {"diff", "--no-index", "a.txt", "../outside/secret.txt"},
		{"blame", "--contents", "/etc/passwd", "a.txt"}, {"blame", "--ignore-revs-file", "/etc/x", "a.txt"},
		{"log", "--ext-diff", "-p"}, {"show", "--textconv"}, {"log", "--show-signature"}, {"log", "--remerge-diff"},
		{"show", "HEAD:agents/harvey.yaml"}, {"show", "HEAD:./AGENTS/harvey.yaml"}, {"show", "HEAD:.env"},
		{"log", "--git-dir=/tmp"}, {"log", "--exec-path=/tmp"},
	}
	for _, args := range refused {
		out, err := runGit(ctx, ws, args[0], args[1:], 0)
		if err == nil {
			t.Fatalf("git %v was not refused: %s", args, out)
		}
	}
	if _, err := runGit(ctx, ws, "commit", nil, 0); err == nil {
		t.Fatal("git commit allowed")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("marker created")
	}
}
