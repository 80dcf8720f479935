package harvey

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/config"
)

// deniedCommitted are committed files of every denylist class, each holding
// a unique secret; none may ever appear in git output.
var deniedCommitted = []string{
	".env", "config/.env.production", ".envrc", ".pgpass", ".kube/config", ".docker/config.json",
	"secrets.yaml", ".htpasswd", "id_rsa", "deploy/id_ed25519", "server.pem", "tls.key", "creds.p12",
	"credentials.json", ".ssh/config", "prod.tfvars", ".netrc", ".npmrc", ".git-credentials",
	"gcp-service-account.json", "agents/harvey.yaml", "AGENTS/notes.md",
}

// hostileRepo builds a repository whose .git/ tries every way to run a
// program or reach outside, with committed denied files. It returns the
// workspace, its directory, the outside directory and the marker path that
// any program run from the repository would create.
func hostileRepo(t testing.TB) (*Workspace, string, string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("OUTSIDE-"+secret+"\n"), 0o644)
	marker := filepath.Join(outside, "pwned")
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
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	writeFile(t, dir, "main.go", strings.Join(lines, "\n")+"\n")
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "src/x.go", "package x // SRCSECRET\n")
	for i, f := range deniedCommitted {
		writeFile(t, dir, f, fmt.Sprintf("DENIED%d-%s\n", i, secret))
	}
	git("add", "-f", ".")
	git("commit", "-qm", "first")
	writeFile(t, dir, "main.go", strings.Join(lines, "\n")+"\nline 31\n")
	for i, f := range deniedCommitted {
		writeFile(t, dir, f, fmt.Sprintf("DENIED%d-%s changed\n", i, secret))
	}
	git("add", "-f", ".")
	git("commit", "-qm", "second")
	// Working-tree changes too (status, diff).
	writeFile(t, dir, "a.txt", "two\n")
	writeFile(t, dir, ".env", "WORKTREE-"+secret+"\n")
	// The hostile configuration: every program-running key, a driver whose
	// name holds "=", and a 70 KB value that pushes the drivers far down.
	evil := "touch " + marker
	big := strings.Repeat("x", 70<<10)
	cfg := "\n[junk]\n\tbig = " + big + "\n[core]\n\tfsmonitor = " + evil + "\n\tpager = " + evil + "\n\tworktree = " + outside +
		"\n[diff]\n\texternal = " + evil + "\n[diff \"x\"]\n\ttextconv = " + evil + "\n\tcommand = " + evil +
		"\n[diff \"a=b\"]\n\ttextconv = " + evil + "\n[filter \"x\"]\n\tclean = " + evil + "\n\tsmudge = " + evil + "\n\tprocess = " + evil +
		"\n[filter \"a=b\"]\n\tclean = " + evil + "\n[merge \"x\"]\n\tdriver = " + evil +
		"\n[log]\n\tshowSignature = true\n[gpg]\n\tprogram = " + evil + "\n[include]\n\tpath = " + filepath.Join(outside, "inc") +
		"\n[alias]\n\tst = !" + evil + "\n"
	os.WriteFile(filepath.Join(outside, "inc"), []byte("[core]\n\tfsmonitor = "+evil+"\n"), 0o644)
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(cfg)
	f.Close()
	writeFile(t, dir, ".gitattributes", "*.txt diff=x filter=x merge=x\n*.go diff=a=b filter=a=b\n")
	for _, h := range []string{"post-index-change", "pre-commit", "post-checkout"} {
		os.WriteFile(filepath.Join(dir, ".git", "hooks", h), []byte("#!/bin/sh\n"+evil+"\n"), 0o755)
	}
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, dir, outside, marker
}

// assertNoLeak fails when git output holds a denied file's content, the
// outside secret, or when a program from the repository ran.
func assertNoLeak(t testing.TB, what, out, marker string) {
	t.Helper()
	if strings.Contains(out, secret) {
		t.Fatalf("%s leaked a secret:\n%s", what, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("%s: a program from the repository ran", what)
	}
}

func TestGitByConstructionOrdinaryUse(t *testing.T) {
	t.Parallel()
	ws, _, _, marker := hostileRepo(t)
	ctx := context.Background()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "a.txt"},
		{[]string{"status", "-sb"}, "## main"},
		{[]string{"log", "-n", "5", "--oneline"}, "second"},
		{[]string{"log", "-n5", "--oneline"}, "first"},
		{[]string{"log", "-2", "--format=%h %s"}, "second"},
		{[]string{"diff", "HEAD~1"}, "+line 31"},
		{[]string{"diff"}, "+two"},
		{[]string{"show", "HEAD"}, "+line 31"},
		{[]string{"show", "HEAD~1:main.go"}, "line 30"},
		{[]string{"show", "HEAD~1^{commit}:main.go"}, "line 1"},
		{[]string{"log", "--oneline", "--grep=fir"}, "first"},
		{[]string{"log", "--oneline", "-i", "--grep", "SEC\\(OND\\|xx\\)"}, "second"},
		{[]string{"log", "--format=%h %s", "-E", "--grep=^(first|nothing)$"}, "first"},
		{[]string{"log", "--oneline", "--invert-grep", "--grep=first"}, "second"},
		{[]string{"show", "--stat", "HEAD"}, "main.go"},
		{[]string{"blame", "-L", "10,20", "main.go"}, "line 10"},
		{[]string{"blame", "-L10,+3", "HEAD~1", "--", "main.go"}, "line 12"},
		{[]string{"log", "--oneline", "HEAD~1..HEAD"}, "second"},
		{[]string{"log", "--oneline", "--", "main.go"}, "first"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, err := runGit(ctx, ws, c.args[0], c.args[1:], 0)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !strings.Contains(out, c.want) {
				t.Fatalf("want %q in:\n%s", c.want, out)
			}
			assertNoLeak(t, strings.Join(c.args, " "), out, marker)
		})
	}
}

func TestGitByConstructionRefusals(t *testing.T) {
	ws, _, outside, marker := hostileRepo(t)
	ctx := context.Background()
	shadow := filepath.Join(outside, "secret.txt")
	refused := [][]string{
		// Option bundling: blame -S reads any file as grafts; diff -O an order file.
		{"blame", "-wS" + shadow, "a.txt"}, {"blame", "-S", shadow, "a.txt"}, {"blame", "-wS../outside/secret.txt", "a.txt"},
		{"blame", "-wSagents/harvey.yaml", "a.txt"}, {"diff", "-pO" + shadow}, {"diff", "-O", shadow},
		// Revision syntax: colons inside braces do not split REV:PATH.
		{"show", "HEAD^{/:*}:agents/harvey.yaml"}, {"show", "HEAD^{/:*}:.env"}, {"show", "HEAD:agents/harvey.yaml"},
		{"show", "HEAD:./AGENTS/harvey.yaml"}, {"show", "HEAD~1:.env"}, {"show", ":.env"}, {"show", ":0:.env"},
		{"show", "HEAD:config/.env.production"}, {"show", "HEAD:.kube/config"},
		// Signature placeholders run gpg.
		{"log", "--format=%G?"}, {"log", "--pretty=format:%GS"}, {"show", "--format=tformat:%GK"},
		// Not in the allowlist: writes, reads outside, programs, abbreviations.
		{"status", "-v"}, {"diff", "--output=" + marker}, {"diff", "--outp=" + marker}, {"log", "--output", marker},
		{"diff", shadow, "/dev/null"}, {"diff", "--no-index", "a.txt", "../outside/secret.txt"},
		{"blame", "--contents", shadow, "a.txt"}, {"blame", "--ignore-revs-file", shadow, "a.txt"},
		{"log", "--ext-diff", "-p"}, {"show", "--textconv"}, {"log", "--show-signature"}, {"log", "--remerge-diff"},
		{"log", "--diff-merges=r"}, {"log", "--git-dir=/tmp"}, {"log", "-C", "/"}, {"log", "--onel"},
		{"log", "--format"}, {"diff", "--", ":(top).env"}, {"log", "--", "../outside"},
		// Bare objects other than commits and tags.
		{"show", "HEAD^{tree}"}, {"commit"}, {"log", "-"},
	}
	for _, args := range refused {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := runGit(ctx, ws, args[0], args[1:], 0)
			if err == nil {
				t.Fatalf("not refused:\n%s", out)
			}
			assertNoLeak(t, strings.Join(args, " "), err.Error(), marker)
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

// Every way git prints files leaves out the denied ones, with the same
// policy as read_file: what read_file refuses, git does not show.
func TestGitDeniedFilesNeverShown(t *testing.T) {
	t.Parallel()
	ws, _, _, marker := hostileRepo(t)
	ctx := context.Background()
	for _, f := range deniedCommitted {
		if _, err := readWorkspaceFile(ws, f, 0, 0, 0); err == nil {
			t.Fatalf("read_file reads %s, which git output leaves out: the policies differ", f)
		}
	}
	for _, args := range [][]string{
		{"show", "HEAD"}, {"show", "HEAD~1"}, {"log", "-p"}, {"log", "-p", "--all"}, {"diff", "HEAD~1"},
		{"diff", "HEAD~1", "HEAD"}, {"diff"}, {"diff", "--cached"}, {"log", "--stat", "-p"}, {"show", "--name-status", "HEAD"},
		{"log", "-p", "-U100"}, {"show", "HEAD", "--", "."}, {"show", "-M", "HEAD"}, {"status"}, {"status", "--porcelain=v2"},
		{"show", "HEAD:"}, {"show", "HEAD:config"}, {"log", "-p", "--", "*.env"}, {"show", "HEAD", "--", "agents"},
		{"log"}, {"log", "--oneline", "--all"}, {"log", "--format=%H %s %b"}, {"log", "--name-only"}, {"log", "--raw"},
		{"log", "--follow", "--", ".env"}, {"log", "-S", secret}, {"log", "-G", "DENIED"},
	} {
		out, err := runGit(ctx, ws, args[0], args[1:], 0)
		if err != nil && !strings.Contains(err.Error(), "refused") {
			t.Fatalf("git %v: %v", args, err)
		}
		assertNoLeak(t, strings.Join(args, " "), out, marker)
	}
}

// The pickaxe reads file content as stored: it is refused with what to
// use instead, so no guess at a denied file's content is answered.
func TestGitPickaxeIsNotAnOracle(t *testing.T) {
	t.Parallel()
	ws, _, _, _ := hostileRepo(t)
	ctx := context.Background()
	for _, args := range [][]string{{"--oneline", "-S", "DENIED0-" + secret}, {"-G", "x"}, {"-pS", "x"}, {"--pickaxe-regex"}, {"--pickaxe-all"}} {
		_, err := runGit(ctx, ws, "log", args, 0)
		if err == nil || !strings.Contains(err.Error(), "search_files") || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("log %v: %v", args, err)
		}
	}
}

// A .git that leads elsewhere is refused in one line.
func TestGitRefusesRedirection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("commondir", func(t *testing.T) {
		ws, dir, outside, _ := hostileRepo(t)
		os.WriteFile(filepath.Join(dir, ".git", "commondir"), []byte(outside+"\n"), 0o644)
		if _, err := runGit(ctx, ws, "status", nil, 0); err == nil || !strings.Contains(err.Error(), "commondir") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("alternates", func(t *testing.T) {
		ws, dir, outside, _ := hostileRepo(t)
		os.WriteFile(filepath.Join(dir, ".git", "objects", "info", "alternates"), []byte(outside+"\n"), 0o644)
		if _, err := runGit(ctx, ws, "log", nil, 0); err == nil || !strings.Contains(err.Error(), "alternates") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("linked refs", func(t *testing.T) {
		ws, dir, outside, _ := hostileRepo(t)
		os.Symlink(outside, filepath.Join(dir, ".git", "refs", "heads", "steal"))
		if _, err := runGit(ctx, ws, "log", nil, 0); err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("dot git file", func(t *testing.T) {
		ws, dir, outside, _ := hostileRepo(t)
		os.RemoveAll(filepath.Join(dir, ".git"))
		os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+outside+"\n"), 0o644)
		if _, err := runGit(ctx, ws, "status", nil, 0); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("err = %v", err)
		}
	})
}

// The tool takes args as a list (what llama3.2 sends) or a string, and the
// policy includes permissions: a directory without read permission is left
// out of git output just as read_file refuses it.
func TestGitToolArgsAndPermissions(t *testing.T) {
	ws, _, _, marker := hostileRepo(t)
	cf := &ConfigFile{Config: config.Default()}
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
	assertNoLeak(t, "tool", out, marker)
}

func mustTool(t *testing.T, a *Agent, name string) anyllmTool {
	t.Helper()
	tool, _, ok := a.Tools.GetTool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool
}

// FuzzGitArgs feeds random argument lists to the vetting; every accepted
// list runs against the hostile repository, and the oracle checks that no
// program from it ran and no denied or outside byte came back.
func FuzzGitArgs(f *testing.F) {
	for _, s := range []string{"log\x00-n\x005", "blame\x00-wS/etc/passwd\x00a.txt", "show\x00HEAD^{/:*}:.env", "diff\x00HEAD~1",
		"log\x00--format=%G?", "show\x00HEAD:", "log\x00-p\x00--all", "status\x00-sb", "log\x00--grep=x\x00-i", "show\x00:/first"} {
		f.Add(s)
	}
	ws, _, _, marker := hostileRepo(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, s string) {
		parts := strings.Split(s, "\x00")
		if len(parts) == 0 || len(parts) > 8 {
			return
		}
		out, err := runGit(ctx, ws, parts[0], parts[1:], 4096)
		if err != nil {
			out = err.Error()
		}
		if strings.Contains(out, secret) {
			t.Fatalf("git %q leaked:\n%s", parts, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("git %q ran a program from the repository", parts)
		}
	})
}

// A committed file (not denied by name) holding a private key: a hunk or a
// blame range that starts inside the key shows none of its body.
func TestGitWindowsOfAKey(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	key := []string{"-----BEGIN OPENSSH PRIVATE KEY-----",
		"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
		"QyNTUxOQAAACDpUvgnJ9qD1Ym6q4Kx2z8f0aXq0Jr7o9n8tPzv6W3kGQAAAJgL3Z1yC9m",
		"dcgAAAAtzc2gtZWQyNTUxOQAAACDpUvgnJ9qD1Ym6q4Kx2z8f0aXq0Jr7o9n8tPzv6W3kG",
		"-----END OPENSSH PRIVATE KEY-----"}
	body := "notes\n" + strings.Join(key, "\n") + "\nend\n"
	g := "git -c user.name=t -c user.email=t@t"
	cmd := exec.Command("sh", "-c", `git init -q && printf '%s' "$BODY" > notes.md && `+g+` add notes.md && `+g+` commit -qm key && sed -i 's/L3Z1yC9m/L3Z1yC9X/' notes.md && `+g+` commit -qam rotate`)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BODY="+body, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ctx := context.Background()
	for _, args := range [][]string{{"log", "-p", "-U0", "-n", "1"}, {"show", "-U1", "HEAD"}, {"blame", "-L", "3,4", "notes.md"}, {"blame", "-L3,+2", "HEAD~1", "--", "notes.md"}, {"diff", "-U0", "HEAD~1"}} {
		out, err := runGit(ctx, ws, args[0], args[1:], 0)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		for _, l := range key[1:4] {
			if strings.Contains(out, l[:30]) {
				t.Fatalf("git %v showed key material:\n%s", args, out)
			}
		}
	}
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
	writeFile(t, env.dir, "a.txt", "one\ntwo\n")
	git("add", "a.txt")
	git("commit", "-qm", "first")
	writeFile(t, env.dir, "a.txt", "one\nthree\n")
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
	writeFile(t, env.dir, "café.txt", "x\n")
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
	writeFile(t, dir, "app.yaml", "db:\n  POSTGRES_PASSWORD: pgv4lue0ld\n")
	writeFile(t, dir, ".env", "API_TOKEN="+oneViewToken+"\n")
	git("add", "-f", ".")
	git("commit", "-qm", "first\n\ndeploy token "+oneViewToken)
	writeFile(t, dir, "app.yaml", "db:\n  POSTGRES_PASSWORD: pgv4luen3w # rotated\n")
	writeFile(t, dir, "app.properties", "spring.datasource.password=spr1ngv4lue\n")
	writeFile(t, dir, "deploy.sh", "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCY\n")
	git("add", ".")
	git("commit", "-qm", "second")
	writeFile(t, dir, "local.env.sh", "DB_PASSWORD=hunter2hunter2 # uncommitted\n")
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

func TestGitNotARepo(t *testing.T) {
	ws, _, _ := hostileWorkspace(t)
	_, err := runGit(context.Background(), ws, "status", nil, 0)
	if err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("err = %v", err)
	}
}
