package gittool

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/gitrepo"
	"github.com/harvey-agent/harvey/internal/launchtest"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// TestMain: git runs in the sandbox, whose launcher is the test binary.
func TestMain(m *testing.M) { launchtest.Main(m) }

// testWS is a workspace as the session holds it: the path gate's tree and
// its private git directory (the root's Workspace).
type testWS struct {
	tree *wspath.Tree
	repo *gitrepo.Repo
}

// openWS opens dir as the session does (openWorkspace), its private git
// directory's config read by git in the sandbox.
func openWS(t testing.TB, dir string) *testWS {
	t.Helper()
	tree, err := wspath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	run := func(ctx context.Context, home string, argv []string) []byte {
		return runner.Run(ctx, runner.Proc{Dir: home, Argv: argv, Env: gitrepo.Env(home), Timeout: 10 * time.Second, Limit: 1 << 20, SplitStderr: true, Sandbox: sandboxpolicy.GitSpec(tree.Root, home)}).Output
	}
	ws := &testWS{tree: tree, repo: gitrepo.New(tree.OSRoot(), tree.Root, run)}
	t.Cleanup(ws.repo.Close) // its private git directory
	return ws
}

func runGit(ctx context.Context, ws *testWS, sub string, args []string, limit int) (string, error) {
	return Run(ctx, ws.tree, ws.repo, sub, args, limit)
}

func writeFile(t testing.TB, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

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
func hostileRepo(t testing.TB) (*testWS, string, string, string) {
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
	return openWS(t, dir), dir, outside, marker
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
		if wspath.LexicalPolicy(f, f, wspath.OpRead) == nil {
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
	ws := openWS(t, dir)
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

func TestGitNotARepo(t *testing.T) {
	ws := openWS(t, t.TempDir())
	_, err := runGit(context.Background(), ws, "status", nil, 0)
	if err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("err = %v", err)
	}
}
