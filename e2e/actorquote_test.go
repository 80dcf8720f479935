// Feature: a call the model prints is run when it is the reply's act and
// never when it is only quoted (issue 27), through the built binary.
package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// Act or quote through the built binary, headless with --yes (issue 37):
// what models print when they act runs (with the usual approval, here
// --yes), a quotation never does, and where the evidence does not decide
// the model — not the user — is asked once to send the call alone. The
// invented answer after an acted call is not shown as the answer.
func TestEndToEndActOrQuote(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	call := func(path string) string {
		return `{"name": "write_file", "arguments": {"path": "` + path + `", "content": "x"}}`
	}
	cases := []struct {
		reply string
		file  string
		runs  bool
	}{
		{"Let me check the weather. <tool_call>" + call("a1.txt") + "</tool_call>", "a1.txt", true},
		{"Sure, let me check.<tool_call>" + call("a2.txt") + "</tool_call>", "a2.txt", true},
		{"Hello[TOOL_CALLS] [" + call("a3.txt") + "]", "a3.txt", true},
		{"[TOOL_CALLS] [" + call("a4.txt") + "]\nI wrote a4.txt; it now holds the report you asked for, all forty pages of it.", "a4.txt", true},
		{"I'll search for that.\n<function=write_file>{\"path\": \"a5.txt\", \"content\": \"x\"}</function>", "a5.txt", true},
		{"Using tool: write_file\n" + call("a6.txt"), "a6.txt", true},
		{QuotedCallReplies[1], "q2.txt", true},
		{"For example, you could send:\n" + call("r5.txt") + "\nThis will create the file.", "r5.txt", false},
		{QuotedCallReplies[0], "q1.txt", false},
		{"You can write files with the tool. For example:\n" + call("r1.txt"), "r1.txt", false},
		{"To write a file the model sends " + call("r2.txt") + " and the server answers.", "r2.txt", false},
		{"Send `" + call("r3.txt") + "` to write a file.", "r3.txt", false},
		{"The format is:\n<tool_call>" + call("r4.txt") + "</tool_call>", "r4.txt", false},
	}
	for i, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			f := fakeollama.New(t, "llama3.2:latest")
			dir := t.TempDir()
			f.Script(fakeollama.TextReply("llama3.2", c.reply), fakeollama.TextReply("llama3.2", "Done."))
			out, errOut, code := Run(t, bin, dir, "", "-p", "go", "--yes", "--model", "llama3.2", "--ollama", f.URL())
			_, err := os.Stat(filepath.Join(dir, c.file))
			if code != 0 || (err == nil) != c.runs {
				t.Fatalf("case %d: exit %d, written %v, want %v\n%s\n%s", i, code, err == nil, c.runs, out, errOut)
			}
			if strings.Contains(out, "forty pages") {
				t.Errorf("the invented answer after an acted call was shown: %s", out)
			}
			if reqs := f.ChatRequests(); len(reqs) != 2 && c.runs || !c.runs && len(reqs) != 1 {
				t.Errorf("%d requests", len(reqs))
			}
		})
	}
	// Undecided: the model is asked once; its call sent alone then runs.
	f := fakeollama.New(t, "llama3.2:latest")
	dir := t.TempDir()
	f.Script(fakeollama.TextReply("llama3.2", QuotedCallReplies[2]), fakeollama.TextReply("llama3.2", call("q3.txt")), fakeollama.TextReply("llama3.2", "Done."))
	out, errOut, code := Run(t, bin, dir, "", "-p", "go", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	reqs := f.ChatRequests()
	if code != 0 || len(reqs) != 3 {
		t.Fatalf("exit %d, %d requests\n%s\n%s", code, len(reqs), out, errOut)
	}
	msgs := fakeollama.MessagesOf(reqs[1])
	if last := msgs[len(msgs)-1]; last["role"] != "user" || !strings.Contains(last["content"].(string), "reply with the call alone") {
		t.Fatalf("the model was not asked: %v", last)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "q3.txt")); string(b) != "x" {
		t.Fatalf("the call sent alone did not run: %q", b)
	}
	// Announced, with only a plan after it: a model without tool support
	// (prose mode) acts; one that could have called natively (schema
	// mode) is asked once, and its call sent alone runs.
	plan := "To save it, I'll use the write_file tool:\n\n" + call("p1.txt") + "\n\nThis will create the file with its content."
	f = fakeollama.New(t, "llama3.2:latest")
	f.Caps = map[string][]string{"llama3.2:latest": {"completion"}}
	dir = t.TempDir()
	f.Script(fakeollama.TextReply("llama3.2", plan), fakeollama.TextReply("llama3.2", "Done."))
	if out, errOut, code := Run(t, bin, dir, "", "-p", "go", "--yes", "--model", "llama3.2", "--ollama", f.URL()); code != 0 || len(f.ChatRequests()) != 2 {
		t.Fatalf("prose mode: exit %d, %d requests\n%s\n%s", code, len(f.ChatRequests()), out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "p1.txt")); string(b) != "x" {
		t.Fatalf("prose mode: the announced call did not run: %q", b)
	}
	f = fakeollama.New(t, "llama3.2:latest")
	dir = t.TempDir()
	f.Script(fakeollama.TextReply("llama3.2", plan), fakeollama.TextReply("llama3.2", call("p1.txt")), fakeollama.TextReply("llama3.2", "Done."))
	if out, errOut, code := Run(t, bin, dir, "", "-p", "go", "--yes", "--model", "llama3.2", "--ollama", f.URL()); code != 0 || len(f.ChatRequests()) != 3 {
		t.Fatalf("schema mode: exit %d, %d requests\n%s\n%s", code, len(f.ChatRequests()), out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "p1.txt")); string(b) != "x" {
		t.Fatalf("schema mode: the call sent alone did not run: %q", b)
	}
}
