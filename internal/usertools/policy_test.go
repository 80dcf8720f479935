package usertools

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// A tool's own env:, network: and examples: (issue 77): read and checked at
// load, each problem at its line; examples checked against the parameters;
// an object parameter passed as its JSON; the confirmation says what the
// tool may reach and sets.
func TestToolPolicyAndExamples(t *testing.T) {
	text := "---\nparameters:\n  query: {type: object, required: true}\n  limit: {type: integer}\n  mode: {type: string, enum: [fast, full]}\n" +
		"command: [curl, -s, --json, \"{{query}}\", \"https://api.example.com/search\"]\n" +
		"env: {API_REGION: eu, LANG: C}\nnetwork: [api.example.com, \"*.cdn.example.org\", localhost:5432]\n" +
		"examples:\n  - {query: {text: invoices, year: 2024}, limit: 5}\n  - {query: {}, mode: fast}\n---\nSearch the API.\n"
	tool, probs := Parse("agents/tools/api_search.md", []byte(text), builtinName)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if strings.Join(tool.Env, " ") != "API_REGION=eu LANG=C" || strings.Join(tool.Hosts, " ") != "api.example.com *.cdn.example.org localhost:5432" || len(tool.Examples) != 2 {
		t.Fatalf("%+v", tool)
	}
	ex := tool.ExamplesText()
	if !strings.HasPrefix(ex, ExamplesMark) || !strings.Contains(ex, `{"limit":5,"query":{"text":"invoices","year":2024}}`) {
		t.Errorf("examples as the model reads them: %q", ex)
	}
	if s := mustJSON(t, tool.Schema()); !strings.Contains(s, `"query":{"type":"object"}`) {
		t.Errorf("schema: %s", s)
	}
	argv, err := tool.BuildArgv(map[string]any{"query": map[string]any{"text": "a b", "n": 1}})
	if err != nil || argv[3] != `{"n":1,"text":"a b"}` {
		t.Errorf("an object as one argument: %q %v", argv, err)
	}
	if c := tool.Confirmation(); !strings.Contains(c, "may reach api.example.com, *.cdn.example.org, localhost:5432") || !strings.Contains(c, "sets API_REGION=eu LANG=C") {
		t.Errorf("the confirmation: %s", c)
	}

	for _, c := range []struct{ text, want string }{
		{"env: {\"A-B\": x}", `6: env: "A-B" is not a variable name`},
		{"env: {TOKEN: \"{{q}}\"}", "6: env: TOKEN: a parameter cannot fill a variable"},
		{"env: [A=1]", "6: env must be a mapping"},
		{"network: api.example.com", "6: network must be a list"},
		{"network: [\"*\"]", `6: network: "*" is not a host`},
		{"network: [\"http://x.com/a\"]", `6: network: "http://x.com/a" is not a host`},
		{"examples:\n  - {q: 1}", `7: example {"q":1}: "q" is not of type string`},
		{"examples:\n  - {n: 2}", `7: example {"n":2}: the required "q" is missing`},
		{"examples:\n  - {q: a, x: 1}", `7: example {"q":"a","x":1}: "x" is not a parameter`},
		{"examples:\n  - {q: a, n: 1.5}", `7: example {"n":1.5,"q":"a"}: "n" is not of type integer`},
		{"examples: {q: a}", "6: examples must be a list"},
	} {
		file := "---\nparameters:\n  q: {type: string, required: true}\n  n: {type: integer}\ncommand: [echo, \"{{q}}\"]\n" + c.text + "\n---\nx\n"
		if tool, probs := Parse("t.md", []byte(file), builtinName); tool != nil || len(probs) == 0 || !strings.Contains(probs[0].Error(), "t.md:"+c.want) {
			t.Errorf("%q: %v, want %q", c.text, probs, c.want)
		}
	}
}

// A tool written inline in your config (tools.define) is read as a tool
// file is: its description from description:, the same checks, its
// problems named by where it is written.
func TestLoadInline(t *testing.T) {
	var cfg struct {
		Define map[string]yaml.Node `yaml:"define"`
	}
	src := "define:\n  hello:\n    description: Say hello.\n    parameters: {who: {type: string, required: true}}\n    command: [echo, \"{{who}}\"]\n    effect: read\n" +
		"  broken:\n    command: [sh, -c, \"echo {{x}}\"]\n  read_file:\n    command: [cat]\n"
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	tools, probs := LoadInline("your config", cfg.Define, builtinName)
	if len(tools) != 1 || tools[0].Name != "hello" || tools[0].Description != "Say hello." || tools[0].Effect != Read || tools[0].File != "your config: tools.define.hello" {
		t.Fatalf("%+v", tools)
	}
	joined := ""
	for _, p := range probs {
		joined += p.Error() + "\n"
	}
	if !strings.Contains(joined, "your config: tools.define.broken:") || !strings.Contains(joined, "{{x}}, which is not a declared parameter") || !strings.Contains(joined, `"read_file" clashes with a built-in tool`) {
		t.Errorf("problems:\n%s", joined)
	}
}
