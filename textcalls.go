package harvey

import (
	"encoding/json"
	"io"
	"regexp"
	"strings"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

// Small models often print a tool call as text instead of sending a
// structured call. recoverToolCalls finds, for registered tool names only:
//   - llama3.2: a reply that is, or ends with, {"name": ..., "parameters"|"arguments": {...}}
//   - mistral:  [TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]
//   - qwen:     <tool_call>{...}</tool_call>
//   - any of those JSON objects inside a ```json (or bare ```) fence.
// It returns the calls and the prose left over.

var (
	qwenCallRE  = regexp.MustCompile(`(?s)<tool_call>\s*(.*?)\s*(</tool_call>|\z)`)
	fenceRE     = regexp.MustCompile("(?s)```(?:json|tool_call|tool)?[ \t]*\n(.*?)\n?```")
	mistralMark = "[TOOL_CALLS]"
)

// textCall is a call found in text.
type textCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Params    json.RawMessage `json:"parameters"`
}

// recoverToolCalls parses tool calls out of a reply. known reports whether a
// tool name is registered.
func recoverToolCalls(text string, known func(string) bool) ([]anyllm.ToolCall, string) {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return nil, text
	}
	// mistral: [TOOL_CALLS] followed by a JSON array (or object).
	if i := strings.Index(trimmed, mistralMark); i >= 0 {
		rest := strings.TrimSpace(trimmed[i+len(mistralMark):])
		if calls := parseCallJSON(rest, known); len(calls) > 0 {
			return calls, strings.TrimSpace(trimmed[:i])
		}
	}
	// qwen: <tool_call>{...}</tool_call>, possibly several.
	if strings.Contains(trimmed, "<tool_call>") {
		var calls []anyllm.ToolCall
		for _, m := range qwenCallRE.FindAllStringSubmatch(trimmed, -1) {
			calls = append(calls, parseCallJSON(m[1], known)...)
		}
		if len(calls) > 0 {
			return calls, strings.TrimSpace(qwenCallRE.ReplaceAllString(trimmed, ""))
		}
	}
	// fenced JSON blocks.
	if strings.Contains(trimmed, "```") {
		var calls []anyllm.ToolCall
		rest := trimmed
		for _, m := range fenceRE.FindAllStringSubmatchIndex(trimmed, -1) {
			if cs := parseCallJSON(trimmed[m[2]:m[3]], known); len(cs) > 0 {
				calls = append(calls, cs...)
				rest = strings.Replace(rest, trimmed[m[0]:m[1]], "", 1)
			}
		}
		if len(calls) > 0 {
			return calls, strings.TrimSpace(rest)
		}
	}
	// The whole reply is JSON (one object, an array, or several objects).
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		if calls := parseCallJSON(trimmed, known); len(calls) > 0 {
			return calls, ""
		}
	}
	// Prose that ends with a JSON object on its own line.
	if strings.HasSuffix(trimmed, "}") {
		if i := strings.LastIndex(trimmed, "\n{"); i >= 0 {
			if calls := parseCallJSON(trimmed[i+1:], known); len(calls) > 0 {
				return calls, strings.TrimSpace(trimmed[:i])
			}
		}
	}
	return nil, text
}

// parseCallJSON decodes one call object, an array of them, or a sequence of
// objects (separated by whitespace or ';'). Objects that are not calls to a
// known tool make the whole text not a call.
func parseCallJSON(s string, known func(string) bool) []anyllm.ToolCall {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var raws []json.RawMessage
	if strings.HasPrefix(s, "[") {
		if json.Unmarshal([]byte(s), &raws) != nil {
			// mistral sometimes uses single quotes
			if json.Unmarshal([]byte(strings.ReplaceAll(s, "'", `"`)), &raws) != nil {
				return nil
			}
		}
	} else {
		pos := 0
		for {
			rest := strings.TrimLeft(s[pos:], " \t\r\n;")
			if rest == "" {
				break
			}
			dec := json.NewDecoder(strings.NewReader(rest))
			var r json.RawMessage
			if dec.Decode(&r) != nil {
				return nil
			}
			raws = append(raws, r)
			pos = len(s) - len(rest) + int(dec.InputOffset())
		}
	}
	var calls []anyllm.ToolCall
	for _, r := range raws {
		var tc textCall
		if json.Unmarshal(r, &tc) != nil || tc.Name == "" || !known(tc.Name) {
			return nil
		}
		args := tc.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = tc.Params
		}
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		// arguments given as a JSON string holding JSON
		var inner string
		if json.Unmarshal(args, &inner) == nil {
			args = json.RawMessage(inner)
		}
		calls = append(calls, anyllm.ToolCall{ID: newCallID(), Type: "function", Function: anyllm.FunctionCall{Name: tc.Name, Arguments: string(args)}})
	}
	return calls
}

// holdbackWriter streams model text to the user but holds back text that may
// be the start of a printed tool call ({ at the start of a line,
// [TOOL_CALLS], <tool_call>, a ``` fence) until the reply ends, so the user
// sees the recovered call instead of raw JSON.
type holdbackWriter struct {
	out     io.Writer
	all     strings.Builder // the whole reply
	written int             // bytes of all already passed to out
	holding bool
}

var holdTriggers = []string{"[TOOL_CALLS]", "<tool_call>", "```"}

func (h *holdbackWriter) Write(p []byte) (int, error) {
	h.all.Write(p)
	if h.holding {
		return len(p), nil
	}
	s := h.all.String()
	pending := s[h.written:]
	cut := len(pending)
	if i := triggerIndex(s, h.written); i >= 0 {
		cut = i - h.written
		h.holding = true
	} else {
		// keep back a tail that could still become a trigger
		for _, t := range append(holdTriggers, "\n{") {
			for k := min(len(t)-1, len(pending)); k > 0; k-- {
				if strings.HasSuffix(pending, t[:k]) {
					cut = min(cut, len(pending)-k)
					break
				}
			}
		}
		if strings.TrimSpace(s) == "" {
			cut = 0 // leading whitespace: wait to see the first real character
		}
	}
	if cut > 0 {
		if _, err := io.WriteString(h.out, pending[:cut]); err != nil {
			return 0, err
		}
		h.written += cut
	}
	return len(p), nil
}

// triggerIndex finds the first hold trigger at or after from.
func triggerIndex(s string, from int) int {
	best := -1
	for _, t := range holdTriggers {
		if i := strings.Index(s[from:], t); i >= 0 && (best < 0 || from+i < best) {
			best = from + i
		}
	}
	// { as the first non-space character of the reply or of a line
	first := strings.IndexFunc(s, func(r rune) bool { return r != ' ' && r != '\n' && r != '\t' && r != '\r' })
	if first >= from && first >= 0 && s[first] == '{' && (best < 0 || first < best) {
		best = first
	}
	if i := strings.Index(s[from:], "\n{"); i >= 0 && (best < 0 || from+i+1 < best) {
		best = from + i + 1
	}
	return best
}

// finish returns the whole reply and the held-back text not yet shown.
func (h *holdbackWriter) finish() (all, held string) {
	s := h.all.String()
	return s, s[h.written:]
}
