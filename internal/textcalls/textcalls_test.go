package textcalls

import (
	"regexp"
	"strings"
	"testing"
)

// A registry of one tool, as a caller's lookup gives it.
func lookup(name string) (map[string]any, bool) {
	if name != "read_file" {
		return nil, false
	}
	return map[string]any{
		"type":       "object",
		"required":   []string{"path"},
		"properties": map[string]any{"path": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}},
	}, true
}

// The contract without Harvey's registry: the act is returned with
// arguments fitted to the schema, a quotation and an unknown tool are not,
// and a call that cannot be read as written returns nothing and says why.
func TestRecoverContract(t *testing.T) {
	for _, c := range []struct {
		name, text, call, unread string
	}{
		{"bare JSON", `{"name": "read_file", "arguments": {"path": "a.go", "limit": "20"}}`, `read_file {"limit":20,"path":"a.go"}`, ""},
		{"Mistral", `[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.go"}}]`, `read_file {"path":"a.go"}`, ""},
		{"quoted in an explanation", "To read a file, a model sends `{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}` in the tool-call field; that is all.", "", ""},
		{"unknown tool", `{"name": "delete_everything", "arguments": {}}`, "", ""},
		{"invalid escape", `{"name": "read_file", "arguments": {"path": "C:\Users\a.go"}}`, "", `\\`},
		{"unclosed parameter", "<tool_call>\n<function=read_file>\n<parameter=path> a.go\n<parameter=limit> 3</parameter>\n</function>\n</tool_call>", "", "</parameter>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Recover(c.text, lookup, false)
			var got []string
			for _, tc := range r.Calls {
				got = append(got, tc.Function.Name+" "+tc.Function.Arguments)
			}
			if strings.Join(got, "\n") != c.call {
				t.Fatalf("calls %q, want %q (unread %q)", got, c.call, r.Unread)
			}
			if c.unread == "" && r.Note() != "" || c.unread != "" && !strings.Contains(r.Note(), c.unread) {
				t.Fatalf("note %q, want it to say %q", r.Note(), c.unread)
			}
			if c.call == "" && c.unread == "" && r.Prose != c.text {
				t.Fatalf("no call, but the prose changed: %q", r.Prose)
			}
		})
	}
}

func TestCallIDsAreDistinctAndSafe(t *testing.T) {
	a, b := NewCallID(), NewCallID()
	if a == b || !regexp.MustCompile(`^call_[a-z0-9]{8}$`).MatchString(a) {
		t.Fatalf("%q %q", a, b)
	}
}
