package textcalls

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/llm"
)

// A reply past llm.MaxReplyBytes is refused, and no more is kept.
func TestHoldbackRefusesAReplyTooLarge(t *testing.T) {
	h := NewHoldback(&strings.Builder{}, nil)
	chunk := strings.Repeat("x", 1<<20)
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = h.Write([]byte(chunk))
	}
	if err != llm.ErrReplyTooLarge || h.Len() > llm.MaxReplyBytes {
		t.Fatalf("text: %v, %d bytes kept", err, h.Len())
	}
}

// What may be a printed call is held until the reply ends; the rest
// streams, and Finish gives the whole reply and what was held.
func TestHoldbackHoldsOnlyWhatMayBeACall(t *testing.T) {
	for _, c := range []struct {
		name, reply, shown, held string
	}{
		{"plain text", "It works.\nDone.", "It works.\nDone.", ""},
		{"a JSON call at a line's start", "Reading it.\n{\"name\": \"read_file\"}", "Reading it.\n", "{\"name\": \"read_file\"}"},
		{"a marker", "[TOOL_CALLS][{\"name\": \"list_files\"}]", "", "[TOOL_CALLS][{\"name\": \"list_files\"}]"},
		{"a tag", "<tool_call>{}</tool_call>", "", "<tool_call>{}</tool_call>"},
	} {
		var out strings.Builder
		h := NewHoldback(&out, nil)
		for _, r := range c.reply {
			h.Write([]byte(string(r)))
		}
		all, held := h.Finish()
		if all != c.reply || out.String() != c.shown || held != c.held {
			t.Errorf("%s: shown %q held %q (all %q)", c.name, out.String(), held, all)
		}
	}
}

// Code answers stream: a fence is held only while it can still be a call.
func TestFencedCodeStreams(t *testing.T) {
	isTool := func(n string) bool { return n == "read_file" || n == "list_files" }
	for _, c := range []struct {
		name, lead, code string
		streams          bool
	}{
		{"go fence", "Here is the fix:\n```go\n", "func main() {\n\tfmt.Println(1)\n", true},
		{"bare fence with code", "Try:\n```\n", "go test ./...\n", true},
		{"python code that is no tool", "Run:\n```python\n", "print(sum([1, 2]))\n", true},
		{"json fence (may be a call)", "I'll read it:\n```json\n", "{\"name\": \"read_file\", ", false},
		{"pythonic tool call", "```python\n", "read_file(path=", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			h := NewHoldback(&out, isTool)
			h.Write([]byte(c.lead))
			for _, ch := range c.code { // token by token, as a model streams
				h.Write([]byte(string(ch)))
			}
			shown := strings.Contains(out.String(), strings.TrimSpace(strings.SplitN(c.code, "\n", 2)[0]))
			if shown != c.streams {
				t.Fatalf("streamed %v, want %v: %q", shown, c.streams, out.String())
			}
			if c.streams {
				h.Write([]byte("```\nThat is all. {not a call}\n"))
				all, held := h.Finish()
				if !strings.HasPrefix(all, out.String()) || !strings.Contains(out.String(), "```\nThat is all.") || strings.TrimSpace(held) != "" {
					t.Fatalf("after the fence: out %q held %q", out.String(), held)
				}
			}
		})
	}
}
