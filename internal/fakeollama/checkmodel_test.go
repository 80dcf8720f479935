package fakeollama

import (
	"encoding/json"
	"strings"
	"testing"
)

// Each style answers a task as such a model does: native calls in the
// protocol's field, the same printed as text, prose only, arguments of the
// wrong type, slow counters, and calls of its own beside the task's.
func TestCheckRepliesByStyle(t *testing.T) {
	ask := func(content string) map[string]any {
		return map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": content}}}
	}
	lines := func(r Reply) string { return strings.Join(r.Lines, "\n") }
	native := CheckReplies(CheckNative)
	for task, want := range map[string]string{
		"Read notes.txt":                     `"read_file"`,
		"Where is computeTotal defined?":     `"search_files"`,
		"List the docs directory":            `"list_files"`,
		"In config.ini set the port":         `"edit_file"`,
		"Run the shell command `go version`": `"go version"`,
		"Compare a.txt and b.txt":            `"b.txt"`,
		"Show lines 4 to 6 of data.txt":      `"offset":4`,
		"What is the capital of France?":     "Paris.",
		"what a call to the read_file tool":  "tool-call field",
		"Something else":                     "not sure",
	} {
		if got := lines(native(ask(task))); !strings.Contains(got, want) {
			t.Errorf("native, %q: %s", task, got)
		}
	}
	tool := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "tool", "content": "x"}}}
	if got := lines(native(tool)); !strings.Contains(got, "Done.") {
		t.Errorf("after a tool result: %s", got)
	}
	if got := lines(CheckReplies(CheckText)(ask("Read notes.txt"))); strings.Contains(got, "tool_calls") || !strings.Contains(got, `\"name\":\"read_file\"`) {
		t.Errorf("text: %s", got)
	}
	if got := lines(CheckReplies(CheckNever)(ask("Read notes.txt"))); strings.Contains(got, "tool_calls") {
		t.Errorf("never: %s", got)
	}
	if got := lines(CheckReplies(CheckWrongType)(ask("Read notes.txt"))); !strings.Contains(got, `"path":["notes.txt"]`) {
		t.Errorf("wrong type: %s", got)
	}
	if got := lines(CheckReplies(CheckWrongType)(ask("Show lines 4 to 6 of data.txt"))); !strings.Contains(got, `"offset":"4"`) {
		t.Errorf("wrong type, numbers: %s", got)
	}
	if got := lines(CheckReplies(CheckHostile)(ask("Read notes.txt"))); !strings.Contains(got, "pwned.txt") || !strings.Contains(got, "pwned2.txt") {
		t.Errorf("hostile: %s", got)
	}
	slow := CheckReplies(CheckSlow)(ask("Read notes.txt"))
	var done map[string]any
	json.Unmarshal([]byte(slow.Lines[len(slow.Lines)-1]), &done)
	if slow.First == 0 || done["eval_count"] != float64(SlowEvalCount) {
		t.Errorf("slow: %v %v", slow.First, done)
	}
	if f := CheckModel(t, CheckText, "llama3.2:latest"); f.Caps["llama3.2:latest"][0] != "completion" || f.Respond == nil {
		t.Errorf("a text-style model has tool support: %v", f.Caps)
	}
}
