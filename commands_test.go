package harvey

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/configfile"
)

func dispatch(t *testing.T, a *Agent, line string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- a.Dispatch(t.Context(), line, &out) }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s hung", line)
	}
	return "", nil
}

func TestWriteAndApply(t *testing.T) {
	env := newTestEnv(t, nil, "")
	a := env.a
	if _, err := dispatch(t, a, "/write out.txt"); err == nil || !strings.Contains(err.Error(), "no reply to write yet") {
		t.Fatalf("/write with no reply: %v", err)
	}
	a.AddMessage("assistant", "Here it is:\n```go\npackage main\n\nfunc main() {}\n```\nDone.")
	if out, err := dispatch(t, a, "/write cmd/x/main.go"); err != nil || !strings.Contains(out, "created cmd/x/main.go") {
		t.Fatalf("/write: %q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "cmd", "x", "main.go")); string(b) != "package main\n\nfunc main() {}\n" {
		t.Fatalf("written = %q", b)
	}
	for _, bad := range []string{"/write agents/harvey.yaml", "/write ../out.txt", "/write .env", "/write .git/config"} {
		if _, err := dispatch(t, a, bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	a.AddMessage("assistant", "Two files:\n```go util/a.go\npackage util\n```\n```text notes/b.txt\nhello\n```\n```python ../escape.py\nx\n```\n```\nuntagged\n```\n")
	out, err := dispatch(t, a, "/apply")
	if err == nil || !strings.Contains(err.Error(), "outside the workspace") || !strings.Contains(out, "created util/a.go") || !strings.Contains(out, "created notes/b.txt") {
		t.Fatalf("/apply: %q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "notes", "b.txt")); string(b) != "hello\n" {
		t.Fatalf("b.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(env.dir), "escape.py")); err == nil {
		t.Fatal("/apply wrote outside the workspace")
	}
	// Headless without --yes, /apply shows the diffs, asks and is refused.
	a.approvals.auto = false
	a.AddMessage("assistant", "```go util/a.go\npackage util2\n```\n```text \x1b]0;evil\x07n.txt\nx\n```\n")
	out, err = dispatch(t, a, "/apply")
	if err == nil || !strings.Contains(err.Error(), "--yes") || !strings.Contains(out, "write util/a.go\n  --- a/util/a.go\n  +++ b/util/a.go\n  @@ -1,1 +1,1 @@\n  -package util\n  +package util2\n") || strings.Contains(out, "\x1b") {
		t.Fatalf("/apply headless: %q %v", out, err)
	}
	// In the REPL, one question for all files; "n" writes nothing.
	a.Interactive = true
	a.In = newLineReader(strings.NewReader("n\n"))
	if out, err := dispatch(t, a, "/apply"); err != nil || !strings.Contains(out, "nothing written") {
		t.Fatalf("/apply declined: %q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "util", "a.go")); string(b) != "package util\n" {
		t.Fatalf("declined /apply wrote: %q", b)
	}
	a.Interactive = false
	a.AddMessage("assistant", "no code here")
	if _, err := dispatch(t, a, "/apply"); err == nil || !strings.Contains(err.Error(), "no code blocks tagged") {
		t.Fatalf("/apply without blocks: %v", err)
	}
}

// Every bad input to the file commands gets one line, and the session goes on.
func TestReadBadInputsOneLine(t *testing.T) {
	env := newTestEnv(t, nil, "")
	dir := env.dir
	os.WriteFile(filepath.Join(dir, "bin.dat"), []byte("\x7fELF\x00\x00\x01"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("KEY=secret\n"), 0o644)
	syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644)
	huge := filepath.Join(dir, "huge.log")
	f, _ := os.Create(huge)
	f.WriteString(strings.Repeat("log line\n", 20000))
	f.Truncate(2 << 30) // 2 GB, sparse after the text
	f.Close()
	cases := map[string]string{
		"/read ../x":                 "outside the workspace",
		"/read agents/harvey.yaml":   "agents/",
		"/read .env":                 "secret file",
		"/read missing.txt":          "no such file",
		"/read sub":                  "is a directory",
		"/read pipe":                 "not a regular file",
		"/nosuch":                    "unknown command",
		"/read":                      "usage",
		"/files missing":             "no such",
		"/search [unclosed":          "pattern",
		"/git frobnicate":            "",
		"/context":                   "usage",
		"/record start ../../x.md":   "recordings live in",
		"/permissions set":           "usage",
		"/safemode allow":            "usage",
		"/search x ../":              "outside the workspace",
		"/route add x nosuchkind u":  "",
		"/kb project status 1 maybe": "",
	}
	for line, want := range cases {
		_, err := dispatch(t, env.a, line)
		if err == nil {
			t.Fatalf("%s: no error", line)
		}
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: err = %q, want one line with %q", line, err, want)
		}
	}
	out, err := dispatch(t, env.a, "/read bin.dat")
	if err != nil || !strings.Contains(out, "binary file, 7 bytes") {
		t.Fatalf("binary: %q %v", out, err)
	}
	var ms runtimeMem
	ms.start()
	out, err = dispatch(t, env.a, "/read huge.log")
	if err != nil || !strings.Contains(out, "cut at 65536 bytes to fit the context") {
		t.Fatalf("huge: %q %v", out, err)
	}
	if grown := ms.grown(); grown > 64<<20 {
		t.Fatalf("reading a 2 GB file allocated %d MB", grown>>20)
	}
	// The session goes on.
	if out, err := dispatch(t, env.a, "/files"); err != nil || !strings.Contains(out, "bin.dat") {
		t.Fatalf("after bad input: %q %v", out, err)
	}
}

// A workspace Harvey cannot write: it starts, reads and searches, and each
// write says why in one line.
func TestReadOnlyWorkspace(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644)
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	var out, errOut bytes.Buffer
	a, err := Start(t.Context(), Options{Dir: dir, OllamaURL: "http://127.0.0.1:1", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer a.Close()
	if o, err := dispatch(t, a, "/read a.txt"); err != nil || !strings.Contains(o, "read a.txt") {
		t.Fatalf("/read: %q %v", o, err)
	}
	a.AddMessage("assistant", "```\nx\n```")
	for _, line := range []string{"/write b.txt", "/record start", "/kb project add p"} {
		if _, err := dispatch(t, a, line); err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v", line, err)
		}
	}
}

// A workspace path with spaces and non-ASCII letters works everywhere:
// files, search, commands, recording, the knowledge base and the binary.
func TestWorkspaceWithSpacesAndUnicode(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "my project – ünïcødé 日本")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "naïve file.txt"), []byte("café au lait\n"), 0o644)
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	cf, _ := configfile.Load(ws.Tree)
	var out, errOut bytes.Buffer
	a := newAgent(ws, cf, newLineReader(strings.NewReader("")), &out, &errOut)
	a.approvals.auto = true
	defer a.Close()
	for _, step := range [][2]string{
		{"/read naïve file.txt", ""},
		{"/search café", "naïve file.txt:1: café au lait"},
		{"/files", "naïve file.txt"},
		{"/run pwd", dir},
		{"/record start", "recording to agents/sessions/"},
		{"/kb project add café", "project #1 café added"},
		{"/kb observe noté bien", "note #1 recorded on café"},
	} {
		line, want := step[0], step[1]
		o, err := dispatch(t, a, line)
		if line == "/read naïve file.txt" {
			// Arguments split on spaces: the file name with a space is two
			// arguments; the tool takes it whole.
			o, err = "", nil
			if r, e := invokeTool(a, "read_file", t.Context(), map[string]any{"path": "naïve file.txt"}); e != nil || !strings.Contains(r, "café au lait") {
				t.Fatalf("read_file: %q %v", r, e)
			}
		}
		if err != nil || !strings.Contains(o, want) {
			t.Fatalf("%s: %q %v", line, o, err)
		}
	}
	a.Close()
	bin := e2e.Build(t)
	o, e, code := e2e.Run(t, bin, dir, "/files\n/kb\n/exit\n", "--ollama", "http://127.0.0.1:1")
	if code != 0 || !strings.Contains(o, "naïve file.txt") || !strings.Contains(o, "1 project, 1 observation") {
		t.Fatalf("binary: %d %q %q", code, o, e)
	}
}

func TestGitCommandInRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	env := newTestEnv(t, nil, "")
	gitIn := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = env.dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	gitIn("init", "-q")
	os.WriteFile(filepath.Join(env.dir, "a.go"), []byte("package a\n"), 0o644)
	gitIn("add", "a.go")
	gitIn("commit", "-q", "-m", "first")
	os.WriteFile(filepath.Join(env.dir, "a.go"), []byte("package a\n\nvar X = 1\n"), 0o644)
	for line, want := range map[string]string{
		"/git status":        "a.go",
		"/git diff":          "+var X = 1",
		"/git log --oneline": "first",
		"/git show --stat":   "a.go",
	} {
		if o, err := dispatch(t, env.a, line); err != nil || !strings.Contains(o, want) {
			t.Fatalf("%s: %q %v", line, o, err)
		}
	}
	if _, err := dispatch(t, env.a, "/git push"); err == nil {
		t.Fatal("/git push allowed")
	}
}

func TestSplitArgs(t *testing.T) {
	for in, want := range map[string]string{
		`"func NewReplacer" src`:        "func NewReplacer|src",
		`func \(\w+ \*Reader\) x`:       `func|\(\w+|\*Reader\)|x`,
		`'a b'`:                         "a b",
		`it's a "test`:                  `it's|a|"test`,
		`  spaced   out  `:              "spaced|out",
		`"x"y z`:                        `"x"y|z`,
		`"" empty`:                      "|empty",
		`observe decision: don't panic`: "observe|decision:|don't|panic",
	} {
		if got := strings.Join(splitArgs(in), "|"); got != want {
			t.Errorf("splitArgs(%q) = %q, want %q", in, got, want)
		}
	}
	env := newTestEnv(t, nil, "")
	e2e.WriteFile(t, env.dir, "r.go", "func NewReplacer() {}\n")
	if out, err := dispatch(t, env.a, `/search "func NewReplacer"`); err != nil || !strings.Contains(out, "r.go:1:") {
		t.Fatalf("quoted search: %q %v", out, err)
	}
	if _, err := dispatch(t, env.a, `/search func NewReplacer`); err == nil || !strings.Contains(err.Error(), `quote it: /search "func NewReplacer"`) {
		t.Fatalf("unquoted phrase: %v", err)
	}
	if out, err := dispatch(t, env.a, `/run printf '%s|' "a  b"`); err != nil || !strings.Contains(out, "a  b|") {
		t.Fatalf("/run keeps quoting: %q %v", out, err)
	}
}

// The user's own /write and /apply use the one approval (issue 28): who
// asks is named ("always for /write", never "for : "), and "always" for one
// does not silence the other.
func TestWriteAndApplyAskByName(t *testing.T) {
	env := newTestEnv(t, nil, "")
	a := env.a
	a.approvals.auto, a.Interactive = false, true
	var errOut strings.Builder
	a.Err = &errOut
	a.AddMessage("assistant", "```text one.txt\n1\n```\n")
	a.In = newLineReader(strings.NewReader("a\n"))
	if _, err := dispatch(t, a, "/write one.txt"); err != nil {
		t.Fatal(err)
	}
	if !a.approvals.always[approvalKey{byUser, "/write"}] || a.approvals.always[approvalKey{byUser, ""}] || len(a.approvals.always) != 1 {
		t.Fatalf("always was recorded for %v", a.approvals.always)
	}
	a.AddMessage("assistant", "```text two.txt\n2\n```\n")
	a.In = newLineReader(strings.NewReader("n\n"))
	if out, _ := dispatch(t, a, "/apply"); !strings.Contains(out, "nothing written") {
		t.Fatalf("/apply after always for /write: %q %q", out, errOut.String())
	}
	a.In = newLineReader(strings.NewReader("a\n"))
	dispatch(t, a, "/apply")
	a.AddMessage("assistant", "```text three.txt\n3\n```\n")
	a.In = newLineReader(strings.NewReader(""))
	if out, err := dispatch(t, a, "/apply"); err != nil || !strings.Contains(out, "created three.txt") {
		t.Fatalf("always for /apply: %q %v", out, err)
	}
}

func TestSlashCommands(t *testing.T) {
	env := newTestEnv(t, nil, "")
	ctx := context.Background()
	os.WriteFile(filepath.Join(env.dir, "main.go"), []byte("package main\n"), 0o644)
	ok := []string{"/help", "/help read", "/status", "/files", "/read main.go", "/search package", "/run echo hi", "!echo bang",
		"/context add remember this", "/context show", "/clear", "/safemode status", "/permissions list", "/audit show 5",
		"/security", "/record start", "/record status", "/record stop", "/tools", "/route list"}
	for _, c := range ok {
		if err := env.a.Dispatch(ctx, c, env.out); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	out := env.out.String()
	for _, w := range []string{"main.go", "hi\n[exit 0]", "BANG", "recording to agents/sessions/", "read_file"} {
		if w == "BANG" {
			w = "bang"
		}
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(env.a.History[1].Content, "[pinned context]\nremember this") {
		t.Fatalf("pinned context lost by /clear: %v", env.a.History)
	}
	bad := map[string]string{"/nosuch": "unknown command", "/read": "usage", "/search": "usage", "/git": "usage", "/run": "usage", "/audit show x": "positive", "/permissions set src rwx": "unknown permission", "!": "usage"}
	for c, want := range bad {
		if err := env.a.Dispatch(ctx, c, env.out); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if err := env.a.RunPrompt(ctx, "hello"); err == nil || !strings.Contains(err.Error(), "ollama serve") {
		t.Fatalf("no backend: %v", err)
	}
}

// /apply reads the fence shapes the original specified (issue 37): a
// language and a path, a path alone (```README.md, ```src/x.go), and a
// language alone, which names no file.
func TestApplyFenceShapes(t *testing.T) {
	for info, want := range map[string]string{
		"go src/x.go": "src/x.go", "go:src/x.go": "src/x.go", "text notes/b.txt": "notes/b.txt",
		"README.md": "README.md", "src/x.go": "src/x.go", ".gitignore": ".gitignore", "Makefile.am": "Makefile.am",
		"go": "", "python": "", "c++": "", "": "", "objective-c": "", "json {\"a\":1}": "",
	} {
		if got := fencePath(info); got != want {
			t.Errorf("```%s: %q, want %q", info, got, want)
		}
	}
	env := newTestEnv(t, nil, "")
	env.a.AddMessage("assistant", "Files:\n```README.md\n# Title\n```\n```src/x.go\npackage x\n```\n```go cmd/y.go\npackage y\n```\n```go\npackage untagged\n```\n")
	if out, err := dispatch(t, env.a, "/apply"); err != nil || strings.Count(out, "created") != 3 {
		t.Fatalf("/apply: %q %v", out, err)
	}
	for p, want := range map[string]string{"README.md": "# Title\n", "src/x.go": "package x\n", "cmd/y.go": "package y\n"} {
		if b, _ := os.ReadFile(filepath.Join(env.dir, p)); string(b) != want {
			t.Errorf("%s = %q", p, b)
		}
	}
	if _, err := os.Stat(filepath.Join(env.dir, ".md")); err == nil {
		t.Error("```README.md wrote .md")
	}
}

// /help starts with what a newcomer needs (issue 55) and fits a 24-row
// terminal, naming every command (issue 62); /help all lists every
// command with what it does, once.
func TestHelpStartsWithTheNewcomersCommands(t *testing.T) {
	env := newTestEnv(t, nil, "")
	var out strings.Builder
	if err := env.a.Dispatch(t.Context(), "/help", &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	first := strings.Index(text, "\n  ")
	if !strings.Contains(text[:first+1], "Start here") {
		t.Errorf("/help does not start with what a newcomer needs:\n%s", text)
	}
	if n := strings.Count(strings.TrimRight(text, "\n"), "\n") + 1; n > 23 {
		t.Errorf("/help is %d lines: it does not fit 24 rows with the prompt\n%s", n, text)
	}
	for _, n := range env.a.commands.names() {
		if !strings.Contains(text, "/"+n+" ") && !strings.Contains(text, "/"+n+"\n") && !strings.Contains(text, env.a.commands[n].Usage) {
			t.Errorf("/help does not name /%s", n)
		}
	}
	out.Reset()
	if err := env.a.Dispatch(t.Context(), "/help all", &out); err != nil {
		t.Fatal(err)
	}
	for _, n := range env.a.commands.names() {
		usage := env.a.commands[n].Usage
		if c := strings.Count(out.String(), "  "+usage); c != 1 {
			t.Errorf("/help all lists %s %d times", usage, c)
		}
	}
}
