// Feature: text-call recovery (internal/textcalls, whose corpus tests lie
// beside it) through Harvey's executor and its real Ollama client: a reply
// bounded, a printed call that cannot be read faithfully explained to the
// model and not run; and the built-in tools' schemas the corpus is read
// against, kept equal to the registry.
package harvey

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/llm"
)

// The corpus in internal/textcalls reads calls against the built-in tools'
// schemas as the registry has them: testdata/builtin_tools.json is that,
// and HARVEY_UPDATE_FIXTURES=1 writes it again after a schema changes.
func TestTextcallsFixtureIsHarveysTools(t *testing.T) {
	r := newToolRegistry()
	registerBuiltinTools(r, nil)
	schemas := map[string]any{}
	for _, n := range r.Names() {
		s, _ := r.schemaOf(n)
		schemas[n] = s
	}
	want, err := json.MarshalIndent(schemas, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	p := filepath.Join("internal", "textcalls", "testdata", "builtin_tools.json")
	if os.Getenv("HARVEY_UPDATE_FIXTURES") == "1" {
		os.WriteFile(p, want, 0o644)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
		t.Fatalf("%s is not the registry's schemas: run HARVEY_UPDATE_FIXTURES=1 go test -run TestTextcallsFixtureIsHarveysTools .", p)
	}
}

// One reply is bounded: too many streamed calls or too many bytes stop the
// stream with an error that says so.
func TestReplyIsBounded(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	var calls []fakeollama.Call
	for i := 0; i <= llm.MaxStreamedCalls; i++ {
		calls = append(calls, fakeollama.Call{ID: "c" + strings.Repeat("x", i%3) + string(rune('a'+i%26)), Name: "list_files", Args: map[string]any{}})
	}
	f.Script(fakeollama.ToolReply("llama3.2", calls...))
	if err := env.a.RunPrompt(t.Context(), "list"); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("%d calls: %v", len(calls), err)
	}
}

// Through the real Ollama client: a printed write whose path has
// backslashes that are not escapes is not run (nothing is created); the
// model is told to write \\ and its second try runs.
func TestUnreadablePrintedCallIsExplainedThroughFake(t *testing.T) {
	f := fakeollama.New(t, "mistral:latest")
	env := newTestEnv(t, f, "mistral")
	env.a.approvals.auto = true
	f.Script(
		fakeollama.TextReply("mistral", `[TOOL_CALLS] [{"name": "write_file", "arguments": {"path": "dir\sub.txt", "content": "hi"}}]`),
		fakeollama.TextReply("mistral", `[TOOL_CALLS] [{"name": "write_file", "arguments": {"path": "new.txt", "content": "hi"}}]`),
		fakeollama.TextReply("mistral", "Written."))
	if err := env.a.RunPrompt(t.Context(), "write hi to a file"); err != nil {
		t.Fatal(err)
	}
	reqs := f.ChatRequests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	m := fakeollama.MessagesOf(reqs[1])
	note := m[len(m)-1]
	if note["role"] != "user" || !strings.Contains(note["content"].(string), `write each backslash as \\`) || !strings.Contains(note["content"].(string), "write_file") {
		t.Fatalf("the model was told %s", mustJSON(note))
	}
	if !strings.Contains(env.out.String(), "[not run: a tool call written as text could not be read") {
		t.Fatalf("stdout = %q", env.out.String())
	}
	entries, _ := os.ReadDir(env.dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "sub") {
			t.Fatalf("a file from the unreadable call: %q", e.Name())
		}
	}
	if b, err := os.ReadFile(filepath.Join(env.dir, "new.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("second try: %q %v", b, err)
	}
}
