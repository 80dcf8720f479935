// Feature: edit_file through the gate and the tool (the matching itself,
// internal/editmatch, is tested beside it).
package harvey

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/wsfile"
)

func editArgs(path, old, new string) map[string]any {
	return map[string]any{"path": path, "old_text": old, "new_text": new}
}

func TestEditFileTool(t *testing.T) {
	env := newTestEnv(t, nil, "")
	a := env.a
	p := filepath.Join(env.dir, "main.go")
	os.WriteFile(p, []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o600)

	out, err := invokeTool(a, "edit_file", t.Context(), editArgs("main.go", "    println(\"hi\")", "    println(\"hello\")"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "edited main.go: lines 4-4 replaced by lines 4-4; matched with") || !strings.Contains(out, "+\tprintln(\"hello\")") {
		t.Fatalf("result = %q", out)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n" {
		t.Fatalf("file = %q", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode changed to %v", st.Mode())
	}

	// An anchored match says which of the file's lines it replaced that
	// old_text did not have.
	os.WriteFile(filepath.Join(env.dir, "calc.go"), []byte("func compute() {\n\tx := 1\n\ty := 2\n\tz := 3\n\treturn x\n}\n"), 0o644)
	out, err = invokeTool(a, "edit_file", t.Context(), editArgs("calc.go", "func compute() {\n\tx := 1\n\ty := 9\n\tz := 3\n\treturn x\n}", "func compute() {\n\treturn 0\n}"))
	if err != nil || !strings.Contains(out, "matched with its first and last lines as anchors; line 3 of the file differed from old_text") || !strings.Contains(out, "-\ty := 2") {
		t.Fatalf("result = %q, %v", out, err)
	}

	// Empty old_text creates a new file, and only a new one.
	if _, err := invokeTool(a, "edit_file", t.Context(), editArgs("pkg/new.go", "", "package pkg\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "pkg", "new.go")); string(b) != "package pkg\n" {
		t.Fatalf("new file = %q", b)
	}
	if _, err := invokeTool(a, "edit_file", t.Context(), editArgs("main.go", "", "x")); err == nil || !strings.Contains(err.Error(), "the file exists") {
		t.Fatalf("err = %v", err)
	}
	if _, err := invokeTool(a, "edit_file", t.Context(), editArgs("missing.go", "a", "b")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
	if _, err := invokeTool(a, "edit_file", t.Context(), map[string]any{"path": "main.go", "old_text": "x"}); err == nil || !strings.Contains(err.Error(), "new_text") {
		t.Fatalf("err = %v", err)
	}
	// A huge file is refused before it is read past the limit.
	big := filepath.Join(env.dir, "big.txt")
	os.WriteFile(big, []byte(strings.Repeat("line\n", (wsfile.MaxEditBytes/5)+10)), 0o644)
	if _, err := invokeTool(a, "edit_file", t.Context(), editArgs("big.txt", "line", "x")); err == nil || !strings.Contains(err.Error(), "over 4 MB") {
		t.Fatalf("err = %v", err)
	}
	// Binary files are not edited.
	os.WriteFile(filepath.Join(env.dir, "bin"), []byte("a\x00b"), 0o644)
	if _, err := invokeTool(a, "edit_file", t.Context(), editArgs("bin", "a", "x")); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Fatalf("err = %v", err)
	}
}

// edit_file inherits every refusal of the write path: nothing outside the
// workspace, in agents/ or in .git/ changes, and secret files stay shut.
func TestEditFileRefusals(t *testing.T) {
	env := newTestEnv(t, nil, "")
	dir := env.dir
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte("model: "+secret+"\n"), 0o644)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link-out"))
	os.Symlink("agents/harvey.yaml", filepath.Join(dir, "inner"))
	os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "hard"))
	os.WriteFile(filepath.Join(dir, ".env"), []byte("TOKEN="+secret+"\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"+secret+"\n"), 0o644)
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	before := snapshot(t, outside, filepath.Join(dir, "agents"), filepath.Join(dir, ".git"))

	for _, c := range []struct{ path, reason string }{
		{"../outside/secret.txt", "outside the workspace"},
		{"link-out", "symlink leads outside"},
		{"hard", "hard links"},
		{"agents/harvey.yaml", "agents/"},
		{"AGENTS/harvey.yaml", "agents/"},
		{"inner", "agents/"},
		{".env", "secret file"},
		{".git/config", ".git/"},
		{"fifo", "not a regular file"},
		{"/etc/passwd", "absolute paths"},
	} {
		out, err := invokeTool(env.a, "edit_file", t.Context(), editArgs(c.path, secret, "pwned"))
		if err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: err = %v, want %q", c.path, err, c.reason)
		}
		if strings.Contains(out, secret) || (err != nil && strings.Contains(err.Error(), secret)) {
			t.Errorf("%s: secret leaked", c.path)
		}
	}
	after := snapshot(t, outside, filepath.Join(dir, "agents"), filepath.Join(dir, ".git"))
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("%s changed", k)
		}
	}
	if env.errOut.Len() > 0 && strings.Contains(env.errOut.String(), secret) {
		t.Fatal("secret reached the terminal")
	}
}

// A scripted llama3.2 mis-copies a snippet (wrong text), reads the error
// result with the closest region, and retries with the real text.
func TestEditFileRetryThroughLoop(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	p := filepath.Join(env.dir, "app.py")
	os.WriteFile(p, []byte("def greet(name):\n    return 'Hello, ' + name\n"), 0o644)
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "e1", Name: "edit_file", Args: editArgs("app.py", "return \"Hello, \" + name", "return f'Hi, {name}'")}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "e2", Name: "edit_file", Args: editArgs("app.py", "    return 'Hello, ' + name", "    return f'Hi, {name}'")}),
		fakeollama.TextReply("llama3.2", "Done: greet now says Hi."),
	)
	if err := env.a.RunPrompt(t.Context(), "make greet say Hi"); err != nil {
		t.Fatal(err)
	}
	reqs := f.ChatRequests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d", len(reqs))
	}
	m := fakeollama.MessagesOf(reqs[1])
	first := m[len(m)-1]
	if first["role"] != "tool" || !strings.Contains(first["content"].(string), "old_text was not found. The closest region is lines 2-2") ||
		!strings.Contains(first["content"].(string), "2\t    return 'Hello, ' + name") {
		t.Fatalf("first result = %v", first)
	}
	m = fakeollama.MessagesOf(reqs[2])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "edited app.py: lines 2-2 replaced by lines 2-2") {
		t.Fatalf("second result = %q", c)
	}
	if b, _ := os.ReadFile(p); string(b) != "def greet(name):\n    return f'Hi, {name}'\n" {
		t.Fatalf("file = %q", b)
	}
	if !strings.Contains(env.out.String(), "Done: greet now says Hi.") {
		t.Fatalf("stdout = %q", env.out.String())
	}
}

// A model cannot match text it was shown redacted; the error says why.
func TestEditRedactedOldText(t *testing.T) {
	env := newTestEnv(t, nil, "")
	e2e.WriteFile(t, env.dir, "cfg.py", "TOKEN = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\"\nDEBUG = False\n")
	_, err := invokeTool(env.a, "edit_file", t.Context(), editArgs("cfg.py", "TOKEN = \"[REDACTED secret]\"\nDEBUG = False", "DEBUG = True"))
	if err == nil || !strings.Contains(err.Error(), "secrets are hidden from you") || strings.Contains(err.Error(), "ghp_abc") {
		t.Fatalf("err = %v", err)
	}
	if out, err := invokeTool(env.a, "edit_file", t.Context(), editArgs("cfg.py", "DEBUG = False", "DEBUG = True")); err != nil || !strings.Contains(out, "edited cfg.py") {
		t.Fatalf("edit around the secret: %q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "cfg.py")); !strings.Contains(string(b), "ghp_abcdefghijklmnopqrstuvwxyz0123456789") {
		t.Fatal("the secret in the file was lost")
	}
}

// Writing back a file the model only saw redacted would destroy the secret.
func TestWriteBackRedactedRefused(t *testing.T) {
	env := newTestEnv(t, nil, "")
	orig := "TOKEN = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\"\nDEBUG = False\n"
	e2e.WriteFile(t, env.dir, "cfg.py", orig)
	rr, _ := env.a.gate.readChecked(t.Context(), "cfg.py", 0, 0)
	_, err := invokeTool(env.a, "write_file", t.Context(), map[string]any{"path": "cfg.py", "content": strings.Replace(rr.Text, "False", "True", 1)})
	if err == nil || !strings.Contains(err.Error(), "would destroy them") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "cfg.py")); string(b) != orig {
		t.Fatalf("file changed: %q", b)
	}
	env.a.AddMessage("assistant", "```python cfg.py\n"+rr.Text+"```")
	if _, err := dispatch(t, env.a, "/apply"); err == nil || !strings.Contains(err.Error(), "would destroy them") {
		t.Fatalf("/apply: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "cfg.py")); string(b) != orig {
		t.Fatalf("file changed by /apply: %q", b)
	}
	// A file with the marker as ordinary text and no secret is fine.
	e2e.WriteFile(t, env.dir, "doc.md", "Harvey shows [REDACTED secret] for keys.\n")
	if _, err := invokeTool(env.a, "write_file", t.Context(), map[string]any{"path": "doc.md", "content": "Harvey shows [REDACTED secret] for tokens.\n"}); err != nil {
		t.Fatal(err)
	}
}

// edit_file matches over the model's view (issue 27): a right and a wrong
// guess at a redacted secret answer alike — no-op edits, edits, replace_all,
// snippets that only touch the secret's line — and the file keeps its bytes.
// write_file of a file's exact bytes is not answered "unchanged" when the
// file holds secrets.
func TestEditIsNotAnOracle(t *testing.T) {
	const tok = "ghp_Q7x9Lm2Pz8Rt4Vw6Ys1Ab3Cd5Ef7Gh9Ij0Kl"
	orig := "# settings\nAPI_TOKEN=" + tok + "\nDB_PASSWORD=hunter2hunter2 # prod\nDEBUG=false\n"
	for _, approve := range []bool{true, false} {
		env := newTestEnv(t, nil, "")
		env.a.approvals.auto = approve
		e2e.WriteFile(t, env.dir, "app.env.sh", orig)
		answer := func(args map[string]any, tool string) string {
			out, err := invokeTool(env.a, tool, t.Context(), args)
			if b, _ := os.ReadFile(filepath.Join(env.dir, "app.env.sh")); !strings.Contains(string(b), tok) || !strings.Contains(string(b), "hunter2hunter2") {
				t.Fatalf("%v: the file lost a secret: %q", args, b)
			}
			return fmt.Sprintf("%s | %v", out, err)
		}
		for _, g := range [][2]string{{tok, "ghp_Q7x9Lm2Pz8Rt4Vw6Ys1Ab3Cd5Ef7Gh9Ij0Km"}, {"ghp_Q7", "ghp_Q8"}, {"hunter2hunter2", "hunter3hunter3"}, {"=hunter2h", "=hunter3h"}} {
			for _, args := range []func(string) map[string]any{
				func(s string) map[string]any { return editArgs("app.env.sh", s, s) },
				func(s string) map[string]any { return editArgs("app.env.sh", s, "x") },
				func(s string) map[string]any { a := editArgs("app.env.sh", s, s); a["replace_all"] = true; return a },
				func(s string) map[string]any { return editArgs("app.env.sh", "API_TOKEN="+s, "API_TOKEN="+s) },
				func(s string) map[string]any { return editArgs("app.env.sh", "  "+s+"  ", s) },
			} {
				right, wrong := answer(args(g[0]), "edit_file"), answer(args(g[1]), "edit_file")
				if right != wrong {
					t.Fatalf("approve=%v %v: a right and a wrong guess answer differently:\n%s\n%s", approve, args(g[0]), right, wrong)
				}
			}
		}
		// Editing around the secrets still works, and keeps them.
		if out, err := invokeTool(env.a, "edit_file", t.Context(), editArgs("app.env.sh", "DEBUG=false", "DEBUG=true")); approve && (err != nil || !strings.Contains(out, "edited")) {
			t.Fatalf("edit around the secrets: %q %v", out, err)
		}
		if !approve {
			// Whole content: the real bytes and a wrong guess get the same answer.
			right := answer(map[string]any{"path": "app.env.sh", "content": orig}, "write_file")
			wrong := answer(map[string]any{"path": "app.env.sh", "content": strings.Replace(orig, "hunter2", "hunter3", 1)}, "write_file")
			if right != wrong || strings.Contains(right, "unchanged") {
				t.Fatalf("write_file: %s / %s", right, wrong)
			}
		}
	}
}
