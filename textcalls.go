package harvey

import (
	"encoding/json"
	"regexp"
	"strings"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

// Small models often print a tool call as text instead of sending a
// structured call. recoverToolCalls finds those calls in one pass over the
// reply (docs/tool-call-recovery.md has the formats and the rule):
//
//  1. candidates: spans framed by a known marker ([TOOL_CALLS], <tool_call>
//     and other wrappers, <function=NAME>, <|python_tag|>, DeepSeek and Kimi
//     special tokens, functools[...]), fenced blocks, JSON at a line start,
//     and pythonic calls [name(k="v")] of registered tools;
//  2. lenient decoding: the first complete value (trailing text stays prose,
//     stray closers are ignored), Python literals, doubled braces, XML-ish
//     <parameter=K>V</parameter> and GLM <arg_key>/<arg_value> pairs;
//  3. key shapes mapped to a name and arguments ({"name", "arguments" |
//     "parameters" | "args" | "input"}, {"function": {...}}, {"tool": ...},
//     {"tool_calls": [...]});
//  4. validation: a registered tool whose arguments fit its schema after
//     coercion (a call with no arguments only when the tool needs none);
//  5. act, not quote: the calls must be the reply, begin it, or end it
//     after a lead-in; a call inside an explanation, inline code, echoed
//     tool output or a fenced example in the middle of prose is a quotation.
//     In schema mode (the model has native tool calls) the lead-in must be
//     short.

// toolLookup returns a registered tool's parameter schema.
type toolLookup func(name string) (map[string]any, bool)

// rawCall is a call as printed, before validation.
type rawCall struct {
	name string
	args any // a map, a JSON string, or nil
}

// candidate is a span of the reply that holds calls.
type candidate struct {
	start, end int
	calls      []rawCall
	marked     bool // framed by a tool-call marker or special token
	fenced     bool // a ``` block
}

// maxRecoverBytes bounds the text recovery looks at (a reply is bounded
// too, by maxReplyBytes).
const maxRecoverBytes = 256 << 10

// recoverToolCalls returns the calls a reply makes as text and the prose
// left over. strict is schema mode: the model could have called natively,
// so only a reply that is the call (or a short lead-in and the call) counts.
func recoverToolCalls(text string, lookup toolLookup, strict bool) ([]anyllm.ToolCall, string) {
	if strings.TrimSpace(text) == "" || len(text) > maxRecoverBytes {
		return nil, text
	}
	cands := findCandidates(text, lookup)
	group := actGroup(text, cands, strict)
	if len(group) == 0 {
		return nil, text
	}
	var calls []anyllm.ToolCall
	for _, c := range group {
		for _, rc := range c.calls {
			if tc, ok := validCall(rc, lookup); ok {
				calls = append(calls, tc)
			}
		}
	}
	if len(calls) == 0 {
		return nil, text
	}
	// The prose left over: closers and stray brackets go only where they
	// touch the calls, so "map[string]int{}" in a later sentence stays.
	before := strings.TrimSpace(text[:group[0].start])
	after := stripLeadingClosers(text[group[len(group)-1].end:])
	return calls, strings.TrimSpace(before + " " + after)
}

// recoveredWhole reports whether the calls were the whole reply: nothing
// left over but blank space, one fence and stray closers (the prose
// recoverToolCalls returns is empty then). Only such a call is an act that
// runs unasked; with prose around it, it may be a quotation.
func recoveredWhole(prose string) bool { return stripClosers(prose) == "" }

// stripLeadingClosers removes, from the start of s, the stop tokens and
// stray closing brackets a model leaves right after a call.
func stripLeadingClosers(s string) string {
	for {
		t := strings.TrimLeft(s, " \t\r\n}]")
		for _, c := range closers {
			t = strings.TrimPrefix(t, c)
		}
		if t == s {
			return t
		}
		s = t
	}
}

// validCall accepts a registered tool whose arguments fit its schema.
func validCall(rc rawCall, lookup toolLookup) (anyllm.ToolCall, bool) {
	schema, ok := lookup(rc.name)
	if !ok {
		return anyllm.ToolCall{}, false
	}
	var args map[string]any
	switch a := rc.args.(type) {
	case nil:
		args = map[string]any{}
	case map[string]any:
		args = a
	case string:
		v, _, ok := decodeLenient(a)
		m, isMap := v.(map[string]any)
		if strings.TrimSpace(a) == "" {
			m, isMap, ok = map[string]any{}, true, true
		}
		if !ok || !isMap {
			return anyllm.ToolCall{}, false
		}
		args = m
	default:
		return anyllm.ToolCall{}, false
	}
	if err := coerceArgs(schema, args); err != nil {
		return anyllm.ToolCall{}, false
	}
	b, err := json.Marshal(args)
	if err != nil {
		return anyllm.ToolCall{}, false
	}
	return anyllm.ToolCall{ID: newCallID(), Type: "function", Function: anyllm.FunctionCall{Name: rc.name, Arguments: string(b)}}, true
}

// ---- act, not quote ----

// closers are stop tokens and stray closing marks a model leaves around a
// call; they are neither prose nor a reason to refuse.
var closers = []string{"[/TOOL_CALLS]", "</tool_call>", "</tool_calls>", "</s>", "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
	"<|endoftext|>", "<｜tool▁calls▁end｜>", "<|tool_calls_section_end|>", "<|python_tag|>", "[TOOL_CALLS]"}

func stripClosers(s string) string {
	for {
		t := strings.TrimSpace(s)
		for _, c := range closers {
			t = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(t, c), c))
		}
		t = strings.Trim(t, "}] \t\r\n")
		if t == s {
			return t
		}
		s = t
	}
}

// intentRE finds a lead-in that announces an action.
var intentRE = regexp.MustCompile(`(?i)\b(i'll|i will|i'm going to|i am going to|let me|let's|now i|next,? i|i need to|i should|calling|i'll use|using the|use the)\b`)

// actGroup picks the candidates that are the model's act: a run of
// adjacent candidates that is the whole reply, begins it, or ends it after
// a lead-in; or (prose mode) the only fenced block after an announced
// action. Anything else is a quotation.
func actGroup(text string, cands []candidate, strict bool) []candidate {
	if len(cands) == 0 {
		return nil
	}
	// Runs of candidates with nothing but separators between them.
	var runs [][]candidate
	for i, c := range cands {
		if i > 0 && strings.Trim(stripClosers(text[cands[i-1].end:c.start]), " \t\r\n,;") == "" {
			runs[len(runs)-1] = append(runs[len(runs)-1], c)
			continue
		}
		runs = append(runs, []candidate{c})
	}
	for _, run := range runs {
		before := stripClosers(text[:run[0].start])
		after := stripClosers(text[run[len(run)-1].end:])
		switch {
		case before == "":
			// The reply begins with the call: what follows is prose (or a
			// cut-off second call), kept as text.
			if strict && len(after) > 200 {
				continue
			}
			return run
		case after == "":
			if leadIn(before, strict) {
				return run
			}
		case !strict && len(runs) == 1 && len(run) == 1 && run[0].fenced && fenceCount(text) == 1 && intentRE.MatchString(lastLine(before)):
			return run
		}
	}
	return nil
}

// leadIn reports whether the prose before a call that ends the reply is an
// introduction to it (not an explanation that happens to end in an
// example): short, or announcing the action in its last line.
func leadIn(before string, strict bool) bool {
	if strings.Contains(before, "```") {
		return false
	}
	last := lastLine(before)
	if strict {
		return len(before) <= 200 && !strings.HasSuffix(strings.TrimSpace(last), ":") || intentRE.MatchString(last) && len(before) <= 400
	}
	if intentRE.MatchString(last) {
		return true
	}
	return len(before) <= 300 && !strings.HasSuffix(strings.TrimSpace(last), ":")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func fenceCount(text string) int { return strings.Count(text, "```") / 2 }

// ---- finding candidates ----

// findCandidates scans the reply once, left to right, outside inline code
// and echoed tool results.
func findCandidates(text string, lookup toolLookup) []candidate {
	masked := maskQuoted(text)
	var out []candidate
	sc := &scan{lookup: lookup}
	lineStart := true // only blanks since the last newline
	for i := 0; i < len(text); {
		if !masked[i] {
			if c, ok := sc.candidateAt(text, i, lineStart); ok && c.end > i {
				out = append(out, c)
				i = c.end
				lineStart = false
				continue
			}
		}
		switch text[i] {
		case '\n':
			lineStart = true
		case ' ', '\t', '\r':
		default:
			lineStart = false
		}
		i++
	}
	return out
}

// scan is one pass over a reply; it stops trying bare JSON after a few
// values that run to the end of the text unclosed (so a reply full of
// opening braces costs linear time, not quadratic).
type scan struct {
	lookup   toolLookup
	unclosed int
	last     map[string]int // the last index of each closing tag in the text
}

// closedAfter reports whether close occurs at or after i (found once per
// tag, so many unclosed openers cost linear time).
func (sc *scan) closedAfter(text string, i int, close string) bool {
	if sc.last == nil {
		sc.last = map[string]int{}
	}
	idx, ok := sc.last[close]
	if !ok {
		idx = strings.LastIndex(text, close)
		sc.last[close] = idx
	}
	return idx >= i
}

// tooManyUnclosed counts a construct that runs to the end of the reply;
// after a few, the rest of the reply is not searched (it is not a call).
func (sc *scan) tooManyUnclosed() bool {
	sc.unclosed++
	return sc.unclosed > 4
}

// maskQuoted marks inline code spans and echoed tool results: text there
// is never a call.
func maskQuoted(text string) []bool {
	m := make([]bool, len(text))
	mark := func(a, b int) {
		for k := a; k < b && k < len(m); k++ {
			m[k] = true
		}
	}
	for i := 0; i < len(text); {
		switch {
		case strings.HasPrefix(text[i:], "[tool_result"):
			end := strings.Index(text[i:], "[end tool_result")
			if end < 0 {
				mark(i, len(text))
				return m
			}
			mark(i, i+end)
			i += end + 1
		case strings.HasPrefix(text[i:], "```"):
			if j := strings.Index(text[i+3:], "```"); j >= 0 {
				i += j + 6 // fences are candidates, not inline code
			} else {
				i = len(text)
			}
		case text[i] == '`':
			j := strings.IndexByte(text[i+1:], '`')
			if j < 0 || strings.Contains(text[i+1:i+1+j], "\n") {
				i++
				continue
			}
			mark(i, i+j+2)
			i += j + 2
		default:
			i++
		}
	}
	return m
}

// markerCloses pairs the openers whose body runs to a closing tag.
var markerCloses = [][2]string{
	{"<tool_call>", "</tool_call>"}, {"<tool_calls>", "</tool_calls>"}, {"<toolcall>", "</toolcall>"}, {"<tool>", "</tool>"},
	{"<tools>", "</tools>"}, {"<response>", "</response>"}, {"<function_call>", "</function_call>"}, {"<functioncall>", "</functioncall>"},
	{"<|tool_call|>", "<|/tool_call|>"}, {"<function=", "</function>"}, {"<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"},
	{"<｜tool▁calls▁begin｜>", "<｜tool▁call▁end｜>"}, {"<|tool_call_begin|>", "<|tool_call_end|>"}, {"<|tool_calls_section_begin|>", "<|tool_call_end|>"},
}

// wrappers are the open/close tags models wrap a JSON call in.
var wrappers = []struct{ open, close string }{
	{"<tool_call>", "</tool_call>"}, {"<tool_calls>", "</tool_calls>"}, {"<toolcall>", "</toolcall>"},
	{"<tool>", "</tool>"}, {"<tools>", "</tools>"}, {"<response>", "</response>"}, {"<function_call>", "</function_call>"},
	{"<functioncall>", "</functioncall>"}, {"<|tool_call|>", "<|/tool_call|>"},
}

// candidateAt tries every form that can start at text[i:].
func (sc *scan) candidateAt(text string, i int, lineStart bool) (candidate, bool) {
	s := text[i:]
	lookup := sc.lookup
	if sc.unclosed > 4 {
		return candidate{}, false
	}
	for _, m := range markerCloses {
		if strings.HasPrefix(s, m[0]) && !sc.closedAfter(text, i, m[1]) && sc.tooManyUnclosed() {
			return candidate{}, false
		}
	}
	switch {
	case strings.HasPrefix(s, "[TOOL_CALLS]"):
		return mistralCalls(text, i, lookup)
	case strings.HasPrefix(s, "<function="):
		return functionTag(text, i)
	case strings.HasPrefix(s, "<|python_tag|>"):
		return afterMarker(text, i, len("<|python_tag|>"), lookup)
	case strings.HasPrefix(s, "functools["):
		return afterMarker(text, i, len("functools"), lookup)
	case strings.HasPrefix(s, "<｜tool▁call▁begin｜>"), strings.HasPrefix(s, "<｜tool▁calls▁begin｜>"):
		return specialTokenCalls(text, i, deepseekSyntax)
	case strings.HasPrefix(s, "<|tool_calls_section_begin|>"), strings.HasPrefix(s, "<|tool_call_begin|>"):
		return specialTokenCalls(text, i, kimiSyntax)
	case strings.HasPrefix(s, "```"):
		return fencedCalls(text, i, lookup)
	}
	for _, w := range wrappers {
		if strings.HasPrefix(s, w.open) {
			return wrapped(text, i, w.open, w.close, lookup)
		}
	}
	if lineStart && (s[0] == '{' || s[0] == '[') && sc.unclosed < 4 {
		if balancedEnd(s) < 0 {
			sc.unclosed++
		}
		if calls, n := jsonCalls(s); len(calls) > 0 {
			return candidate{start: i, end: i + n, calls: calls}, true
		}
		if s[0] == '[' {
			if calls, n := pythonicCalls(s, lookup); len(calls) > 0 {
				return candidate{start: i, end: i + n, calls: calls}, true
			}
		}
	}
	if lineStart && isIdentStart(s[0]) {
		if name, n := leadingIdent(s); n < len(s) && s[n] == '(' && lookupName(name, lookup) {
			if balancedEnd(s[n:]) < 0 {
				sc.tooManyUnclosed()
				return candidate{}, false
			}
			if calls, n := pythonicCalls(s, lookup); len(calls) > 0 {
				return candidate{start: i, end: i + n, calls: calls}, true
			}
		}
	}
	return candidate{}, false
}

func isIdentStart(b byte) bool { return b == '_' || (b|0x20) >= 'a' && (b|0x20) <= 'z' }

// mistralCalls: [TOOL_CALLS] then a JSON array or object, or the newer
// NAME[ARGS]{...} / NAME{...}; repeated markers make several calls.
func mistralCalls(text string, i int, lookup toolLookup) (candidate, bool) {
	pos := i + len("[TOOL_CALLS]")
	c := candidate{start: i, marked: true}
	for {
		rest := strings.TrimLeft(text[pos:], " \t\r\n")
		pos = len(text) - len(rest)
		if calls, n := jsonCalls(rest); len(calls) > 0 {
			c.calls = append(c.calls, calls...)
			pos += n
		} else if name, n := leadingIdent(rest); n > 0 {
			body := rest[n:]
			skip := n
			if strings.HasPrefix(body, "[ARGS]") {
				body, skip = body[len("[ARGS]"):], skip+len("[ARGS]")
			}
			body2 := strings.TrimLeft(body, " \t")
			skip += len(body) - len(body2)
			v, m, ok := decodeLenient(body2)
			if !ok {
				break
			}
			c.calls = append(c.calls, rawCall{name: name, args: v})
			pos += skip + m
		} else {
			break
		}
		after := strings.TrimLeft(text[pos:], " \t\r\n")
		if !strings.HasPrefix(after, "[TOOL_CALLS]") {
			break
		}
		pos = len(text) - len(after) + len("[TOOL_CALLS]")
	}
	c.end = pos
	return c, len(c.calls) > 0
}

// afterMarker decodes JSON or pythonic calls right after a marker.
func afterMarker(text string, i, skip int, lookup toolLookup) (candidate, bool) {
	rest := strings.TrimLeft(text[i+skip:], " \t\r\n")
	off := len(text) - len(rest)
	if calls, n := jsonCalls(rest); len(calls) > 0 {
		return candidate{start: i, end: off + n, calls: calls, marked: true}, true
	}
	if calls, n := pythonicCalls(rest, lookup); len(calls) > 0 {
		return candidate{start: i, end: off + n, calls: calls, marked: true}, true
	}
	return candidate{}, false
}

// wrapped: <tag> BODY </tag> (or to the end of the reply) where BODY is
// JSON, a <function=...> call, or GLM's NAME <arg_key>K</arg_key>
// <arg_value>V</arg_value> ...
func wrapped(text string, i int, open, close string, lookup toolLookup) (candidate, bool) {
	bodyStart := i + len(open)
	end := len(text)
	bodyEnd := end
	if j := strings.Index(text[bodyStart:], close); j >= 0 {
		bodyEnd = bodyStart + j
		end = bodyEnd + len(close)
	}
	body := strings.TrimSpace(text[bodyStart:bodyEnd])
	c := candidate{start: i, end: end, marked: true}
	switch {
	case strings.HasPrefix(body, "<function="):
		fc, ok := functionTag(body, 0)
		c.calls = fc.calls
		return c, ok
	case strings.Contains(body, "<arg_key>") || (body != "" && !strings.ContainsAny(body[:1], "{[") && lookupName(firstLineOf(body), lookup)):
		c.calls = glmCall(body)
		return c, len(c.calls) > 0
	}
	calls, n := jsonCalls(body)
	if len(calls) == 0 {
		calls, n = pythonicCalls(body, lookup)
	}
	if len(calls) == 0 {
		return candidate{}, false
	}
	if bodyEnd == len(text) {
		c.end = len(text) - len(body) + n // unclosed: the rest is prose
		if k := strings.Index(text[bodyStart:], body); k >= 0 {
			c.end = bodyStart + k + n
		}
	}
	c.calls = calls
	return c, true
}

func lookupName(name string, lookup toolLookup) bool {
	_, ok := lookup(strings.TrimSpace(name))
	return ok
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// glmCall: NAME, then <arg_key>K</arg_key><arg_value>V</arg_value> pairs.
func glmCall(body string) []rawCall {
	name := strings.TrimSpace(firstLineOf(body))
	if i := strings.Index(name, "<arg_key>"); i >= 0 {
		name = strings.TrimSpace(name[:i])
	}
	args := map[string]any{}
	rest := body
	for {
		k, kn, ok := between(rest, "<arg_key>", "</arg_key>")
		if !ok {
			break
		}
		rest = rest[kn:]
		v, vn, ok := between(rest, "<arg_value>", "</arg_value>")
		if !ok {
			break
		}
		args[strings.TrimSpace(k)] = xmlValue(v)
		rest = rest[vn:]
	}
	if name == "" {
		return nil
	}
	return []rawCall{{name: name, args: args}}
}

// between finds open...close in s: the inner text and the index just past
// close.
func between(s, open, close string) (string, int, bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return "", 0, false
	}
	j := strings.Index(s[i+len(open):], close)
	if j < 0 {
		return "", 0, false
	}
	return s[i+len(open) : i+len(open)+j], i + len(open) + j + len(close), true
}

// functionTag: <function=NAME>{json}</function> or
// <function=NAME><parameter=K>V</parameter>...</function> (Qwen3-Coder).
func functionTag(text string, i int) (candidate, bool) {
	s := text[i+len("<function="):]
	gt := strings.IndexByte(s, '>')
	if gt <= 0 {
		return candidate{}, false
	}
	name := strings.TrimSpace(s[:gt])
	body := s[gt+1:]
	end := len(text)
	if j := strings.Index(body, "</function>"); j >= 0 {
		end = i + len("<function=") + gt + 1 + j + len("</function>")
		body = body[:j]
	}
	c := candidate{start: i, end: end, marked: true}
	tb := strings.TrimSpace(body)
	if strings.HasPrefix(tb, "{") {
		v, _, ok := decodeLenient(tb)
		if !ok {
			return candidate{}, false
		}
		c.calls = []rawCall{{name: name, args: v}}
		return c, true
	}
	args := map[string]any{}
	rest := body
	for {
		p := strings.Index(rest, "<parameter=")
		if p < 0 {
			break
		}
		rest = rest[p+len("<parameter="):]
		gt := strings.IndexByte(rest, '>')
		if gt < 0 {
			break
		}
		key := strings.TrimSpace(rest[:gt])
		rest = rest[gt+1:]
		q := strings.Index(rest, "</parameter>")
		if q < 0 || strings.Contains(rest[:q], "<parameter=") {
			// An unclosed parameter: its value's end is unknown (read to
			// the next close, a file name swallowed the next parameter).
			return candidate{}, false
		}
		val := rest[:q]
		rest = rest[q+len("</parameter>"):]
		args[key] = xmlValue(val)
	}
	c.calls = []rawCall{{name: name, args: args}}
	return c, name != ""
}

// xmlValue is a parameter's text: one surrounding newline trimmed; a JSON
// array or object is decoded (the schema coerces the rest).
func xmlValue(v string) any {
	v = strings.TrimPrefix(strings.TrimSuffix(v, "\n"), "\n")
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		if x, n, ok := decodeLenient(t); ok && n == len(t) {
			return x
		}
	}
	return v
}

// specialTokenSyntax is a family's special-token call format: an optional
// section opener, then calls of begin HEAD sep BODY end.
type specialTokenSyntax struct {
	section, begin, sep, end string
	// split turns HEAD and BODY into the tool name and its JSON arguments.
	split func(head, body string) (name, args string, ok bool)
}

// deepseekSyntax: <｜tool▁call▁begin｜>[function<｜tool▁sep｜>]NAME then
// ```json {...} ``` or {...}, then <｜tool▁call▁end｜>.
var deepseekSyntax = specialTokenSyntax{section: "<｜tool▁calls▁begin｜>", begin: "<｜tool▁call▁begin｜>", sep: "<｜tool▁sep｜>", end: "<｜tool▁call▁end｜>",
	split: func(head, body string) (string, string, bool) {
		name := strings.TrimSpace(head)
		if name == "function" || name == "" { // V3: function<sep>NAME\n```json...
			nl := strings.IndexByte(body, '\n')
			if nl < 0 {
				return "", "", false
			}
			name, body = strings.TrimSpace(body[:nl]), body[nl+1:]
		}
		body = strings.TrimSpace(body)
		body = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(body, "```json"), "```"), "```")
		return name, body, true
	}}

// kimiSyntax: <|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>
// {...}<|tool_call_end|>, inside <|tool_calls_section_begin|>.
var kimiSyntax = specialTokenSyntax{section: "<|tool_calls_section_begin|>", begin: "<|tool_call_begin|>", sep: "<|tool_call_argument_begin|>", end: "<|tool_call_end|>",
	split: func(head, body string) (string, string, bool) {
		id := strings.TrimPrefix(strings.TrimSpace(head), "functions.")
		if k := strings.LastIndexByte(id, ':'); k >= 0 {
			id = id[:k]
		}
		return id, body, true
	}}

// specialTokenCalls reads the calls of syntax x at text[i:].
func specialTokenCalls(text string, i int, x specialTokenSyntax) (candidate, bool) {
	c := candidate{start: i, marked: true}
	pos := i
	if strings.HasPrefix(text[pos:], x.section) {
		pos += len(x.section)
	}
	for {
		rest := strings.TrimLeft(text[pos:], " \t\r\n")
		if !strings.HasPrefix(rest, x.begin) {
			break
		}
		rest = rest[len(x.begin):]
		k := strings.Index(rest, x.sep)
		e := strings.Index(rest, x.end)
		if k < 0 || e < 0 || k > e {
			break
		}
		name, body, ok := x.split(rest[:k], rest[k+len(x.sep):e])
		if !ok {
			break
		}
		v, _, ok := decodeLenient(strings.TrimSpace(body))
		if !ok {
			break
		}
		c.calls = append(c.calls, rawCall{name: name, args: v})
		pos = len(text) - len(rest) + e + len(x.end)
	}
	c.end = pos
	return c, len(c.calls) > 0
}

// fencedCalls: a ``` block whose whole content is calls (JSON, pythonic,
// XML-ish or a wrapper).
func fencedCalls(text string, i int, lookup toolLookup) (candidate, bool) {
	s := text[i+3:]
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return candidate{}, false
	}
	lang := strings.TrimSpace(s[:nl])
	if lang != "" && !strings.Contains("json tool_call tool tool_code xml python javascript js", strings.ToLower(lang)) {
		return candidate{}, false
	}
	body := s[nl+1:]
	j := strings.Index(body, "```")
	if j < 0 {
		return candidate{}, false
	}
	content := strings.TrimSpace(body[:j])
	end := i + 3 + nl + 1 + j + 3
	if content == "" {
		return candidate{}, false
	}
	inner := findCandidates(content, lookup)
	if len(inner) == 0 {
		return candidate{}, false
	}
	// The block must hold calls and nothing else.
	covered := 0
	var calls []rawCall
	for _, c := range inner {
		covered += c.end - c.start
		calls = append(calls, c.calls...)
	}
	rest := content
	for k := len(inner) - 1; k >= 0; k-- {
		rest = rest[:inner[k].start] + rest[inner[k].end:]
	}
	if strings.Trim(stripClosers(rest), " \t\r\n,;") != "" {
		return candidate{}, false
	}
	return candidate{start: i, end: end, calls: calls, fenced: true}, true
}

// ---- decoding ----

// jsonCalls decodes the first complete JSON value (or several objects in
// a row) at the start of s and maps it to calls. n is how much of s the
// calls took.
func jsonCalls(s string) ([]rawCall, int) { return jsonCallsIn(s, true) }

func jsonCallsIn(s string, retryList bool) ([]rawCall, int) {
	var calls []rawCall
	pos := 0
	for {
		rest := strings.TrimLeft(s[pos:], " \t\r\n;,")
		if rest == "" || (rest[0] != '{' && rest[0] != '[') {
			break
		}
		v, n, ok := decodeLenient(rest)
		if !ok && rest[0] == '[' && retryList {
			// A list cut off after its first calls: keep the complete ones.
			if cs, m := jsonCallsIn(rest[1:], false); len(cs) > 0 {
				return append(calls, cs...), len(s) - len(rest) + 1 + m
			}
		}
		if !ok {
			break
		}
		cs := callsFromValue(v)
		if len(cs) == 0 {
			break
		}
		calls = append(calls, cs...)
		pos = len(s) - len(rest) + n
	}
	return calls, pos
}

// callsFromValue maps the key shapes models use to name + arguments.
func callsFromValue(v any) []rawCall {
	switch x := v.(type) {
	case []any:
		var out []rawCall
		for _, it := range x {
			cs := callsFromValue(it)
			if len(cs) == 0 {
				return nil
			}
			out = append(out, cs...)
		}
		return out
	case map[string]any:
		if tc, ok := x["tool_calls"].([]any); ok {
			return callsFromValue(tc)
		}
		if f, ok := x["function"].(map[string]any); ok {
			return callsFromValue(f)
		}
		name := ""
		for _, k := range []string{"name", "tool", "tool_name", "function"} {
			if s, ok := x[k].(string); ok && s != "" {
				name = s
				break
			}
		}
		if name == "" {
			return nil
		}
		var args any
		for _, k := range []string{"arguments", "parameters", "args", "input", "tool_input"} {
			if a, ok := x[k]; ok && a != nil {
				args = a
				break
			}
		}
		return []rawCall{{name: name, args: args}}
	}
	return nil
}

// decodeLenient decodes the first complete value at the start of s: JSON,
// JSON with doubled braces, or a Python literal (single quotes, True,
// False, None). n is the length of the value in s; what follows is not
// looked at. A value cut off before its end is not decoded.
func decodeLenient(s string) (any, int, bool) {
	s2 := strings.TrimLeft(s, " \t\r\n")
	lead := len(s) - len(s2)
	if s2 == "" || (s2[0] != '{' && s2[0] != '[') {
		return nil, 0, false
	}
	end := balancedEnd(s2)
	if end < 0 {
		return nil, 0, false
	}
	span := s2[:end]
	var v any
	if json.Unmarshal([]byte(span), &v) == nil {
		return v, lead + end, true
	}
	if strings.HasPrefix(span, "{{") && strings.HasSuffix(span, "}}") {
		if json.Unmarshal([]byte(span[1:len(span)-1]), &v) == nil {
			return v, lead + end, true
		}
	}
	if j, ok := pyToJSON(span); ok && json.Unmarshal([]byte(j), &v) == nil {
		return v, lead + end, true
	}
	return nil, 0, false
}

// balancedEnd returns the length of the bracketed value at the start of s
// (strings in either quote respected), or -1 if it is cut off.
func balancedEnd(s string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return -1
			}
		}
	}
	return -1
}

// pyToJSON rewrites a Python literal as JSON: 'strings', True, False, None.
func pyToJSON(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			var lit strings.Builder
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
					switch s[j] {
					case 'n':
						lit.WriteByte('\n')
					case 't':
						lit.WriteByte('\t')
					case 'r':
						lit.WriteByte('\r')
					case '\\', '\'', '"', '/':
						lit.WriteByte(s[j])
					default:
						// Not an escape (C:\Users): the text was not written
						// as a literal, so "\n" in it may not mean a newline
						// either. No faithful reading: no call (a wrong act
						// is worse than none).
						return "", false
					}
					continue
				}
				lit.WriteByte(s[j])
			}
			if j >= len(s) {
				return "", false
			}
			q, _ := json.Marshal(lit.String())
			b.Write(q)
			i = j
		case strings.HasPrefix(s[i:], "True") && !identAt(s, i+4):
			b.WriteString("true")
			i += 3
		case strings.HasPrefix(s[i:], "False") && !identAt(s, i+5):
			b.WriteString("false")
			i += 4
		case strings.HasPrefix(s[i:], "None") && !identAt(s, i+4):
			b.WriteString("null")
			i += 3
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

func identAt(s string, i int) bool {
	return i < len(s) && (isIdentStart(s[i]) || s[i] >= '0' && s[i] <= '9')
}

func leadingIdent(s string) (string, int) {
	n := 0
	for n < len(s) && (isIdentStart(s[n]) || n > 0 && (s[n] >= '0' && s[n] <= '9' || s[n] == '-' || s[n] == '.')) {
		n++
	}
	return s[:n], n
}

// pythonicCalls: [name(k="v", n=1), other()] or name(k="v") for a
// registered tool name (Llama 3.2's documented form).
func pythonicCalls(s string, lookup toolLookup) ([]rawCall, int) {
	pos := 0
	list := strings.HasPrefix(s, "[")
	if list {
		pos = 1
	}
	var calls []rawCall
	for {
		rest := strings.TrimLeft(s[pos:], " \t\r\n,")
		name, n := leadingIdent(rest)
		if n == 0 || !strings.HasPrefix(rest[n:], "(") {
			break
		}
		if _, ok := lookup(name); !ok {
			return nil, 0
		}
		end := balancedEnd(rest[n:])
		if end < 0 {
			break
		}
		args, ok := pythonArgs(rest[n+1 : n+end-1])
		if !ok {
			return nil, 0
		}
		calls = append(calls, rawCall{name: name, args: args})
		pos = len(s) - len(rest) + n + end
		if !list {
			break
		}
	}
	if list {
		rest := strings.TrimLeft(s[pos:], " \t\r\n")
		if !strings.HasPrefix(rest, "]") {
			return nil, 0
		}
		pos = len(s) - len(rest) + 1
	}
	return calls, pos
}

// pythonArgs parses k=v, k2=v2 with Python literal values.
func pythonArgs(s string) (map[string]any, bool) {
	args := map[string]any{}
	rest := strings.TrimSpace(s)
	for rest != "" {
		key, n := leadingIdent(rest)
		if n == 0 {
			return nil, false
		}
		rest = strings.TrimLeft(rest[n:], " ")
		if !strings.HasPrefix(rest, "=") {
			return nil, false
		}
		rest = strings.TrimLeft(rest[1:], " ")
		end := literalEnd(rest)
		if end <= 0 {
			return nil, false
		}
		j, ok := pyToJSON(rest[:end])
		var v any
		if !ok || json.Unmarshal([]byte(strings.TrimSpace(j)), &v) != nil {
			return nil, false
		}
		args[key] = v
		rest = strings.TrimLeft(strings.TrimSpace(rest[end:]), ",")
		rest = strings.TrimSpace(rest)
	}
	return args, true
}

// literalEnd finds the end of one Python literal at the start of s.
func literalEnd(s string) int {
	if s == "" {
		return 0
	}
	switch s[0] {
	case '"', '\'':
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' {
				i++
				continue
			}
			if s[i] == s[0] {
				return i + 1
			}
		}
		return -1
	case '[', '{', '(':
		return balancedEnd(s)
	}
	i := strings.IndexAny(s, ",")
	if i < 0 {
		return len(s)
	}
	return i
}
