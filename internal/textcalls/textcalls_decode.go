package textcalls

import (
	"encoding/json"
	"strings"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// Decoding the arguments of printed calls: lenient where servers are,
// never unfaithful (a value that cannot be read as written is not read).

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
			if bad, m := unreadableCall(rest); bad.name != "" {
				calls = append(calls, bad)
				pos = len(s) - len(rest) + m
			}
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
		name, nameKey := "", ""
		for _, k := range nameKeys {
			if s, ok := x[k].(string); ok && s != "" {
				name, nameKey = s, k
				break
			}
		}
		if name == "" {
			return nil
		}
		for _, k := range argKeys {
			if a, ok := x[k]; ok && a != nil {
				return []rawCall{{name: name, args: a}}
			}
		}
		// No arguments key: the other keys may be the arguments
		// ({"tool": "read_file", "path": "a.go"}); validation checks that
		// each is one of the tool's parameters.
		flat := map[string]any{}
		for k, a := range x {
			if k != nameKey && k != "type" && k != "id" {
				flat[k] = a
			}
		}
		if len(flat) == 0 {
			return []rawCall{{name: name}}
		}
		return []rawCall{{name: name, args: flat, flat: true}}
	}
	return nil
}

// nameKeys and argKeys are the keys models put a call's name and
// arguments under (OpenAI, Llama, Command-R, LangChain agents).
var (
	nameKeys = []string{"name", "tool", "tool_name", "function", "action"}
	argKeys  = []string{"arguments", "parameters", "args", "input", "tool_input", "action_input"}
)

// nameRE finds the name of a call in JSON that does not decode.
var nameRE = lazyre.New(`^\s*[\[{]\s*\{?\s*"(?:name|tool|tool_name)"\s*:\s*"([A-Za-z_][A-Za-z0-9_.-]*)"`)

// unreadableCall: a complete, bracketed call whose JSON does not decode
// (an invalid escape, a stray quote): named, so the model can be told,
// but never run.
func unreadableCall(s string) (rawCall, int) {
	end := balancedEnd(s)
	if end < 0 {
		return rawCall{}, 0
	}
	m := nameRE().FindStringSubmatch(s[:end])
	if m == nil {
		return rawCall{}, 0
	}
	var x any
	err := json.Unmarshal([]byte(s[:end]), &x)
	why := "the arguments are not valid JSON"
	if err != nil {
		why += " (" + err.Error() + ")"
	}
	return rawCall{name: m[1], bad: why + escapeHint(s[:end])}, end
}

// escapeHint explains the one mistake that makes most printed arguments
// unreadable: a backslash that is not an escape.
func escapeHint(s string) string {
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if !strings.ContainsRune(`"\\/bfnrtu'`, rune(s[i+1])) {
			return `; write each backslash as \\ (C:\\Users\\me, not C:\Users\me)`
		}
		i++
	}
	return ""
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
	return i < len(s) && (IsIdentStart(s[i]) || s[i] >= '0' && s[i] <= '9')
}

func LeadingIdent(s string) (string, int) {
	n := 0
	for n < len(s) && (IsIdentStart(s[n]) || n > 0 && (s[n] >= '0' && s[n] <= '9' || s[n] == '-' || s[n] == '.')) {
		n++
	}
	return s[:n], n
}

// pythonicCalls: [name(k="v", n=1), other()] or name(k="v") for a
// registered tool name (Llama 3.2's documented form).
func pythonicCalls(s string, lookup Lookup) ([]rawCall, int) {
	pos := 0
	list := strings.HasPrefix(s, "[")
	if list {
		pos = 1
	}
	var calls []rawCall
	for {
		rest := strings.TrimLeft(s[pos:], " \t\r\n,")
		name, n := LeadingIdent(rest)
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
		key, n := LeadingIdent(rest)
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
			// Pseudo-code writes a bare word for a string (path=a.go).
			word := strings.TrimSpace(rest[:end])
			if word == "" || strings.ContainsAny(word, " \t\r\n\"'`()[]{}\\") {
				return nil, false
			}
			v = word
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
