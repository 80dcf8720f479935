package textcalls

import (
	"encoding/json"
	"strings"
)

// The call formats recovery reads (textcalls.go has the rule that decides
// which of them are acts): each reads the calls of one family at text[i:].

// mistralCalls: [TOOL_CALLS] then a JSON array or object, or the newer
// NAME[ARGS]{...} / NAME{...}; repeated markers make several calls. A
// fence, or a few stray words on the marker's line ("[TOOL_CALLS] json"),
// may come before the list.
func mistralCalls(text string, i int, lookup Lookup) (candidate, bool) {
	pos := i + len("[TOOL_CALLS]")
	c := candidate{start: i, marked: true, token: true}
	for {
		rest := strings.TrimLeft(text[pos:], " \t\r\n")
		pos = len(text) - len(rest)
		name, n := LeadingIdent(rest)
		switch {
		case strings.HasPrefix(rest, "```"):
			f, ok := fencedCalls(text, pos, lookup)
			if !ok {
				break
			}
			c.calls = append(c.calls, f.calls...)
			pos = f.end
		case n > 0 && !lookupName(name, lookup):
			// Stray words before the list, on the marker's line.
			k := strings.IndexAny(rest, "[{")
			if k < 0 || k > 40 || strings.Contains(strings.TrimRight(rest[:k], " \t\r\n"), "\n") {
				break
			}
			if calls, m := jsonCalls(rest[k:]); len(calls) > 0 {
				c.calls = append(c.calls, calls...)
				pos += k + m
			}
		case n > 0:
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
		default:
			if calls, m := jsonCalls(rest); len(calls) > 0 {
				c.calls = append(c.calls, calls...)
				pos += m
			}
		}
		after := strings.TrimLeft(text[pos:], " \t\r\n")
		if pos == len(text)-len(rest) || !strings.HasPrefix(after, "[TOOL_CALLS]") {
			break
		}
		pos = len(text) - len(after) + len("[TOOL_CALLS]")
	}
	c.end = pos
	return c, len(c.calls) > 0
}

// afterMarker decodes JSON or pythonic calls right after a marker.
func afterMarker(text string, i, skip int, lookup Lookup) (candidate, bool) {
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
func wrapped(text string, i int, open, close string, lookup Lookup) (candidate, bool) {
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
	case strings.HasPrefix(body, "<function"):
		// One or more <function=NAME>...</function> in a row.
		pos := 0
		for {
			rest := strings.TrimLeft(body[pos:], " \t\r\n")
			if !strings.HasPrefix(rest, "<function") {
				break
			}
			fc, ok := functionTag(rest, 0)
			if !ok {
				return candidate{}, false
			}
			c.calls = append(c.calls, fc.calls...)
			pos = len(body) - len(rest) + fc.end
		}
		return c, len(c.calls) > 0
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

func lookupName(name string, lookup Lookup) bool {
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

// functionTag: <function=NAME>{json}</function>,
// <function=NAME><parameter=K>V</parameter>...</function> (Qwen3-Coder) or
// <function name="NAME">{json}</function> (llama.cpp's fallback).
func functionTag(text string, i int) (candidate, bool) {
	s := text[i:]
	var name string
	var head int
	switch {
	case strings.HasPrefix(s, "<function="):
		gt := strings.IndexByte(s, '>')
		if gt <= len("<function=") {
			return candidate{}, false
		}
		name, head = strings.TrimSpace(s[len("<function="):gt]), gt+1
	case strings.HasPrefix(s, `<function name="`):
		rest := s[len(`<function name="`):]
		q := strings.IndexByte(rest, '"')
		if q <= 0 || !strings.HasPrefix(strings.TrimLeft(rest[q+1:], " "), ">") {
			return candidate{}, false
		}
		name = rest[:q]
		head = len(s) - len(strings.TrimLeft(rest[q+1:], " ")) + 1
	default:
		return candidate{}, false
	}
	body := s[head:]
	end := len(text)
	if j := strings.Index(body, "</function>"); j >= 0 {
		end = i + head + j + len("</function>")
		body = body[:j]
	}
	c := candidate{start: i, end: end, marked: true}
	tb := strings.TrimSpace(body)
	if strings.HasPrefix(tb, "{") {
		v, _, ok := decodeLenient(tb)
		if !ok {
			c.calls = []rawCall{{name: name, bad: "the arguments are not valid JSON" + escapeHint(tb)}}
			return c, balancedEnd(tb) > 0
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
			c.calls = []rawCall{{name: name, bad: "the parameter " + quoteKey(key) + " has no closing </parameter>"}}
			return c, name != ""
		}
		val := rest[:q]
		rest = rest[q+len("</parameter>"):]
		args[key] = xmlValue(val)
	}
	c.calls = []rawCall{{name: name, args: args}}
	return c, name != ""
}

// quoteKey shows a parameter name the model wrote, bounded.
func quoteKey(k string) string {
	if len(k) > 40 {
		k = k[:40] + "..."
	}
	return `"` + k + `"`
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
	// noSep: a call without arguments may leave out sep (Kimi).
	noSep bool
}

// deepseekSyntaxIn is DeepSeek's format with the given bar and space
// characters: <｜tool▁call▁begin｜>[function<｜tool▁sep｜>]NAME then
// ```json {...} ``` or {...}, then <｜tool▁call▁end｜>. Models also write
// the tokens with ASCII pipes, and with underscores.
func deepseekSyntaxIn(bar, sp string) specialTokenSyntax {
	tok := func(words ...string) string { return "<" + bar + strings.Join(words, sp) + bar + ">" }
	return specialTokenSyntax{section: tok("tool", "calls", "begin"), begin: tok("tool", "call", "begin"), sep: tok("tool", "sep"), end: tok("tool", "call", "end"),
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
}

var (
	deepseekSyntax      = deepseekSyntaxIn("｜", "▁")
	deepseekASCIISyntax = deepseekSyntaxIn("|", "▁")
	deepseekUnderscored = deepseekSyntaxIn("|", "_")
)

// kimiSyntax: <|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>
// {...}<|tool_call_end|>, inside <|tool_calls_section_begin|>.
var kimiSyntax = specialTokenSyntax{section: "<|tool_calls_section_begin|>", begin: "<|tool_call_begin|>", sep: "<|tool_call_argument_begin|>", end: "<|tool_call_end|>",
	split: func(head, body string) (string, string, bool) {
		id := strings.TrimPrefix(strings.TrimSpace(head), "functions.")
		if k := strings.LastIndexByte(id, ':'); k >= 0 {
			id = id[:k]
		}
		return id, body, true
	}, noSep: true}

// specialTokenSyntaxAt finds the special-token family whose opener begins
// s. Kimi and DeepSeek written with underscores share <|tool_call_begin|>:
// the separator that follows tells them apart.
func specialTokenSyntaxAt(s string) (specialTokenSyntax, bool) {
	for _, x := range []specialTokenSyntax{deepseekSyntax, deepseekASCIISyntax, deepseekUnderscored, kimiSyntax} {
		if !strings.HasPrefix(s, x.section) && !strings.HasPrefix(s, x.begin) {
			continue
		}
		if x.begin == kimiSyntax.begin && x.sep == deepseekUnderscored.sep {
			e := strings.Index(s, x.end)
			if k := strings.Index(s, x.sep); k < 0 || e >= 0 && k > e {
				continue // no <|tool_sep|> in the call: Kimi's
			}
		}
		return x, true
	}
	return specialTokenSyntax{}, false
}

// specialTokenCalls reads the calls of syntax x at text[i:].
func specialTokenCalls(text string, i int, x specialTokenSyntax) (candidate, bool) {
	c := candidate{start: i, marked: true, token: true}
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
		if e < 0 {
			break
		}
		var head, body string
		switch {
		case k >= 0 && k < e:
			head, body = rest[:k], rest[k+len(x.sep):e]
		case x.noSep:
			head = rest[:e] // a call without arguments
		default:
			return c, false
		}
		name, args, ok := x.split(head, body)
		if !ok {
			break
		}
		if args = strings.TrimSpace(args); args == "" {
			c.calls = append(c.calls, rawCall{name: name})
		} else if v, _, ok := decodeLenient(args); ok {
			c.calls = append(c.calls, rawCall{name: name, args: v})
		} else {
			c.calls = append(c.calls, rawCall{name: name, bad: "the arguments are not valid JSON" + escapeHint(args)})
		}
		pos = len(text) - len(rest) + e + len(x.end)
	}
	c.end = pos
	return c, len(c.calls) > 0
}

// dsmlCalls: DeepSeek V3.2's markup, with full-width or ASCII bars:
//
//	<｜DSML｜function_calls>
//	<｜DSML｜invoke name="NAME">
//	<｜DSML｜parameter name="K" string="true">V</｜DSML｜parameter>
//	</｜DSML｜invoke>
//	</｜DSML｜function_calls>
//
// string="true" is the raw text; "false" is a JSON value.
func dsmlCalls(text string, i int) (candidate, bool) {
	bar := "｜"
	if strings.HasPrefix(text[i:], "<|DSML|") {
		bar = "|"
	}
	tag := func(name string) string { return "<" + bar + "DSML" + bar + name }
	closeTag := func(name string) string { return "</" + bar + "DSML" + bar + name + ">" }
	c := candidate{start: i, marked: true, token: true}
	pos := i
	if strings.HasPrefix(text[pos:], tag("function_calls>")) {
		pos += len(tag("function_calls>"))
	}
	for {
		rest := strings.TrimLeft(text[pos:], " \t\r\n")
		if !strings.HasPrefix(rest, tag(`invoke name="`)) {
			break
		}
		head := rest[len(tag(`invoke name="`)):]
		q := strings.Index(head, `">`)
		e := strings.Index(head, closeTag("invoke"))
		if q <= 0 || e < q {
			break
		}
		name := head[:q]
		body := head[q+2 : e]
		call := rawCall{name: name}
		args := map[string]any{}
		for {
			b := strings.TrimLeft(body, " \t\r\n")
			if !strings.HasPrefix(b, tag(`parameter name="`)) {
				if strings.TrimSpace(b) != "" {
					call.bad = "text between the parameters is not a parameter"
				}
				break
			}
			b = b[len(tag(`parameter name="`)):]
			kq := strings.IndexByte(b, '"')
			gt := strings.IndexByte(b, '>')
			ce := strings.Index(b, closeTag("parameter"))
			if kq <= 0 || gt < kq || ce < gt {
				call.bad = "a parameter has no closing " + closeTag("parameter")
				break
			}
			key, attrs, val := b[:kq], b[kq+1:gt], b[gt+1:ce]
			if strings.Contains(attrs, `string="false"`) {
				v, n, ok := decodeLenient(val)
				if !ok || strings.TrimSpace(val[n:]) != "" {
					var x any
					if json.Unmarshal([]byte(strings.TrimSpace(val)), &x) != nil {
						call.bad = "the parameter " + quoteKey(key) + ` is marked string="false" but is not a JSON value`
						break
					}
					v = x
				}
				args[key] = v
			} else {
				args[key] = val
			}
			body = b[ce+len(closeTag("parameter")):]
		}
		call.args = args
		c.calls = append(c.calls, call)
		pos = len(text) - len(head) + e + len(closeTag("invoke"))
	}
	if rest := strings.TrimLeft(text[pos:], " \t\r\n"); strings.HasPrefix(rest, closeTag("function_calls")) {
		pos = len(text) - len(rest) + len(closeTag("function_calls"))
	}
	c.end = pos
	return c, len(c.calls) > 0
}

// gemmaCalls: FunctionGemma's
// <start_function_call>call:NAME{k:<escape>text<escape>,n:20}<end_function_call>,
// one or more in a row; <escape> quotes a string, other values are JSON.
func gemmaCalls(text string, i int) (candidate, bool) {
	const open, close, esc = "<start_function_call>", "<end_function_call>", "<escape>"
	c := candidate{start: i, marked: true, token: true}
	pos := i
	for {
		rest := strings.TrimLeft(text[pos:], " \t\r\n")
		if !strings.HasPrefix(rest, open+"call:") {
			break
		}
		body := rest[len(open+"call:"):]
		e := strings.Index(body, close)
		if e < 0 {
			break
		}
		name, n := LeadingIdent(body)
		inner := strings.TrimSpace(body[n:e])
		call := rawCall{name: name}
		args := map[string]any{}
		if !strings.HasPrefix(inner, "{") || !strings.HasSuffix(inner, "}") {
			call.bad = "the arguments are not in {key:value} form"
		} else {
			inner = inner[1 : len(inner)-1]
			for strings.TrimSpace(inner) != "" && call.bad == "" {
				inner = strings.TrimLeft(inner, " \t\r\n,")
				colon := strings.IndexByte(inner, ':')
				if colon <= 0 {
					call.bad = "an argument has no key"
					break
				}
				key := strings.TrimSpace(inner[:colon])
				v := inner[colon+1:]
				if strings.HasPrefix(v, esc) {
					end := strings.Index(v[len(esc):], esc)
					if end < 0 {
						call.bad = "the argument " + quoteKey(key) + " has no closing " + esc
						break
					}
					args[key] = v[len(esc) : len(esc)+end]
					inner = v[len(esc)+end+len(esc):]
					continue
				}
				comma := strings.IndexByte(v, ',')
				if comma < 0 {
					comma = len(v)
				}
				var x any
				if json.Unmarshal([]byte(strings.TrimSpace(v[:comma])), &x) != nil {
					call.bad = "the argument " + quoteKey(key) + " is neither <escape>text<escape> nor a JSON value"
					break
				}
				args[key] = x
				inner = v[comma:]
			}
		}
		call.args = args
		c.calls = append(c.calls, call)
		pos = len(text) - len(body) + e + len(close)
	}
	c.end = pos
	return c, len(c.calls) > 0
}

// callingTool: [Calling tool: NAME({...})], the line some chat front ends
// print for a call, which small models copy.
func callingTool(text string, i int) (candidate, bool) {
	rest := strings.TrimLeft(text[i+len("[Calling tool:"):], " ")
	name, n := LeadingIdent(rest)
	if n == 0 || !strings.HasPrefix(rest[n:], "(") {
		return candidate{}, false
	}
	end := balancedEnd(rest[n:])
	if end < 0 || !strings.HasPrefix(rest[n+end:], "]") {
		return candidate{}, false
	}
	inner := strings.TrimSpace(rest[n+1 : n+end-1])
	call := rawCall{name: name}
	if inner != "" {
		v, m, ok := decodeLenient(inner)
		if !ok || m != len(inner) {
			call.bad = "the arguments are not valid JSON" + escapeHint(inner)
		}
		call.args = v
	}
	return candidate{start: i, end: len(text) - len(rest) + n + end + 1, calls: []rawCall{call}, marked: true}, true
}

// actionBlock: Command-R's "Action: ```json [{"tool_name": ..., "parameters":
// {...}}] ```" at the start of a line.
func actionBlock(text string, i int, lookup Lookup) (candidate, bool) {
	rest := strings.TrimLeft(text[i+len("Action:"):], " \t")
	at := len(text) - len(rest)
	var c candidate
	var ok bool
	if strings.HasPrefix(rest, "```") {
		c, ok = fencedCalls(text, at, lookup)
	} else if calls, n := jsonCalls(rest); len(calls) > 0 {
		c, ok = candidate{end: at + n, calls: calls}, true
	}
	c.start, c.marked, c.fenced = i, true, false
	return c, ok
}

// functionaryCalls: Functionary v3's ">>>NAME\n{...}" (several in a row;
// ">>>all" is text for the user) and v2's "<|recipient|>NAME\n<|content|>{...}".
func functionaryCalls(text string, i int) (candidate, bool) {
	c := candidate{start: i, marked: true}
	pos := i
	for {
		rest := strings.TrimLeft(text[pos:], " \t\r\n")
		var marker string
		switch {
		case strings.HasPrefix(rest, ">>>"):
			marker = ">>>"
		case strings.HasPrefix(rest, "<|recipient|>"):
			marker = "<|recipient|>"
		}
		if marker == "" {
			break
		}
		name, n := LeadingIdent(rest[len(marker):])
		body := strings.TrimLeft(rest[len(marker)+n:], " \t\r\n")
		if marker == "<|recipient|>" {
			if !strings.HasPrefix(body, "<|content|>") {
				break
			}
			body = strings.TrimLeft(body[len("<|content|>"):], " \t\r\n")
		}
		if n == 0 || name == "all" || body == "" || body[0] != '{' {
			break
		}
		v, m, ok := decodeLenient(body)
		call := rawCall{name: name, args: v}
		if !ok {
			if balancedEnd(body) < 0 {
				break
			}
			m = balancedEnd(body)
			call = rawCall{name: name, bad: "the arguments are not valid JSON" + escapeHint(body[:m])}
		}
		c.calls = append(c.calls, call)
		pos = len(text) - len(body) + m
	}
	c.end = pos
	return c, len(c.calls) > 0
}

// glmBare: GLM's NAME then <arg_key>/<arg_value> pairs without the
// <tool_call> wrapper.
func glmBare(text string, i int) (candidate, bool) {
	end := i
	rest := text[i:]
	for {
		_, kn, ok := between(rest, "<arg_key>", "</arg_key>")
		if !ok || strings.TrimSpace(rest[:strings.Index(rest, "<arg_key>")]) != "" && end != i {
			break
		}
		_, vn, ok := between(rest[kn:], "<arg_value>", "</arg_value>")
		if !ok || strings.TrimSpace(rest[kn:kn+strings.Index(rest[kn:], "<arg_value>")]) != "" {
			break
		}
		end += kn + vn
		rest = text[end:]
	}
	if end == i {
		return candidate{}, false
	}
	calls := glmCall(text[i:end])
	return candidate{start: i, end: end, calls: calls, marked: true}, len(calls) > 0
}

// fencedCalls: a ``` block whose whole content is calls (JSON, pythonic,
// XML-ish or a wrapper).
func fencedCalls(text string, i int, lookup Lookup) (candidate, bool) {
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
