package harvey

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/diff"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/wsfile"
)

// read_file's "continue with offset=N" reaches the model at every num_ctx:
// the result cap keeps the room it promises past the limit.
func TestPagingHintSurvivesEveryNumCtx(t *testing.T) {
	for _, numCtx := range []int{2048, 8192, 32768, 65536, 131072} {
		t.Run(fmt.Sprint(numCtx), func(t *testing.T) {
			f := fakeollama.New(t, "llama3.2:latest")
			env := newTestEnv(t, f, "llama3.2")
			setNumCtx(env, numCtx)
			var b strings.Builder
			for i := 0; b.Len() < 300<<10; i++ {
				fmt.Fprintf(&b, "line %06d of a long file\n", i)
			}
			os.WriteFile(filepath.Join(env.dir, "big.txt"), []byte(b.String()), 0o644)
			f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r", Name: "read_file", Args: map[string]any{"path": "big.txt"}}), fakeollama.TextReply("llama3.2", "ok"))
			if err := env.a.RunPrompt(t.Context(), "read big.txt"); err != nil {
				t.Fatal(err)
			}
			res := fakeollama.ToolResults(f.ChatRequests())["r"]
			if !strings.Contains(res, "continue with offset=") {
				t.Fatalf("no paging hint in %d bytes: ...%q", len(res), res[max(0, len(res)-200):])
			}
		})
	}
}

// gateEnv: a workspace whose permissions deny private/ entirely and leave
// delete out everywhere, with a link into private/ and a git history that
// holds private/k.txt.
func gateEnv(t *testing.T) *testEnv {
	t.Helper()
	env := newTestEnv(t, nil, "")
	e2e.WriteFile(t, env.dir, "src/a.go", "package a // KEEP-IN\n")
	e2e.WriteFile(t, env.dir, "private/k.txt", "KEEP-OUT\n")
	os.Symlink("private", filepath.Join(env.dir, "link"))
	os.Symlink("private/k.txt", filepath.Join(env.dir, "alias.txt"))
	if _, err := exec.LookPath("git"); err == nil {
		for _, c := range [][]string{{"init", "-q"}, {"add", "src", "private"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"}} {
			cmd := exec.Command("git", c...)
			cmd.Dir = env.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", c, err, out)
			}
		}
	}
	env.a.Config.Permissions = map[string][]string{".": {"read", "write", "exec"}, "private": {}}
	return env
}

// Every tool and its slash command meet the same gate: denied by
// permission, by a link into a denied place, inside a search, a listing and
// git output, and a delete without the delete permission.
func TestOneGateToolsAndCommandsAgree(t *testing.T) {
	env := gateEnv(t)
	hasGit := true
	if _, err := exec.LookPath("git"); err != nil {
		hasGit = false
	}
	slash := func(line string) (string, error) {
		var out strings.Builder
		err := env.a.Dispatch(t.Context(), line, &out)
		return out.String(), err
	}
	type call struct {
		tool string
		args map[string]any
	}
	denied := []struct {
		name string
		tool call
		cmd  string
		want string // in both refusals
	}{
		{"read by permission", call{"read_file", map[string]any{"path": "private/k.txt"}}, "/read private/k.txt", "no read permission"},
		{"read through a linked directory", call{"read_file", map[string]any{"path": "link/k.txt"}}, "/read link/k.txt", "no read permission for private/k.txt"},
		{"read through a linked file", call{"read_file", map[string]any{"path": "alias.txt"}}, "/read alias.txt", "no read permission for private/k.txt"},
		{"list a denied directory", call{"list_files", map[string]any{"path": "private"}}, "/files private", "no read permission"},
		{"list through a link", call{"list_files", map[string]any{"path": "link"}}, "/files link", "no read permission for private"},
		{"search a denied directory", call{"search_files", map[string]any{"pattern": "KEEP", "path": "link"}}, "/search KEEP link", "no read permission for private"},
		{"write by permission", call{"write_file", map[string]any{"path": "private/new.txt", "content": "x"}}, "/write private/new.txt", "no write permission"},
		{"write through a link", call{"write_file", map[string]any{"path": "alias.txt", "content": "x"}}, "/write alias.txt", "no write permission for private/k.txt"},
		{"edit through a link", call{"edit_file", map[string]any{"path": "alias.txt", "old_text": "KEEP", "new_text": "x"}}, "", "no write permission for private/k.txt"},
	}
	if hasGit {
		denied = append(denied, struct {
			name string
			tool call
			cmd  string
			want string
		}{"git show of a denied file", call{"git_command", map[string]any{"subcommand": "show", "args": []any{"HEAD:private/k.txt"}}}, "/git show HEAD:private/k.txt", "no read permission"})
	}
	env.a.History = append(env.a.History, llm.Message{Role: "assistant", Content: "```\nx\n```"})
	for _, c := range denied {
		t.Run(c.name, func(t *testing.T) {
			out, err := callTool(t, env, c.tool.tool, c.tool.args)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(out, "KEEP-OUT") {
				t.Fatalf("tool %s: %q %v", c.tool.tool, out, err)
			}
			if c.cmd == "" {
				return
			}
			sout, serr := slash(c.cmd)
			if serr == nil || serr.Error() != err.Error() || strings.Contains(sout, "KEEP-OUT") {
				t.Fatalf("%s: %q %v\ntool said: %v", c.cmd, sout, serr, err)
			}
		})
	}
	// Inside a search, a listing and git output: the denied file is left
	// out, the rest is shown, by the tool and the command alike.
	shown := []struct {
		name  string
		tool  call
		cmd   string
		must  string
		never string
	}{
		{"search", call{"search_files", map[string]any{"pattern": "KEEP"}}, "/search KEEP", "KEEP-IN", "KEEP-OUT"},
		{"listing", call{"list_files", map[string]any{}}, "/files", "src/", "private/"},
	}
	if hasGit {
		shown = append(shown, struct {
			name  string
			tool  call
			cmd   string
			must  string
			never string
		}{"git log -p", call{"git_command", map[string]any{"subcommand": "log", "args": "-p"}}, "/git log -p", "KEEP-IN", "KEEP-OUT"},
			struct {
				name  string
				tool  call
				cmd   string
				must  string
				never string
			}{"git status", call{"git_command", map[string]any{"subcommand": "show", "args": "--stat"}}, "/git show --stat", "src/a.go", "private/k.txt"})
	}
	for _, c := range shown {
		t.Run(c.name, func(t *testing.T) {
			out, err := callTool(t, env, c.tool.tool, c.tool.args)
			if err != nil || !strings.Contains(out, c.must) || strings.Contains(out, c.never) {
				t.Fatalf("tool: %q %v", out, err)
			}
			sout, serr := slash(c.cmd)
			if serr != nil || !strings.Contains(sout, c.must) || strings.Contains(sout, c.never) {
				t.Fatalf("%s: %q %v", c.cmd, sout, serr)
			}
		})
	}
	// Delete: /undo of a file Harvey created needs the delete permission.
	if _, err := callTool(t, env, "write_file", map[string]any{"path": "src/new.txt", "content": "x\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := slash("/undo"); err == nil || !strings.Contains(err.Error(), "no delete permission") {
		t.Fatalf("undo without delete permission: %v", err)
	}
	if _, err := os.Stat(filepath.Join(env.dir, "src", "new.txt")); err != nil {
		t.Fatal("the file was deleted without the delete permission")
	}
	env.a.Config.Permissions["."] = append(env.a.Config.Permissions["."], "delete")
	if _, err := callTool(t, env, "write_file", map[string]any{"path": "src/new2.txt", "content": "x\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := slash("/undo"); err != nil {
		t.Fatalf("undo with delete permission: %v", err)
	}
}

// A route's turn runs with the route model's own limits: its tool rounds,
// its context window and result cap, its tool mode.
func TestRouteTurnHasItsOwnLimits(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.Config.Models = map[string]config.ModelConfig{"mistral": {MaxToolCallsPerTurn: 1, NumCtx: 2048}}
	var out strings.Builder
	if err := env.a.Dispatch(t.Context(), "/route add small ollama "+f.URL()+" mistral", &out); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; b.Len() < 20<<10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	e2e.WriteFile(t, env.dir, "big.txt", b.String())
	read := fakeollama.Call{Name: "read_file", Args: map[string]any{"path": "big.txt"}}
	list := fakeollama.Call{Name: "list_files", Args: map[string]any{}}
	f.Script(fakeollama.ToolReply("mistral", fakeollama.Call{ID: "r1", Name: read.Name, Args: read.Args}),
		fakeollama.ToolReply("mistral", fakeollama.Call{ID: "r2", Name: list.Name, Args: list.Args}),
		fakeollama.ToolReply("mistral", fakeollama.Call{ID: "r3", Name: list.Name, Args: list.Args}))
	err := env.a.RunPrompt(t.Context(), "@small read big.txt")
	if err == nil || !strings.Contains(err.Error(), "max_tool_calls_per_turn is 1") {
		t.Fatalf("route turn: %v", err)
	}
	res := fakeollama.ToolResults(f.ChatRequests())["r1"]
	if !strings.Contains(res, "[output truncated at 2048 bytes]") {
		t.Fatalf("route result not capped by the route model's window: %d bytes", len(res))
	}
	reqs := f.ChatRequests()
	if opts, _ := reqs[0]["options"].(map[string]any); opts["num_ctx"] != float64(2048) {
		t.Fatalf("route request options = %v", reqs[0]["options"])
	}
	// The main model keeps its own limits.
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "m1", Name: read.Name, Args: read.Args}), fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "m2", Name: list.Name, Args: list.Args}), fakeollama.TextReply("llama3.2", "done"))
	if err := env.a.RunPrompt(t.Context(), "read big.txt"); err != nil {
		t.Fatal(err)
	}
	if res := fakeollama.ToolResults(f.ChatRequests())["m1"]; !strings.Contains(res, "[output truncated at 8192 bytes]") {
		t.Fatalf("main result cap: %d bytes", len(res))
	}
}

// The audit outcome comes from the error's kind, not its words: refused by
// a rule is denied, a missing file is an error.
func TestAuditOutcomeIsTyped(t *testing.T) {
	env := gateEnv(t)
	callTool(t, env, "read_file", map[string]any{"path": "private/k.txt"})
	callTool(t, env, "read_file", map[string]any{"path": "missing.txt"})
	callTool(t, env, "git_command", map[string]any{"subcommand": "log", "args": "--output=x"})
	callTool(t, env, "read_file", map[string]any{"path": "src/a.go"})
	var out strings.Builder
	env.a.Audit.Print(&out, 10)
	for _, want := range []string{"denied read private/k.txt", "error read missing.txt", "denied git log --output=x", "success read src/a.go"} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("audit lacks %q:\n%s", want, out.String())
		}
	}
}

// Tab completion reads directory entries as data, through the same gate as
// list_files: names with spaces survive, denied and private names never
// appear.
func TestCompletionUsesEntries(t *testing.T) {
	env := gateEnv(t)
	e2e.WriteFile(t, env.dir, "notes  draft.txt", "x\n")
	e2e.WriteFile(t, env.dir, "src/b -> c.go", "x\n")
	got := strings.Join(completePath(env.ws, ""), "|")
	for _, want := range []string{"notes  draft.txt", "src/", "link"} {
		if !strings.Contains(got, want) {
			t.Errorf("completion lacks %q: %s", want, got)
		}
	}
	if strings.Contains(got, "private") || strings.Contains(got, "agents") {
		t.Errorf("completion shows a hidden name: %s", got)
	}
	if got := completePath(env.ws, "src/b"); len(got) != 1 || got[0] != "src/b -> c.go" {
		t.Errorf("src/b: %q", got)
	}
}

// A listing stops at the cap on a whole line and says how many entries it
// left out.
func TestListingStopsAtTheCap(t *testing.T) {
	env := newTestEnv(t, nil, "")
	for i := 0; i < 3000; i++ {
		os.WriteFile(filepath.Join(env.dir, fmt.Sprintf("f%04d.txt", i)), nil, 0o644)
	}
	text, n, err := wsfile.List(env.ws.Tree, ".", 4096)
	if err != nil || len(text) > 4096 {
		t.Fatalf("%d bytes, %v", len(text), err)
	}
	var left int
	if _, err := fmt.Sscanf(text[strings.LastIndex(text, "\n[")+1:], "[%d more entries not shown", &left); err != nil || n+left != 3000 {
		t.Fatalf("shown %d + left %d (tail %q)", n, left, text[max(0, len(text)-80):])
	}
}

// A .gitignore governs its own directory (and below), not its siblings.
func TestGitignoreScopedToItsDirectory(t *testing.T) {
	env := newTestEnv(t, nil, "")
	e2e.WriteFile(t, env.dir, "a/.gitignore", "*.log\n")
	e2e.WriteFile(t, env.dir, "a/x.log", "NEEDLE a\n")
	e2e.WriteFile(t, env.dir, "a/sub/y.log", "NEEDLE a/sub\n")
	e2e.WriteFile(t, env.dir, "b/x.log", "NEEDLE b\n")
	e2e.WriteFile(t, env.dir, "c/.gitignore", "!keep.log\n")
	e2e.WriteFile(t, env.dir, "c/keep.log", "NEEDLE c\n")
	out, _, err := searchWorkspace(context.Background(), env.ws, "NEEDLE", ".", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "NEEDLE a") || !strings.Contains(out, "NEEDLE b") || !strings.Contains(out, "NEEDLE c") {
		t.Fatalf("search = %q", out)
	}
}

// syncBuffer is a Builder safe to read while a command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// /run shows the output as it arrives (redacted), not after the command
// ends; the status line comes last.
func TestRunStreamsOutput(t *testing.T) {
	env := newTestEnv(t, nil, "")
	marker := filepath.Join(env.dir, "go-on")
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- env.a.Dispatch(t.Context(), "/run echo first ghp_abcdefghijklmnopqrstuvwxyz0123456789; while [ ! -e "+marker+" ]; do sleep 0.05; done; echo second", &out)
	}()
	for i := 0; !strings.Contains(out.String(), "first"); i++ {
		if i > 500 {
			t.Fatalf("nothing shown while the command runs: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(out.String(), "second") || strings.Contains(out.String(), "ghp_abc") {
		t.Fatalf("shown: %q", out.String())
	}
	os.WriteFile(marker, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// (The status line, then the files changed meanwhile: the marker this
	// test made while the command ran is named too.)
	if s := out.String(); !strings.Contains(s, "second\n[exit 0]\n") || strings.Count(s, "first") != 1 {
		t.Fatalf("after: %q", s)
	}
}

// A denial can carry the user's reason to the model.
func TestDenialWithReason(t *testing.T) {
	env := newTestEnv(t, nil, "")
	env.a.approvals.auto, env.a.Interactive = false, true
	env.a.In = newLineReader(strings.NewReader("n use the tests in ./pkg instead\n"))
	_, err := callTool(t, env, "run_command", map[string]any{"command": "ls"})
	if err == nil || !strings.Contains(err.Error(), `saying: "use the tests in ./pkg instead"`) {
		t.Fatalf("%v", err)
	}
}

// An approval shows at most maxPreviewLines of diff and counts the rest.
func TestApprovalPreviewBounded(t *testing.T) {
	env := newTestEnv(t, nil, "")
	env.a.approvals.auto, env.a.Interactive = false, true
	env.a.In = newLineReader(strings.NewReader("y\n"))
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if _, err := invokeTool(env.a, "write_file", t.Context(), map[string]any{"path": "big.txt", "content": b.String()}); err != nil {
		t.Fatal(err)
	}
	total := strings.Count(diff.Unified("big.txt", "", b.String(), false), "\n")
	want := fmt.Sprintf("... (%d more diff lines not shown)", total-maxPreviewLines)
	if got := env.errOut.String(); !strings.Contains(got, want) || strings.Count(got, "\n  +line ") != maxPreviewLines-3 {
		t.Fatalf("preview: want %q and %d shown lines; stderr has %d", want, maxPreviewLines-3, strings.Count(got, "\n  +line "))
	}
}

// TestWriteFileEntersEachFileOnce follows a write_file call from the
// stream to the disk as the architecture doc lists it: at the moment the
// user is asked, the call stack runs down tool_executor.go, builtin_tools.go,
// gate.go, internal/wsfile and approval.go, each entered once — no callback
// runs back into a file the call already passed through.
func TestWriteFileEntersEachFileOnce(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.approvals.auto = false
	env.a.Interactive = true
	ans := &stackReader{answer: "y\n"}
	env.a.In = newLineReader(ans)
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "a.txt", "content": "hello\n"}}), fakeollama.TextReply("llama3.2", "done"))
	env.a.RunPrompt(t.Context(), "write a.txt")
	if b, err := os.ReadFile(filepath.Join(env.dir, "a.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("a.txt = %q, %v (err %q)", b, err, env.errOut.String())
	}
	// The package's files, outermost first, runs merged (inlined calls
	// expanded: CallersFrames reports each).
	var frames []runtime.Frame
	for it := runtime.CallersFrames(ans.stack); ; {
		f, more := it.Next()
		frames = append(frames, f)
		if !more {
			break
		}
	}
	var files []string
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
		base := filepath.Base(f.File)
		if strings.HasPrefix(f.Function, "github.com/harvey-agent/harvey/internal/wsfile.") {
			base = "wsfile/" + base
		} else if !strings.HasPrefix(f.Function, "github.com/harvey-agent/harvey.") || strings.HasSuffix(base, "_test.go") {
			continue
		}
		if len(files) == 0 || files[len(files)-1] != base {
			files = append(files, base)
		}
	}
	from := -1
	for i, f := range files {
		if f == "tool_executor.go" {
			from = i
			break
		}
	}
	if from < 0 {
		t.Fatalf("no tool_executor.go on the stack: %v", files)
	}
	got := strings.Join(files[from:], " → ")
	if want := "tool_executor.go → tool_call.go → builtin_tools.go → gate.go → wsfile/write.go → approval.go"; got != want {
		t.Errorf("the approval's stack:\n  %s\nwant\n  %s", got, want)
	}
}

// stackReader answers a question and keeps the stack it was asked from.
type stackReader struct {
	answer string
	stack  []uintptr
}

func (r *stackReader) Read(p []byte) (int, error) {
	if r.answer == "" {
		return 0, io.EOF
	}
	if r.stack == nil {
		r.stack = make([]uintptr, 100)
		r.stack = r.stack[:runtime.Callers(1, r.stack)]
	}
	n := copy(p, r.answer)
	r.answer = r.answer[n:]
	return n, nil
}
