package harvey

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"show", "HEAD^{/first}:main.go"}, "line 1"},
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

// The pickaxe reads file content: a guess at a denied file's content must
// answer exactly as a wrong guess does (log without a pickaxe or a diff
// lists commits without the exclude pathspecs; with one, they stay).
func TestGitPickaxeIsNotAnOracle(t *testing.T) {
	t.Parallel()
	ws, _, _, _ := hostileRepo(t)
	ctx := context.Background()
	for _, opt := range []string{"-S", "-G"} {
		right, err1 := runGit(ctx, ws, "log", []string{"--oneline", opt, "DENIED0-" + secret}, 0)
		wrong, err2 := runGit(ctx, ws, "log", []string{"--oneline", opt, "DENIED0-not-the-secret"}, 0)
		if err1 != nil || err2 != nil || right != wrong {
			t.Fatalf("log %s: a right guess %q (%v) and a wrong one %q (%v) differ", opt, right, err1, wrong, err2)
		}
	}
	// The same pickaxe finds what is not denied.
	if out, err := runGit(ctx, ws, "log", []string{"--oneline", "-S", "SRCSECRET"}, 0); err != nil || !strings.Contains(out, "first") {
		t.Fatalf("pickaxe on an allowed file: %q %v", out, err)
	}
}

// The output filter is the second line of defence: a diff section of a
// denied file is dropped whole, whatever its hunks hold.
func TestFilterGitOutput(t *testing.T) {
	in := "commit abc\n\n    msg\n\n" +
		"diff --git a/ok.go b/ok.go\nindex 1..2 100644\n--- a/ok.go\n+++ b/ok.go\n@@ -1,2 +1,2 @@\n ctx\n-old\n+new\n" +
		"diff --git a/.env b/.env\nindex 1..2 100644\n--- a/.env\n+++ b/.env\n@@ -1 +1,2 @@\n-A=" + secret + "\n+diff --git a/x b/x\n+B=" + secret + "\n" +
		"diff --git \"a/agents/h\\303\\244.yaml\" \"b/agents/h\\303\\244.yaml\"\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-" + secret + "\n+" + secret + "\n" +
		"M\t.env\nok.go | 2 +-\n.env | 2 +-\n?? id_rsa\n R  a.go -> .netrc\n\tmodified:   .env\nafter\n"
	out, n := filterGitOutput(in, func(p string) bool { return lexicalPolicy(p, p, opRead) != nil })
	if strings.Contains(out, secret) || strings.Contains(out, ".env") || strings.Contains(out, "id_rsa") || strings.Contains(out, ".netrc") {
		t.Fatalf("leaked:\n%s", out)
	}
	if !strings.Contains(out, "+new") || !strings.Contains(out, "ok.go | 2 +-") || !strings.Contains(out, "after") || !strings.Contains(out, "msg") {
		t.Fatalf("dropped too much:\n%s", out)
	}
	if n != 7 {
		t.Fatalf("dropped %d entries, want 7", n)
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
	cf := &ConfigFile{Config: defaultConfig()}
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
	if err != nil || strings.Contains(out, "SRCSECRET") || !strings.Contains(out, "left out") {
		t.Fatalf("show HEAD~1 with src denied: %v\n%s", err, out)
	}
	// Through the executor, coercion keeps a list a list.
	if err := coerceArgs(mustTool(t, a, "git_command").Function.Parameters, map[string]any{"subcommand": "log", "args": []any{"-n", 3.0}}); err != nil {
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
