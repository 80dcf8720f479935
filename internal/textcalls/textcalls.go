// Package textcalls recovers the tool calls a model prints as text
// instead of sending a structured call (small models often do). Recover finds those calls in one pass over the
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
//
// Contract: Recover(text, lookup, strict) returns calls only for the act
// of the reply, each naming a tool lookup knows with arguments that decode
// as written and fit its schema (coerce.Args); a call inside a quotation
// is never returned; when one call of the act cannot be read faithfully,
// none is returned and Unread says, per call, what the model should fix.
// It never guesses between two candidates and runs nothing: it reads text.
package textcalls

import (
	"crypto/rand"
	"encoding/json"
	"strings"

	anyllm "github.com/mozilla-ai/any-llm-go"

	"github.com/harvey-agent/harvey/internal/coerce"
)

// Lookup returns a registered tool's parameter schema.
type Lookup func(name string) (map[string]any, bool)

// rawCall is a call as printed, before validation.
type rawCall struct {
	name string
	args any // a map, a JSON string, or nil
	// flat: the arguments were the object's other keys ({"tool": "x",
	// "path": ...}); each must then be one of the tool's parameters.
	flat bool
	// bad says why the arguments cannot be read as written (the call is
	// then never run; the model is told).
	bad string
}

// candidate is a span of the reply that holds calls.
type candidate struct {
	start, end int
	calls      []rawCall
	marked     bool // framed by a tool-call marker or special token
	token      bool // framed by a model's special call token: never prose
	fenced     bool // a ``` block
	inline     bool // a pseudo-code call after text on its line
}

// maxRecoverBytes bounds the text recovery looks at (a reply is bounded
// too, by maxReplyBytes).
const maxRecoverBytes = 256 << 10

// Result is what a reply does as text: the calls it makes, the prose
// left over, and the calls it made that cannot be read (why, per call).
type Result struct {
	Calls  []anyllm.ToolCall
	Prose  string
	Unread []string
	Format string // the family of the first call (formatName)
	// Decision is what the reply does with Calls (decide.go): Act runs
	// them; Ask returns them so the caller can ask the model to send them
	// alone; a Quote returns none. Rule names the rule that decided.
	Decision Decision
	Rule     string
	// Dropped is the prose after an act's calls: an answer written as if
	// the calls had returned, left out of Prose.
	Dropped string
}

// Note is what the model is told when its printed calls were not run.
func (r Result) Note() string {
	if len(r.Unread) == 0 {
		return ""
	}
	return "Harvey did not run the tool call you wrote as text: " + strings.Join(r.Unread, "; ") +
		". Nothing was changed. Send the call again with arguments that are valid JSON matching the tool's parameters" +
		" (use the tool-call field if you can)."
}

// Recover returns the calls a reply makes as text, the prose left over,
// and the calls it could not read. strict is schema mode: the model could
// have called natively, so only a reply that is the call (or a short
// lead-in and the call) counts. When any call of the act cannot be read
// faithfully (its arguments do not decode as written or do not fit the
// tool), none runs — a wrong act is worse than none — and Unread says
// what to fix.
func Recover(text string, lookup Lookup, strict bool) Result {
	if strings.TrimSpace(text) == "" || len(text) > maxRecoverBytes {
		return Result{Prose: text}
	}
	cands := findCandidates(text, lookup)
	group := actGroup(text, cands, strict)
	if len(group) == 0 {
		return Result{Prose: text}
	}
	r := Result{Format: formatName(text[group[0].start:])}
	for _, c := range group {
		for _, rc := range c.calls {
			tc, why, ok := validCall(rc, lookup)
			switch {
			case ok:
				r.Calls = append(r.Calls, tc)
			case why != "":
				r.Unread = append(r.Unread, rc.name+": "+why)
			}
		}
	}
	if len(r.Unread) > 0 {
		return Result{Prose: text, Unread: r.Unread, Format: r.Format}
	}
	if len(r.Calls) == 0 {
		return Result{Prose: text}
	}
	r.Decision, r.Rule = decide(text, group, strict)
	switch r.Decision {
	case Quote:
		return Result{Prose: text, Format: r.Format, Rule: r.Rule}
	case Act:
		if r.Rule != RuleWhole {
			r.Prose = strings.TrimSpace(text[:group[0].start])
			r.Dropped = strings.TrimSpace(stripLeadingClosers(text[group[len(group)-1].end:]))
			if strings.TrimSpace(stripClosers(r.Dropped)) == "" {
				r.Dropped = ""
			}
			return r
		}
	}
	r.Prose = proseAround(text, group)
	return r
}

// callFormats names the families by how a call begins (the first match
// wins; JSON and pythonic calls have no marker).
var callFormats = []struct{ prefix, name string }{
	{"[TOOL_CALLS]", "Mistral [TOOL_CALLS]"}, {"<tool_call>", "<tool_call> tags"}, {"<function", "<function=…>"},
	{"<|python_tag|>", "Llama <|python_tag|>"}, {"<｜tool", "DeepSeek tokens"}, {"<|tool▁", "DeepSeek tokens"}, {"<|tool_calls_begin", "DeepSeek tokens"},
	{"<|tool_call", "Kimi/LFM tokens"}, {"<｜DSML｜", "DeepSeek DSML"}, {"<|DSML|", "DeepSeek DSML"}, {"<start_function_call>", "FunctionGemma"},
	{">>>", "Functionary"}, {"<|recipient|>", "Functionary"}, {"Action:", "Command-R Action"}, {"[Calling tool:", "[Calling tool:]"},
	{"```", "fenced block"}, {"functools[", "functools[…]"}, {"{", "JSON"}, {"[{", "JSON"}, {"<", "XML-style tags"},
}

// formatName says which family a printed call was written in.
func formatName(s string) string {
	for _, f := range callFormats {
		if strings.HasPrefix(s, f.prefix) {
			return f.name
		}
	}
	return "pythonic"
}

// proseAround is the reply without the calls: closers and stray brackets
// go only where they touch a call, so "map[string]int{}" in a later
// sentence stays.
func proseAround(text string, group []candidate) string {
	parts := []string{strings.TrimSpace(text[:group[0].start])}
	for k, c := range group {
		next := len(text)
		if k+1 < len(group) {
			next = group[k+1].start
		}
		parts = append(parts, strings.TrimSpace(stripLeadingClosers(text[c.end:next])))
	}
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, " ")
}

// WholeReply reports whether the calls were the whole reply: nothing
// left over but blank space, one fence, stray closers and the model's
// reasoning before it (the prose Recover returns is empty then).
// Only such a call is an act that runs unasked; with prose around it, it
// may be a quotation.
func WholeReply(prose string) bool { return stripClosers(afterThinking(prose)) == "" }

// afterThinking drops a reasoning block (<think>...</think>) a model
// writes before its answer: it is neither prose nor the act.
func afterThinking(s string) string {
	if i := strings.LastIndex(s, "</think>"); i >= 0 {
		return s[i+len("</think>"):]
	}
	return s
}

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

// validCall accepts a registered tool whose arguments fit its schema. why
// says what is wrong with a registered tool's arguments (empty for a name
// that is not a tool: that is not a call at all).
func validCall(rc rawCall, lookup Lookup) (anyllm.ToolCall, string, bool) {
	schema, ok := lookup(rc.name)
	if !ok {
		return anyllm.ToolCall{}, "", false
	}
	if rc.bad != "" {
		return anyllm.ToolCall{}, rc.bad, false
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
			return anyllm.ToolCall{}, "the arguments string is not a JSON object" + escapeHint(a), false
		}
		args = m
	default:
		return anyllm.ToolCall{}, "the arguments are not an object of named parameters", false
	}
	if rc.flat {
		props := coerce.Props(schema)
		for k := range args {
			if _, ok := props[k]; !ok {
				return anyllm.ToolCall{}, "", false // data with a "tool" key, not a call
			}
		}
	}
	if err := coerce.Args(schema, args); err != nil {
		return anyllm.ToolCall{}, err.Error(), false
	}
	b, err := json.Marshal(args)
	if err != nil {
		return anyllm.ToolCall{}, "", false
	}
	return anyllm.ToolCall{ID: NewCallID(), Type: "function", Function: anyllm.FunctionCall{Name: rc.name, Arguments: string(b)}}, "", true
}

// ---- act, not quote ----

// closers are stop tokens and stray closing marks a model leaves around a
// call; they are neither prose nor a reason to refuse.
var closers = []string{"[/TOOL_CALLS]", "</tool_call>", "</tool_calls>", "</s>", "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
	"<|endoftext|>", "<｜tool▁calls▁end｜>", "<|tool▁calls▁end|>", "<|tool_calls_end|>", "<|tool_calls_section_end|>", "<|python_tag|>", "[TOOL_CALLS]",
	"<|from|>assistant", "</｜DSML｜function_calls>", "</|DSML|function_calls>"}

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

// actGroup picks the candidates that are the model's act: a run of
// adjacent candidates that is the whole reply, begins it, or ends it after
// a lead-in; or (prose mode) the only fenced block after an announced
// action. Anything else is a quotation.
func actGroup(text string, cands []candidate, strict bool) []candidate {
	if len(cands) == 0 {
		return nil
	}
	runs := adjacentRuns(text, cands)
	for k, run := range runs {
		before := stripClosers(afterThinking(text[:run[0].start]))
		if inlineRun(run) {
			// A pseudo-code call after text on its line: only when the
			// reply is that one line, announcing the call.
			if stripClosers(text[run[len(run)-1].end:]) == "" && !strings.Contains(before, "\n") && len(before) <= 120 && intentRE().MatchString(before) {
				return run
			}
			continue
		}
		if before == "" {
			// Special call tokens with prose between them: each block is
			// an act (no one quotes a special token), the prose stays.
			run = append(run, tokenRuns(run, runs[k+1:])...)
		}
		if isAct(text, run, before, strict, len(runs) == 1) {
			return run
		}
		if markedGroup(run) && !insideSentence(text, run) {
			// The model's own call markers, after a sentence or on a line
			// of their own: an act wherever they stand (decide).
			return run
		}
	}
	return nil
}

// adjacentRuns groups the candidates into runs with nothing but
// separators between them.
func adjacentRuns(text string, cands []candidate) [][]candidate {
	var runs [][]candidate
	for i, c := range cands {
		if i > 0 && strings.Trim(stripClosers(text[cands[i-1].end:c.start]), " \t\r\n,;") == "" {
			runs[len(runs)-1] = append(runs[len(runs)-1], c)
			continue
		}
		runs = append(runs, []candidate{c})
	}
	return runs
}

// isAct reports whether a run (not inline) is the act: it begins the
// reply (in schema mode with little after it), ends it after a lead-in,
// or is, in prose mode, the reply's only fenced block after an announced
// action, or its only call after an announced action with only a plan
// after it.
func isAct(text string, run []candidate, before string, strict, onlyRun bool) bool {
	after := stripClosers(text[run[len(run)-1].end:])
	switch {
	case before == "":
		// The reply begins with the call: what follows is prose (or a
		// cut-off second call), kept as text.
		return !strict || len(after) <= 200
	case after == "":
		return leadIn(before, strict)
	case !strict && onlyRun && len(run) == 1 && run[0].fenced && fenceCount(text) == 1 && intentRE().MatchString(lastLine(before)):
		return true
	case onlyRun && intentRE().MatchString(lastLine(before)) && (!strict || len(before) <= 400) && planFollows(after):
		// Announced, and what follows only says what the call will
		// give or what comes next (decide still refuses an example or
		// a refusal); in schema mode after a short lead-in only.
		return true
	}
	return false
}

// planFollows reports whether the text after a call begins by saying what
// the call will give or what the model will do next.
func planFollows(after string) bool {
	first := firstLineOf(after)
	return intentRE().MatchString(first) || planRE().MatchString(first)
}

// inlineRun reports whether a run holds a pseudo-code call written after
// text on its line.
func inlineRun(run []candidate) bool {
	for _, c := range run {
		if c.inline {
			return true
		}
	}
	return false
}

// tokenRuns returns the candidates of the runs that follow first when all
// of them (and first) are framed by special call tokens.
func tokenRuns(first []candidate, rest [][]candidate) []candidate {
	var out []candidate
	for _, run := range append([][]candidate{first}, rest...) {
		for _, c := range run {
			if !c.token {
				return nil
			}
		}
	}
	for _, run := range rest {
		out = append(out, run...)
	}
	return out
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
		return len(before) <= 200 && !strings.HasSuffix(strings.TrimSpace(last), ":") || intentRE().MatchString(last) && len(before) <= 400
	}
	if intentRE().MatchString(last) {
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
func findCandidates(text string, lookup Lookup) []candidate {
	masked := maskQuoted(text)
	var out []candidate
	sc := &scan{lookup: lookup}
	lineStart := true // only blanks since the last newline
	for i := 0; i < len(text); {
		if strings.HasPrefix(text[i:], "</think>") {
			// A call may follow the reasoning on the same line.
			i += len("</think>")
			lineStart = true
			continue
		}
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
	lookup   Lookup
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

// unbalancedAfter reports whether the first bracket near the start of s
// opens a value that is never closed.
func (sc *scan) unbalancedAfter(s string) bool {
	k := strings.IndexAny(s[:min(len(s), 120)], "{[(")
	return k >= 0 && balancedEnd(s[k:]) < 0
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
	{"<|tool_call|>", "<|/tool_call|>"}, {"<function=", "</function>"}, {"<function name=", "</function>"}, {"<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"},
	{"<｜tool▁calls▁begin｜>", "<｜tool▁call▁end｜>"}, {"<|tool_call_begin|>", "<|tool_call_end|>"}, {"<|tool_calls_section_begin|>", "<|tool_call_end|>"},
	{"<json>", "</json>"}, {"<JSON>", "</JSON>"}, {"<xml>", "</xml>"}, {"<|tool_call_start|>", "<|tool_call_end|>"},
	{"<start_function_call>", "<end_function_call>"}, {"<｜DSML｜", "</｜DSML｜invoke>"}, {"<|DSML|", "</|DSML|invoke>"},
}

// wrappers are the open/close tags models wrap a call in; token marks a
// model's special token.
var wrappers = []struct {
	open, close string
	token       bool
}{
	{"<tool_call>", "</tool_call>", false}, {"<tool_calls>", "</tool_calls>", false}, {"<toolcall>", "</toolcall>", false},
	{"<tool>", "</tool>", false}, {"<tools>", "</tools>", false}, {"<response>", "</response>", false}, {"<function_call>", "</function_call>", false},
	{"<functioncall>", "</functioncall>", false}, {"<|tool_call|>", "<|/tool_call|>", true},
	{"<json>", "</json>", false}, {"<JSON>", "</JSON>", false}, {"<xml>", "</xml>", false}, // llama.cpp's fallbacks
	{"<|tool_call_start|>", "<|tool_call_end|>", true}, // LFM2
}

// candidateAt tries every form that can start at text[i:].
func (sc *scan) candidateAt(text string, i int, lineStart bool) (candidate, bool) {
	if sc.givesUp(text, i) {
		return candidate{}, false
	}
	if c, ok, tried := markedAt(text, i, lineStart, sc.lookup); tried {
		if !ok && sc.unbalancedAfter(text[i:]) {
			// A marker whose value runs to the end of the reply: after a
			// few, stop (each costs a scan to the end).
			sc.tooManyUnclosed()
		}
		return c, ok
	}
	if c, ok, tried := wrappedAt(text, i, sc.lookup); tried {
		return c, ok
	}
	if lineStart {
		if c, ok := sc.jsonAt(text, i); ok {
			return c, true
		}
	}
	return sc.identAt(text, i, lineStart)
}

// givesUp: too many candidates ran to the end of the reply unclosed (each
// costs a scan to the end), so no more are tried.
func (sc *scan) givesUp(text string, i int) bool {
	if sc.unclosed > 4 {
		return true
	}
	s := text[i:]
	for _, m := range markerCloses {
		if strings.HasPrefix(s, m[0]) && !sc.closedAfter(text, i, m[1]) && sc.tooManyUnclosed() {
			return true
		}
	}
	return false
}

// wrappedAt reads a call inside one of the wrappers; tried says whether
// one began at i.
func wrappedAt(text string, i int, lookup Lookup) (candidate, bool, bool) {
	for _, w := range wrappers {
		if strings.HasPrefix(text[i:], w.open) {
			c, ok := wrapped(text, i, w.open, w.close, lookup)
			c.token = w.token
			return c, ok, true
		}
	}
	return candidate{}, false, false
}

// jsonAt reads JSON calls (or a pythonic list) at a line start.
func (sc *scan) jsonAt(text string, i int) (candidate, bool) {
	s := text[i:]
	if (s[0] != '{' && s[0] != '[') || sc.unclosed >= 4 {
		return candidate{}, false
	}
	if balancedEnd(s) < 0 {
		sc.unclosed++
	}
	if calls, n := jsonCalls(s); len(calls) > 0 {
		return candidate{start: i, end: i + n, calls: calls}, true
	}
	if s[0] == '[' {
		if calls, n := pythonicCalls(s, sc.lookup); len(calls) > 0 {
			return candidate{start: i, end: i + n, calls: calls}, true
		}
	}
	return candidate{}, false
}

// identAt reads a call that starts with a registered tool's name: a
// pythonic call at a line start or after a space, or a bare GLM call.
func (sc *scan) identAt(text string, i int, lineStart bool) (candidate, bool) {
	s := text[i:]
	inline := !lineStart && i > 0 && text[i-1] == ' '
	if !(lineStart || inline) || !IsIdentStart(s[0]) {
		return candidate{}, false
	}
	name, n := LeadingIdent(s)
	if n < len(s) && s[n] == '(' && lookupName(name, sc.lookup) {
		if balancedEnd(s[n:]) < 0 {
			sc.tooManyUnclosed()
			return candidate{}, false
		}
		if calls, n := pythonicCalls(s, sc.lookup); len(calls) > 0 {
			return candidate{start: i, end: i + n, calls: calls, inline: inline}, true
		}
	}
	if lineStart && n > 0 && lookupName(name, sc.lookup) && strings.HasPrefix(strings.TrimLeft(s[n:], " \t\r\n"), "<arg_key>") && sc.closedAfter(text, i, "</arg_value>") {
		return glmBare(text, i)
	}
	return candidate{}, false
}

// markedAt reads the forms that begin with their family's marker; tried
// says whether one began at i (then no other form is tried there).
func markedAt(text string, i int, lineStart bool, lookup Lookup) (candidate, bool, bool) {
	s := text[i:]
	var c candidate
	var ok bool
	switch {
	case strings.HasPrefix(s, "[TOOL_CALLS]"):
		c, ok = mistralCalls(text, i, lookup)
	case strings.HasPrefix(s, "<function="), strings.HasPrefix(s, "<function name="):
		c, ok = functionTag(text, i)
	case strings.HasPrefix(s, "<|python_tag|>"):
		c, ok = afterMarker(text, i, len("<|python_tag|>"), lookup)
		c.token = true
	case strings.HasPrefix(s, "functools["):
		c, ok = afterMarker(text, i, len("functools"), lookup)
	case strings.HasPrefix(s, "<｜DSML｜"), strings.HasPrefix(s, "<|DSML|"):
		c, ok = dsmlCalls(text, i)
	case strings.HasPrefix(s, "<start_function_call>"):
		c, ok = gemmaCalls(text, i)
	case strings.HasPrefix(s, "[Calling tool:"):
		c, ok = callingTool(text, i)
	case lineStart && strings.HasPrefix(s, "Action:"):
		c, ok = actionBlock(text, i, lookup)
	case lineStart && strings.HasPrefix(s, ">>>"), strings.HasPrefix(s, "<|recipient|>"):
		c, ok = functionaryCalls(text, i)
	case strings.HasPrefix(s, "```"):
		c, ok = fencedCalls(text, i, lookup)
	default:
		x, found := specialTokenSyntaxAt(s)
		if !found {
			return candidate{}, false, false
		}
		c, ok = specialTokenCalls(text, i, x)
	}
	return c, ok, true
}

func IsIdentStart(b byte) bool { return b == '_' || (b|0x20) >= 'a' && (b|0x20) <= 'z' }

// NewCallID returns a unique tool call ID.
func NewCallID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [8]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "call_" + string(b[:])
}
