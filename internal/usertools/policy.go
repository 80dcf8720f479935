package usertools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// A tool's own policy and its examples: env: (variables its command gets),
// network: (the hosts it may reach: this tool's, not every command's) and
// examples: (calls checked against its parameters at load).
//
// env: gives a tool nothing its command could not take itself: the
// variables are set for the command inside the sandbox, as `env NAME=value
// PROGRAM` at the head of its argv would set them; no launcher, no first
// stage and nothing of Harvey's reads them. So any name is one, and only a
// value a parameter would fill is refused (parameters go on the command
// line, where BuildArgv checks them).

var (
	envNameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	hostRE    = lazyre.New(`^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?$`)
)

func parseEnv(v *yaml.Node, line, offset int, bad func(int, string, ...any)) []string {
	if v.Kind != yaml.MappingNode {
		bad(line, "env must be a mapping: NAME: value")
		return nil
	}
	var out []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		l := k.Line + offset
		switch {
		case !envNameRE().MatchString(k.Value):
			bad(l, "env: %q is not a variable name", k.Value)
		case val.Kind != yaml.ScalarNode || strings.ContainsRune(val.Value, 0):
			bad(l, "env: %s must be a plain value", k.Value)
		case strings.Contains(val.Value, "{{"):
			bad(l, "env: %s: a parameter cannot fill a variable; pass it on the command line", k.Value)
		default:
			out = append(out, k.Value+"="+val.Value)
		}
	}
	return out
}

func parseHosts(v *yaml.Node, line, offset int, bad func(int, string, ...any)) []string {
	if v.Kind != yaml.SequenceNode {
		bad(line, "network must be a list of hosts: [api.example.com, \"*.example.org\", localhost:5432]")
		return nil
	}
	var out []string
	for _, h := range v.Content {
		host := strings.ToLower(strings.TrimSpace(h.Value))
		if h.Kind != yaml.ScalarNode || !hostRE().MatchString(host) || host == "*" {
			bad(h.Line+offset, "network: %q is not a host (api.example.com, *.example.org, host:port)", h.Value)
			continue
		}
		out = append(out, host)
	}
	return out
}

// parseExamples reads examples: (a list of argument mappings) and checks
// each against t's parameters: every name declared, every required one
// given, each value of its type and within its enum.
func parseExamples(t *Tool, v *yaml.Node, offset int, bad func(int, string, ...any)) []map[string]any {
	if v.Kind != yaml.SequenceNode {
		bad(v.Line+offset, "examples must be a list of calls: - {name: value, ...}")
		return nil
	}
	var out []map[string]any
	for _, ex := range v.Content {
		var args map[string]any
		if ex.Kind != yaml.MappingNode || ex.Decode(&args) != nil {
			bad(ex.Line+offset, "an example is a mapping of arguments: {name: value, ...}")
			continue
		}
		if args == nil {
			args = map[string]any{}
		}
		if err := t.checkExample(args); err != nil {
			bad(ex.Line+offset, "example %s: %v", compact(args), err)
			continue
		}
		out = append(out, args)
	}
	return out
}

func (t *Tool) checkExample(args map[string]any) error {
	declared := map[string]Param{}
	for _, p := range t.Params {
		declared[p.Name] = p
		if _, ok := args[p.Name]; p.Required && !ok {
			return fmt.Errorf("the required %q is missing", p.Name)
		}
	}
	for name, val := range args {
		p, ok := declared[name]
		if !ok {
			return fmt.Errorf("%q is not a parameter", name)
		}
		if !typeFits(p.Type, val) {
			return fmt.Errorf("%q is not of type %s", name, p.Type)
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, fmt.Sprint(val)) {
			return fmt.Errorf("%q is not one of %s", name, strings.Join(p.Enum, ", "))
		}
	}
	return nil
}

// typeFits reports whether a YAML-decoded value is of a parameter type.
func typeFits(typ string, v any) bool {
	switch x := v.(type) {
	case string:
		return typ == "string" || typ == "path"
	case bool:
		return typ == "boolean"
	case int:
		return typ == "integer" || typ == "number"
	case float64:
		return typ == "number" || typ == "integer" && x == float64(int64(x))
	case []any:
		return typ == "array"
	case map[string]any:
		return typ == "object"
	}
	return false
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ExamplesText is the examples as the model reads them, after the
// description ("" when there are none): at most three, each one line.
func (t *Tool) ExamplesText() string {
	if len(t.Examples) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(ExamplesMark)
	for _, ex := range t.Examples[:min(3, len(t.Examples))] {
		b.WriteString("\n" + compact(ex))
	}
	return b.String()
}

// ExamplesMark starts the examples in a description: a small window's
// tool list cuts the description there.
const ExamplesMark = "\nExamples:"

// ParseInline reads a tool written inline in your own config
// (tools.define.NAME): the keys of a tool file's front matter, and
// description: for its body. Its problems are named by where it is
// written, label (your config's file), and the tool's name.
func ParseInline(label, name string, n *yaml.Node, reserved func(string) bool) (*Tool, []Problem) {
	file := label + ": tools.define." + name
	if n.Kind != yaml.MappingNode {
		return nil, []Problem{{File: file, Line: n.Line, Msg: "a tool is a mapping: command:, parameters:, description:, ..."}}
	}
	front := &yaml.Node{Kind: yaml.MappingNode}
	desc := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "description" {
			desc = n.Content[i+1].Value
			continue
		}
		front.Content = append(front.Content, n.Content[i], n.Content[i+1])
	}
	data, err := yaml.Marshal(front)
	if err != nil {
		return nil, []Problem{{File: file, Line: n.Line, Msg: err.Error()}}
	}
	t, probs := Parse(name+".md", []byte("---\n"+string(data)+"---\n"+desc+"\n"), reserved)
	for i := range probs {
		probs[i].File, probs[i].Line = file, n.Line // the lines are the tool's own, rewritten
	}
	if t != nil {
		t.File = file
	}
	return t, probs
}

// LoadInline reads every tool of define (tools.define), in name order.
func LoadInline(label string, define map[string]yaml.Node, reserved func(string) bool) ([]*Tool, []Problem) {
	var tools []*Tool
	var problems []Problem
	for _, name := range slices.Sorted(maps.Keys(define)) {
		n := define[name]
		t, probs := ParseInline(label, name, &n, reserved)
		if t != nil {
			tools = append(tools, t)
		}
		problems = append(problems, probs...)
	}
	return tools, problems
}
