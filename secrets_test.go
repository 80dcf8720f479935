// Feature: secrets never reach the model or the terminal — redaction before
// windowing, search as no oracle, the secret formats, agents/ state, the
// terminal sanitiser, URL credentials; spans internal/secrets, search.go,
// search_match.go, internal/wsfile and workspace.go.
package harvey

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/editmatch"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/wsfile"
)

// search_files matches the redacted text: a pattern that probes a secret
// character by character learns nothing.
func TestSearchIsNotAnOracle(t *testing.T) {
	ws, dir, _ := hostileWorkspace(t)
	token := "ghp_" + strings.Repeat("A", 20) + "Cxyz0123456789abcdefgh"
	e2e.WriteFile(t, dir, "config.txt", "token: "+token+"\n")
	answers := map[string]bool{}
	for _, probe := range []string{`ghp_A{20}C|\[REDACTED`, `ghp_A{20}D|\[REDACTED`, `ghp_A{20}C`, `ghp_A{20}D`, `ghp_`, `AAAAAAAAAA`} {
		out, _, err := searchWorkspace(context.Background(), ws, probe, ".", 0)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, token) {
			t.Fatalf("%s leaked the token: %s", probe, out)
		}
		answers[out] = true
		t.Logf("%-24s → %q", probe, out)
	}
	// A right and a wrong guess, each with an alternative that matches
	// only the redacted line (in, around or beside the marker), answer
	// alike: search never skips a file for a reason a secret decides.
	for _, alt := range []string{`\[REDACTED`, `: \[`, `: \B`, `cret\]`, `(?s)n: .`, `DACT`} {
		a, _, _ := searchWorkspace(context.Background(), ws, `ghp_A{20}C|`+alt, ".", 0)
		b, _, _ := searchWorkspace(context.Background(), ws, `ghp_A{20}D|`+alt, ".", 0)
		if a != b || a == "no matches" {
			t.Fatalf("alternative %s: a right and a wrong guess answer differently:\n%q\n%q", alt, a, b)
		}
	}
	c, _, _ := searchWorkspace(context.Background(), ws, `ghp_A{20}C`, ".", 0)
	d, _, _ := searchWorkspace(context.Background(), ws, `ghp_A{20}D`, ".", 0)
	if c != d || c != "no matches" {
		t.Fatalf("raw guesses distinguishable: %q %q", c, d)
	}
}

// Harvey's state is written without following links: agents/sessions,
// agents/history, agents/knowledge.db and recordings as links to files
// outside (or inside) change nothing there.
func TestAgentsStateNeverFollowsLinks(t *testing.T) {
	for _, tc := range []struct{ name, link string }{
		{"sessions dir", "agents/sessions"}, {"history", "agents/history"}, {"last.json", "agents/sessions/last.json"}, {"last.jsonl", "agents/sessions/last.jsonl"},
		{"knowledge.db", "agents/knowledge.db"}, {"knowledge.db-wal", "agents/knowledge.db-wal"}, {"recording", "agents/sessions/r.md"},
		{"config", "agents/harvey.yaml"}, {"tools dir", "agents/tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "ws")
			outside := filepath.Join(base, "outside")
			os.MkdirAll(filepath.Join(dir, "agents", "sessions"), 0o700)
			os.MkdirAll(outside, 0o755)
			target := filepath.Join(outside, "victim.md")
			os.WriteFile(target, []byte("precious\n"), 0o644)
			if tc.link == "agents/sessions" || tc.link == "agents/tools" {
				os.RemoveAll(filepath.Join(dir, tc.link))
				target = outside
				os.WriteFile(filepath.Join(outside, "x.md"), []byte("precious\n"), 0o644)
				os.WriteFile(filepath.Join(outside, "evil.md"), []byte("---\ncommand: [touch, "+filepath.Join(outside, "ran")+"]\neffect: read\n---\nevil\n"), 0o644)
			}
			if err := os.Symlink(target, filepath.Join(dir, tc.link)); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, outside)
			var out, errOut bytes.Buffer
			a, err := Start(t.Context(), Options{Dir: dir, OllamaURL: "http://127.0.0.1:1", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			a.RunPrompt(ctx, "/record start r.md")
			a.RunPrompt(ctx, "/kb status")
			a.RunPrompt(ctx, "/context add pinned text")
			a.RunPrompt(ctx, "/safemode on")
			a.RunPrompt(ctx, "/record stop")
			a.History = append(a.History, llm.Message{Role: "user", Content: "hello"})
			a.saveSession(a.ModelName)
			if a.editor == nil {
				ed := &lineEditor{ws: a.Workspace}
				ed.remember("a line")
			}
			a.Close()
			a.Workspace.Close()
			after := snapshot(t, outside)
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Fatalf("a file outside changed:\nbefore %v\nafter  %v\n%s", before, after, errOut.String())
			}
			if _, err := os.Stat(filepath.Join(outside, "ran")); err == nil {
				t.Fatal("a tool defined outside agents/ ran")
			}
			if len(a.userTools) > 0 {
				t.Fatalf("tools loaded through a link: %v", a.userTools)
			}
		})
	}
}

// Everything under agents/ is private to the user.
func TestAgentsFileModes(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	a, err := Start(t.Context(), Options{Dir: dir, OllamaURL: "http://127.0.0.1:1", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, l := range []string{"/record start", "/kb project add p", "/safemode on", "/record stop"} {
		if err := a.RunPrompt(ctx, l); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	a.History = append(a.History, llm.Message{Role: "user", Content: "hello"})
	a.saveSession(a.ModelName)
	a.Close()
	a.Workspace.Close()
	filepath.Walk(filepath.Join(dir, "agents"), func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		want := os.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v, want %v", p, info.Mode().Perm(), want)
		}
		return nil
	})
}

// Every printed field that carries an OSC 52 clipboard write reaches the
// terminal escaped; Harvey's own colours still pass.
func TestTerminalWriterSanitizes(t *testing.T) {
	osc := "\x1b]52;c;cHduZWQ=\x07"
	// Through a session: a tool-call name, a route, a model list, /apply.
	f := fakeollama.New(t, "llama3.2"+osc)
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{Name: "read" + osc, Args: map[string]any{"path": "x" + osc}}), fakeollama.TextReply("llama3.2", "answer "+osc))
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	a, err := Start(t.Context(), Options{Dir: dir, OllamaURL: f.URL(), Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Workspace.Close()
	defer a.Close()
	a.RunPrompt(context.Background(), "hi")
	a.RunPrompt(context.Background(), "/model")
	a.RunPrompt(context.Background(), "/route add r"+osc+" ollama http://127.0.0.1:1 m")
	a.RunPrompt(context.Background(), "/route list")
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
		if strings.Contains(s, "\x1b]") || strings.Contains(s, "\x07") {
			t.Fatalf("%s got a raw OSC sequence: %q", name, s)
		}
	}
}

// A reply that asks for thousands of calls runs only the first ones.
func TestCallsPerReplyCapped(t *testing.T) {
	f := fakeollama.New(t, "llama3.2")
	env := newTestEnv(t, f, "llama3.2")
	var calls []fakeollama.Call
	for i := 0; i < 40; i++ {
		calls = append(calls, fakeollama.Call{Name: "list_files", Args: map[string]any{"path": fmt.Sprintf("d%d", i)}})
	}
	f.Script(fakeollama.ToolReply("llama3.2", calls...), fakeollama.TextReply("llama3.2", "done"))
	if err := env.a.RunPrompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	ran, refused := 0, 0
	for _, m := range env.a.History {
		if m.Role != "tool" {
			continue
		}
		if strings.Contains(m.Content, "at most 16 tool calls") {
			refused++
		} else {
			ran++
		}
	}
	if ran != maxCallsPerReply || refused != 40-maxCallsPerReply {
		t.Fatalf("ran %d, refused %d", ran, refused)
	}
}

func TestURLCredentialsStripped(t *testing.T) {
	env := secrets.Environ([]string{"GOPROXY=https://user:tok3n@proxy.example/,direct", "OLLAMA_HOST=http://u:p@10.0.0.2:11434", "PATH=/usr/bin", "HOME=/home/u"})
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "tok3n") || strings.Contains(joined, "u:p@") {
		t.Fatalf("credentials passed on: %s", joined)
	}
	if !strings.Contains(joined, "GOPROXY=https://proxy.example/,direct") || !strings.Contains(joined, "OLLAMA_HOST=http://10.0.0.2:11434") {
		t.Fatalf("the URLs were lost: %s", joined)
	}
}

// A private key read through every window: no offset or limit shows a
// line of its body or its END line.
func TestRedactionBeforeWindowing(t *testing.T) {
	ws, dir, _ := hostileWorkspace(t)
	body := []string{"MIIEowIBAAKCAQEA7yQ1bodyline1", "bodyline2XyZ0123456789abcdefABCDEF", "bodyline3qqqqqqqqqqqqqqqqqqqqqqq"}
	var lines []string
	lines = append(lines, "intro line", "key = here:")
	lines = append(lines, "-----BEGIN RSA PRIVATE KEY-----")
	lines = append(lines, body...)
	lines = append(lines, "-----END RSA PRIVATE KEY-----", "after the key", "tail")
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	n := len(lines)
	for off := 0; off <= n; off++ {
		for lim := 0; lim <= n; lim++ {
			rr, err := wsfile.Read(ws.Tree, "notes.txt", off, lim, 0)
			if err != nil {
				continue
			}
			for _, b := range append(body, "END RSA PRIVATE KEY") {
				if strings.Contains(rr.Text, b) {
					t.Fatalf("offset=%d limit=%d leaked %q:\n%s", off, lim, b, rr.Text)
				}
			}
		}
	}
	// Redaction keeps lines, so paging by line still lines up.
	rr, err := wsfile.Read(ws.Tree, "notes.txt", 8, 1, 0)
	if err != nil || !strings.HasPrefix(rr.Text, "after the key") {
		t.Fatalf("offset 8: %v %q", err, rr.Text)
	}
	// Command output and a diff hunk are windows too.
	res := runner.Result{Output: []byte(strings.Join(lines, "\n"))}
	if out := res.Text(40); strings.Contains(out, "bodyline") {
		t.Fatalf("command output window leaked: %q", out)
	}
	s := editSummary("notes.txt", strings.Join(lines, "\n")+"\n", &editmatch.Result{Text: strings.Replace(strings.Join(lines, "\n")+"\n", body[1], "changed", 1), OldLines: [2]int{5, 5}, NewLines: [2]int{5, 5}})
	if strings.Contains(s, "bodyline") {
		t.Fatalf("edit diff leaked: %s", s)
	}
	// The edit miss hint shows a window of the file.
	_, err = editmatch.Apply(strings.Join(lines, "\n")+"\n", "bodyline2XyZ0123456789abcdefABCDEX", "x", false)
	if err == nil || strings.Contains(err.Error(), "bodyline") {
		t.Fatalf("edit miss hint leaked: %v", err)
	}
}
