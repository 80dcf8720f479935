package harvey

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elicitation: an MCP server asks the user for input in the middle of a
// call (a form of flat fields, or a URL to visit). In the REPL you are
// asked the server's question, field by field, with each field's type,
// description and default; the answer is checked against the field's type
// (and the SDK checks it against the schema again), and "decline" or an
// empty first answer declines, Ctrl-C cancels. Headless runs answer no
// questions: a request is declined at once, with a line that says so. A
// declined request is an answer, not a failure: the call goes on, and the
// server is never restarted for it.

// elicit is the client's ElicitationHandler for server s.
func (m *mcpManager) elicit(s *mcpServer) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		p := req.Params
		name := sanitizeForTerminal(s.name)
		if !m.term.isInteractive() {
			m.term.logf("%s", m.term.colorize("33", fmt.Sprintf("MCP server %s asked for input (%s); declined: a headless run answers no questions", name, sanitizeForTerminal(oneLine(clip(p.Message, 120))))))
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		m.term.logf("%s", m.term.colorize("36", fmt.Sprintf("? MCP server %s asks: %s", name, sanitizeForTerminal(p.Message))))
		if p.Mode == "url" || p.URL != "" {
			m.term.logf("  %s", sanitizeForTerminal(p.URL))
			ans, err := m.term.In.Ask("Open it, then answer: done (accept), no (decline): ")
			switch {
			case err != nil:
				return &mcp.ElicitResult{Action: "cancel"}, nil
			case strings.EqualFold(strings.TrimSpace(ans), "done"), strings.EqualFold(strings.TrimSpace(ans), "y"):
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return m.askForm(p.RequestedSchema)
	}
}

// elicitField is one field of a form's schema.
type elicitField struct {
	name, typ, desc string
	def             any
	enum            []string
	required        bool
}

// formFields reads a form's flat schema (properties of primitive types).
func formFields(schema any) []elicitField {
	sm, _ := toMap(schema)
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
		f := elicitField{name: n, required: req[n], def: p["default"]}
		f.typ, _ = p["type"].(string)
		f.desc, _ = p["description"].(string)
		if t, ok := p["title"].(string); ok && f.desc == "" {
			f.desc = t
		}
		if e, ok := p["enum"].([]any); ok {
			for _, x := range e {
				f.enum = append(f.enum, fmt.Sprint(x))
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].required && !out[j].required || out[i].required == out[j].required && out[i].name < out[j].name
	})
	return out
}

// askForm asks each field in turn; "decline" (or nothing, at the first
// field) declines, Ctrl-C cancels, a value of the wrong type is asked again.
func (m *mcpManager) askForm(schema any) (*mcp.ElicitResult, error) {
	content := map[string]any{}
	for i, f := range formFields(schema) {
		for {
			ans, err := m.term.In.Ask(f.prompt())
			if err != nil {
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			ans = strings.TrimSpace(ans)
			if ans == "decline" || ans == "" && i == 0 && f.def == nil {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			if ans == "" {
				if f.def != nil || !f.required {
					break
				}
				m.term.logf("  %s is required (decline to refuse)", f.name)
				continue
			}
			v, err := f.value(ans)
			if err != nil {
				m.term.logf("  %v", err)
				continue
			}
			content[f.name] = v
			break
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

func (f elicitField) prompt() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s", f.name)
	var about []string
	if f.typ != "" {
		about = append(about, f.typ)
	}
	if len(f.enum) > 0 {
		about = append(about, "one of "+strings.Join(f.enum, ", "))
	}
	if f.def != nil {
		about = append(about, fmt.Sprintf("default %v", f.def))
	}
	if f.required {
		about = append(about, "required")
	}
	if len(about) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(about, "; "))
	}
	if f.desc != "" {
		fmt.Fprintf(&b, " — %s", sanitizeForTerminal(f.desc))
	}
	b.WriteString(": ")
	return b.String()
}

// value reads an answer as the field's type.
func (f elicitField) value(s string) (any, error) {
	if len(f.enum) > 0 && !slices.Contains(f.enum, s) {
		return nil, fmt.Errorf("%s: one of %s", f.name, strings.Join(f.enum, ", "))
	}
	switch f.typ {
	case "integer":
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%s: a whole number", f.name)
		}
		return n, nil
	case "number":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: a number", f.name)
		}
		return x, nil
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%s: yes or no", f.name)
	}
	return s, nil
}

// toMap is a schema (a map, or JSON of one) as a map.
func toMap(v any) (map[string]any, bool) {
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
