// Package mcpform is elicitation: an MCP server asks the user for input in the middle of a
// call (a form of flat fields, or a URL to visit). In the REPL you are
// asked the server's question, field by field, with each field's type,
// description and default; the answer is checked against the field's type
// (and the SDK checks it against the schema again), "decline" declines
// (said before the first field), Ctrl-C cancels. Headless runs answer no
// questions: a request is declined at once, with a line that says so. A
// declined request is an answer, not a failure: the call goes on, and the
// server is never restarted for it.
//
// Answer asks; Orders keeps the order each form's fields were written in
// (JSON objects have none once decoded), read from the raw messages by
// OrderedTransport (stdio) and OrderedBodies (HTTP).
package mcpform

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// UI is how a form speaks to the person at the terminal.
type UI interface {
	Say(tone termtext.Tone, line string)
	Ask(question string) (string, error)
}

// Answer is the person's answer to server's request: declined at once
// where nobody is asked (headless, said in a line), a URL to visit and
// come back from, or a form asked field by field in the order the server
// wrote them (order: Orders.Of).
func Answer(ui UI, interactive bool, server string, req *mcp.ElicitRequest, order []string) (*mcp.ElicitResult, error) {
	p := req.Params
	name := termtext.Sanitize(server)
	if !interactive {
		ui.Say(termtext.Warn, fmt.Sprintf("MCP server %s asked for input (%s); declined: a headless run answers no questions", name, termtext.Sanitize(termtext.OneLine(termtext.Clip(p.Message, 120)))))
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	ui.Say(termtext.Prompt, fmt.Sprintf("? MCP server %s asks: %s", name, termtext.Sanitize(p.Message)))
	if p.Mode == "url" || p.URL != "" {
		ui.Say(termtext.Plain, "  "+termtext.Sanitize(p.URL))
		ans, err := ui.Ask("Open it, then answer: done (accept), no (decline): ")
		switch {
		case err != nil:
			return &mcp.ElicitResult{Action: "cancel"}, nil
		case strings.EqualFold(strings.TrimSpace(ans), "done"), termtext.IsYes(ans):
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return askForm(ui, p.RequestedSchema, order)
}

// elicitField is one field of a form's schema, as the specification's
// elicitation schema has them: a string (with a format, length limits), a
// number or integer (with limits), a boolean, a single choice (enum, with
// titles from oneOf or the older enumNames) or a multi-select (an array of
// choices, with limits on how many).
type elicitField struct {
	name, typ, desc, format string
	def                     any
	choices                 []elicitChoice
	multi                   bool
	min, max                *float64 // minimum and maximum, or for a string or a multi-select its length or count
	required                bool
}

// elicitChoice is one value a choice field takes, and its title.
type elicitChoice struct {
	value, title string
}

// formFields reads a form's flat schema, in the server's order where it
// was seen on the wire (order), else required fields first.
func formFields(schema any, order []string) []elicitField {
	sm, _ := ToMap(schema)
	props, _ := sm["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := sm["required"].([]any); ok {
		for _, v := range r {
			if s, ok := v.(string); ok {
				req[s] = true
			}
		}
	}
	var out []elicitField
	for n, v := range props {
		p, _ := v.(map[string]any)
		out = append(out, readField(n, p, req[n]))
	}
	rank := func(n string) int {
		if i := slices.Index(order, n); i >= 0 {
			return i
		}
		return len(order)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank(out[i].name), rank(out[j].name); ri != rj {
			return ri < rj
		}
		return out[i].required && !out[j].required || out[i].required == out[j].required && out[i].name < out[j].name
	})
	return out
}

// readField reads one property of a form's schema.
func readField(name string, p map[string]any, required bool) elicitField {
	f := elicitField{name: name, required: required, def: p["default"]}
	f.typ, _ = p["type"].(string)
	f.format, _ = p["format"].(string)
	f.desc, _ = p["description"].(string)
	if t, ok := p["title"].(string); ok && f.desc == "" {
		f.desc = t
	}
	num := func(k string) *float64 {
		if x, ok := p[k].(float64); ok {
			return &x
		}
		return nil
	}
	f.min, f.max = num("minimum"), num("maximum")
	if f.typ == "string" {
		f.min, f.max = num("minLength"), num("maxLength")
	}
	f.choices = choicesOf(p)
	if items, ok := p["items"].(map[string]any); ok && f.typ == "array" {
		f.multi, f.choices = true, choicesOf(items)
		f.min, f.max = num("minItems"), num("maxItems")
	}
	return f
}

// choicesOf reads a schema's choices: enum (titled by enumNames), or
// oneOf / anyOf of {const, title}.
func choicesOf(p map[string]any) []elicitChoice {
	var out []elicitChoice
	if e, ok := p["enum"].([]any); ok {
		names, _ := p["enumNames"].([]any)
		for i, x := range e {
			c := elicitChoice{value: fmt.Sprint(x)}
			if i < len(names) {
				c.title = fmt.Sprint(names[i])
			}
			out = append(out, c)
		}
		return out
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		alts, _ := p[k].([]any)
		for _, a := range alts {
			m, _ := a.(map[string]any)
			if v, ok := m["const"]; ok {
				t, _ := m["title"].(string)
				out = append(out, elicitChoice{value: fmt.Sprint(v), title: t})
			}
		}
	}
	return out
}

// askForm asks each field in turn, in the server's order: "decline"
// declines (said before the first field), Ctrl-C cancels, a value that
// does not fit the field is said and asked again, and Enter takes the
// default (or leaves out a field that is not required).
func askForm(ui UI, schema any, order []string) (*mcp.ElicitResult, error) {
	content := map[string]any{}
	ui.Say(termtext.Note, "  (type decline to refuse the form, Ctrl-C to cancel it)")
	for _, f := range formFields(schema, order) {
		for _, l := range f.choiceLines() {
			ui.Say(termtext.Plain, l)
		}
		for {
			ans, err := ui.Ask(f.prompt())
			if err != nil {
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			ans = strings.TrimSpace(ans)
			if strings.EqualFold(ans, "decline") {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			if ans == "" {
				if f.def != nil {
					content[f.name] = f.def // the default the prompt named is sent
				}
				if f.def != nil || !f.required {
					break
				}
				ui.Say(termtext.Plain, fmt.Sprintf("  %s is required (type decline to refuse the form)", f.name))
				continue
			}
			v, err := f.value(ans)
			if err != nil {
				ui.Say(termtext.Plain, fmt.Sprintf("  %v", err))
				continue
			}
			content[f.name] = v
			break
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// choiceLines lists a choice field's choices, numbered, with their titles.
func (f elicitField) choiceLines() []string {
	var out []string
	for i, c := range f.choices {
		l := fmt.Sprintf("    %d. %s", i+1, termtext.Sanitize(c.value))
		if c.title != "" && c.title != c.value {
			l = fmt.Sprintf("    %d. %s (%s)", i+1, termtext.Sanitize(c.title), termtext.Sanitize(c.value))
		}
		out = append(out, l)
	}
	return out
}

func (f elicitField) prompt() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s", f.name)
	var about []string
	switch {
	case f.multi:
		about = append(about, "choose any: numbers, titles or values, separated by commas")
	case len(f.choices) > 0:
		about = append(about, "choose one: its number, title or value")
	case f.typ != "":
		about = append(about, f.typ+map[string]string{"": "", "email": " (an email address)", "uri": " (a URL)", "date": " (YYYY-MM-DD)", "date-time": " (YYYY-MM-DDTHH:MM:SSZ)"}[f.format])
	}
	if l := f.limits(); l != "" {
		about = append(about, l)
	}
	if f.def != nil {
		about = append(about, fmt.Sprintf("Enter for %v", f.def))
	}
	if f.required {
		about = append(about, "required")
	}
	if len(about) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(about, "; "))
	}
	if f.desc != "" {
		fmt.Fprintf(&b, " — %s", termtext.Sanitize(f.desc))
	}
	b.WriteString(": ")
	return b.String()
}

// limits says a field's limits in words ("" when it has none).
func (f elicitField) limits() string {
	what := map[bool]string{true: "choices", false: "characters"}[f.multi]
	g := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch {
	case f.typ != "string" && !f.multi && f.min != nil && f.max != nil:
		return "from " + g(*f.min) + " to " + g(*f.max)
	case f.typ != "string" && !f.multi && f.min != nil:
		return "at least " + g(*f.min)
	case f.typ != "string" && !f.multi && f.max != nil:
		return "at most " + g(*f.max)
	case f.min != nil && f.max != nil:
		return g(*f.min) + " to " + g(*f.max) + " " + what
	case f.min != nil:
		return "at least " + g(*f.min) + " " + what
	case f.max != nil:
		return "at most " + g(*f.max) + " " + what
	}
	return ""
}

// value reads an answer as the field's type, within its limits.
func (f elicitField) value(s string) (any, error) {
	switch {
	case f.multi:
		return f.multiValue(s)
	case len(f.choices) > 0:
		c, ok := f.choose(s)
		if !ok {
			return nil, fmt.Errorf("%s: one of the choices above (its number, title or value)", f.name)
		}
		return f.typed(c)
	}
	return f.typed(s)
}

// choose finds the choice an answer names: its number, title or value.
func (f elicitField) choose(s string) (string, bool) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.choices) {
		return f.choices[n-1].value, true
	}
	for _, c := range f.choices {
		if s == c.value || strings.EqualFold(s, c.title) {
			return c.value, true
		}
	}
	for _, c := range f.choices {
		if strings.EqualFold(s, c.value) {
			return c.value, true
		}
	}
	return "", false
}

// multiValue reads a multi-select's answer: choices separated by commas.
func (f elicitField) multiValue(s string) (any, error) {
	var out []any
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		c, ok := f.choose(part)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not one of the choices above", f.name, part)
		}
		if !slices.Contains(out, any(c)) {
			out = append(out, c)
		}
	}
	if n := float64(len(out)); f.min != nil && n < *f.min || f.max != nil && n > *f.max {
		return nil, fmt.Errorf("%s: %s", f.name, f.limits())
	}
	return out, nil
}

// typed reads s as the field's primitive type, within its limits.
func (f elicitField) typed(s string) (any, error) {
	bad := func(what string) error { return fmt.Errorf("%s: %s", f.name, what) }
	switch f.typ {
	case "integer", "number":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || f.typ == "integer" && x != float64(int64(x)) {
			return nil, bad(map[string]string{"integer": "a whole number", "number": "a number"}[f.typ])
		}
		if f.min != nil && x < *f.min || f.max != nil && x > *f.max {
			return nil, bad(f.limits())
		}
		if f.typ == "integer" {
			return int64(x), nil
		}
		return x, nil
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, bad("yes or no")
	}
	n := float64(len([]rune(s)))
	if f.min != nil && n < *f.min || f.max != nil && n > *f.max {
		return nil, bad(f.limits())
	}
	if err := checkFormat(f.format, s); err != nil {
		return nil, bad(err.Error())
	}
	return s, nil
}

// checkFormat checks a string against the specification's formats.
func checkFormat(format, s string) error {
	switch format {
	case "email":
		if at := strings.Index(s, "@"); at < 1 || at == len(s)-1 || strings.ContainsAny(s, " \t") {
			return fmt.Errorf("an email address")
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Errorf("a URL (with its scheme: https://...)")
		}
	case "date":
		if _, err := time.Parse("2006-01-02", s); err != nil {
			return fmt.Errorf("a date, YYYY-MM-DD")
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Errorf("a date and time, YYYY-MM-DDTHH:MM:SSZ")
		}
	}
	return nil
}

// ToMap is a schema (a map, or JSON of one) as a map.
func ToMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m) == nil
}
