package harvey

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// /context load-dir and /template use (issue 46), through the built
// binary: the files the model may read go into the conversation within
// the cap, and what was left out is said; a template is sent as the
// prompt, shown the first time only.
func TestEndToEndLoadDirAndTemplates(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	dir, cfg, data := t.TempDir(), t.TempDir(), t.TempDir()
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", "tools:\n  max_output_bytes: 1500\n")
	e2e.WriteFile(t, dir, "src/a.go", "package src\n\n// Alpha is the first.\nfunc Alpha() {}\n")
	e2e.WriteFile(t, dir, "src/sub/b.go", "package sub\n\n// Beta is the second.\nfunc Beta() {}\n")
	e2e.WriteFile(t, dir, "src/notes.md", "# not Go\n")
	e2e.WriteFile(t, dir, "src/z_big.go", "package src\n\n// "+strings.Repeat("long ", 400)+"\n")
	e2e.WriteFile(t, dir, "src/.env", "TOKEN=hunter2hunter2\n")
	e2e.WriteFile(t, dir, "agents/templates/review.md", "Review the code in context for bugs, and list them.\n")
	e2e.WriteFile(t, dir, "script.txt", "/context load-dir src *.go\nwhat is in src?\n/template use review\n")
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.TextReply("llama3.2", "Alpha and Beta."), fakeollama.TextReply("llama3.2", "No bugs."), fakeollama.TextReply("llama3.2", "Still none."))
	env := []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data}
	out, errOut, code := e2e.RunEnv(t, bin, dir, "", env, "--run", "script.txt", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	all := out + errOut
	if !strings.Contains(all, "loaded 2 files from src") || !strings.Contains(all, "past the limit of 1500 bytes") || !strings.Contains(all, "src/z_big.go") {
		t.Errorf("what was loaded and left out is not said: %s", all)
	}
	if !strings.Contains(all, "template review (agents/templates/review.md), sent as your prompt") {
		t.Errorf("the template was not shown before it was sent: %s", all)
	}
	reqs := f.ChatRequests()
	first := mustJSON(fakeollama.MessagesOf(reqs[0]))
	for _, want := range []string{"### src/a.go", "func Alpha", "### src/sub/b.go"} {
		if !strings.Contains(first, want) {
			t.Errorf("the context lacks %q", want)
		}
	}
	for _, not := range []string{"hunter2", "not Go", "long long"} {
		if strings.Contains(first, not) {
			t.Errorf("the context holds %q", not)
		}
	}
	m := fakeollama.MessagesOf(reqs[1])
	if u := m[len(m)-1]["content"].(string); !strings.HasPrefix(u, "Review the code in context for bugs") {
		t.Errorf("the template's prompt: %q", u)
	}
	// The second time, it is sent without being shown again.
	e2e.WriteFile(t, dir, "script2.txt", "/template use review\n")
	out, errOut, _ = e2e.RunEnv(t, bin, dir, "", env, "--run", "script2.txt", "--model", "llama3.2", "--ollama", f.URL())
	if strings.Contains(out+errOut, "sent as your prompt") || !strings.Contains(out+errOut, "Still none.") {
		t.Errorf("second use: %s %s", out, errOut)
	}
}
