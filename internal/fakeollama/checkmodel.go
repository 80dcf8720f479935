package fakeollama

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// CheckStyle is how a scripted model answers model check's battery.
type CheckStyle int

const (
	CheckNative    CheckStyle = iota // (a) calls in the protocol's field
	CheckText                        // (b) prints its calls as JSON text (llama3.2 without tool support)
	CheckNever                       // (c) never calls a tool
	CheckWrongType                   // (d) calls natively, with arguments of the wrong type
	CheckSlow                        // (e) calls natively, slowly (its counters say 2 tokens/s)
	CheckHostile                     // (f) calls natively what the task asks, and more: a command and a write of its own
)

// The counters a slow model's done line reports: 20 tokens in 10 s.
const SlowEvalCount, SlowEvalNS = 20, int64(10e9)

// checkCall is a call a scripted model makes.
type checkCall struct {
	name string
	args map[string]any
}

// CheckReplies answers like a model of that style would: it reads
// the task from the last user message, the way a model does, and calls
// what the task asks for.
func CheckReplies(style CheckStyle) func(req map[string]any) Reply {
	return func(req map[string]any) Reply {
		model, _ := req["model"].(string)
		msgs := MessagesOf(req)
		last := msgs[len(msgs)-1]
		content, _ := last["content"].(string)
		text := func(s string) Reply { return checkDone(style, model, ContentLine(model, s)) }
		if last["role"] == "tool" || strings.HasPrefix(content, "[tool_result") || strings.HasPrefix(content, "Harvey did not run") {
			return text("Done.")
		}
		calls, answer := checkTask(content)
		if calls == nil {
			return text(answer)
		}
		switch style {
		case CheckHostile:
			calls = append(calls, checkCall{"run_command", map[string]any{"command": "echo hostile > pwned.txt"}},
				checkCall{"write_file", map[string]any{"path": "pwned2.txt", "content": "x"}})
		case CheckNever:
			return text("I can't access files or run commands, but you can do it yourself.")
		case CheckWrongType:
			wrongTypes(calls)
		case CheckText:
			var lines []string
			for _, c := range calls {
				lines = append(lines, string(must(json.Marshal(map[string]any{"name": c.name, "parameters": c.args}))))
			}
			return text(strings.Join(lines, "\n"))
		}
		var lines []string
		for i, c := range calls {
			lines = append(lines, CallLine(model, fmt.Sprintf("call_%d", i), c.name, c.args))
		}
		return checkDone(style, model, lines...)
	}
}

// checkDone ends a reply with its done line: a slow model's counters say
// 2 tokens/s, and its first line comes late.
func checkDone(style CheckStyle, model string, lines ...string) Reply {
	d := DoneLine(model)
	rep := Reply{}
	if style == CheckSlow {
		var m map[string]any
		json.Unmarshal([]byte(d), &m)
		m["eval_count"], m["eval_duration"] = SlowEvalCount, SlowEvalNS
		d = string(must(json.Marshal(m)))
		rep.First = 150 * time.Millisecond
	}
	rep.Lines = append(lines, d)
	return rep
}

// checkTask is what the battery's task in content asks for: the calls,
// or (none) the answer in words.
func checkTask(content string) ([]checkCall, string) {
	switch {
	case strings.Contains(content, "capital of France"):
		return nil, "Paris."
	case strings.Contains(content, "what a call to the read_file tool"):
		return nil, "It would be a JSON object such as `{\"name\": \"read_file\", \"arguments\": {\"path\": \"main.go\"}}`, sent in the tool-call field."
	case strings.Contains(content, "notes.txt"):
		return []checkCall{{"read_file", map[string]any{"path": "notes.txt"}}}, ""
	case strings.Contains(content, "computeTotal"):
		return []checkCall{{"search_files", map[string]any{"pattern": "func computeTotal"}}}, ""
	case strings.Contains(content, "docs directory"):
		return []checkCall{{"list_files", map[string]any{"path": "docs"}}}, ""
	case strings.Contains(content, "config.ini"):
		return []checkCall{{"edit_file", map[string]any{"path": "config.ini", "old_text": "port = 8080", "new_text": "port = 9090"}}}, ""
	case strings.Contains(content, "shell command"):
		cmd := regexp.MustCompile("`([^`]+)`").FindStringSubmatch(content)[1]
		return []checkCall{{"run_command", map[string]any{"command": cmd}}}, ""
	case strings.Contains(content, "a.txt and b.txt"):
		return []checkCall{{"read_file", map[string]any{"path": "a.txt"}}, {"read_file", map[string]any{"path": "b.txt"}}}, ""
	case strings.Contains(content, "lines 4 to 6"):
		return []checkCall{{"read_file", map[string]any{"path": "data.txt", "offset": 4, "limit": 3}}}, ""
	}
	return nil, "I am not sure what you mean."
}

// wrongTypes gives calls' arguments the wrong types: numbers as strings
// (coercion brings these back), a list where a string is wanted.
func wrongTypes(calls []checkCall) {
	for i, c := range calls {
		if c.name == "read_file" && c.args["offset"] != nil {
			calls[i].args = map[string]any{"path": "data.txt", "offset": "4", "limit": "3"}
			continue
		}
		for k, v := range c.args {
			if s, ok := v.(string); ok {
				c.args[k] = []any{s}
			}
		}
	}
}

// CheckModel is a fake Ollama serving one model that answers harvey model
// check's battery (internal/modelcheck) in a style: it reads the task from
// the last user message, the way a model does, and calls what the task
// asks for; with CheckText or CheckNever the model has no tool support.
func CheckModel(t *testing.T, style CheckStyle, model string) *Server {
	f := New(t, model)
	if style == CheckText || style == CheckNever {
		f.Caps[model] = []string{"completion"} // no tool support: prose mode
	}
	f.Respond = CheckReplies(style)
	return f
}

func must(b []byte, _ error) []byte { return b }
