// Text-call recovery against the schemas of Harvey's built-in tools: the
// corpus of printed calls (formats from inference servers' parser tests,
// model cards and bug reports), act against quote by the evidence, the
// families, and the notes for calls that cannot be read faithfully.
package textcalls

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	anyllm "github.com/mozilla-ai/any-llm-go"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// builtinLookup is the schema lookup of Harvey's built-in tools, as its
// registry has them (testdata/builtin_tools.json, which the root package's
// TestTextcallsFixtureIsHarveysTools keeps equal to the registry).
func builtinLookup() Lookup {
	b, err := os.ReadFile("testdata/builtin_tools.json")
	if err != nil {
		panic(err)
	}
	var schemas map[string]map[string]any
	if err := json.Unmarshal(b, &schemas); err != nil {
		panic(err)
	}
	return func(name string) (map[string]any, bool) {
		s, ok := schemas[name]
		return s, ok
	}
}

// recoverCalls is Recover's calls and prose when the reply acts
// (an undecided reply's calls are not run: none).
func recoverCalls(text string, lookup Lookup, strict bool) ([]anyllm.ToolCall, string) {
	r := Recover(text, lookup, strict)
	if r.Decision != Act {
		return nil, text
	}
	return r.Calls, r.Prose
}

// recoveryCase is one reply from the corpus: the calls it makes (name and
// compact JSON arguments), or none; src names where the format comes from.
type recoveryCase struct {
	src, text string
	want      []string // "name {args}"
	strict    bool     // schema mode
	ask       bool     // the evidence does not decide: the model is asked (want: the calls it holds)
}

func runRecoveryCases(t *testing.T, cases []recoveryCase) {
	t.Helper()
	lookup := builtinLookup()
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			calls, prose := recoverCalls(c.text, lookup, c.strict)
			if r := Recover(c.text, lookup, c.strict); (r.Decision == Ask) != c.ask {
				t.Fatalf("decision %s (%s), want ask: %v", r.Decision, r.Rule, c.ask)
			} else if c.ask {
				calls, prose = r.Calls, r.Prose
			}
			var got []string
			for _, tc := range calls {
				got = append(got, tc.Function.Name+" "+tc.Function.Arguments)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("text %q\ngot  %q\nwant %q (prose %q)", c.text, got, c.want, prose)
			}
			if len(c.want) == 0 && prose != c.text {
				t.Fatalf("no call, but the text changed: %q", prose)
			}
		})
	}
}

// callIDRE is what providers accept as a call's ID.
var callIDRE = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`)

const listAll = `list_files {}`

const readA = `read_file {"path":"a.go"}`

// The corpus: formats seen in inference-server parser tests (Ollama
// 0.15.4 tools/ and model/parsers/, llama.cpp, vLLM), model cards and
// chat templates, and bug reports quoting raw output.
func TestRecoveryCorpus(t *testing.T) { runRecoveryCases(t, recoveryCorpus) }

var recoveryCorpus = []recoveryCase{
	// plain and documented forms
	{src: "llama3.2 JSON reply (Meta prompt format)", text: `{"name": "read_file", "parameters": {"path": "a.go"}}`, want: []string{readA}},
	{src: "mistral [TOOL_CALLS] array (Mistral v3 template)", text: `[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.go"}}, {"name": "list_files", "arguments": {}}]`, want: []string{readA, `list_files {}`}},
	{src: "qwen2.5 <tool_call> (Qwen chat template)", text: "I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n</tool_call>", want: []string{readA}},
	{src: "arguments as a JSON string (OpenAI-style)", text: `{"name": "read_file", "arguments": "{\"path\": \"a.go\"}"}`, want: []string{readA}},
	// bytes around a valid call
	{src: "mistral closing [/TOOL_CALLS] (llama.cpp issue)", text: `[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.go"}}][/TOOL_CALLS]`, want: []string{readA}},
	{src: "stray closing brace (ollama issue, llama3.2)", text: `{"name": "read_file", "parameters": {"path": "a.go"}}}`, want: []string{readA}},
	{src: "stray closing bracket", text: `[{"name": "read_file", "arguments": {"path": "a.go"}}]]`, want: []string{readA}},
	{src: "prose after the JSON (vLLM hermes parser test)", text: "{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.go\"}}\nThis shows the file.", want: []string{readA}},
	{src: "cut-off second call in an array", text: `[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.go"}}, {"name": "list_files", "argu`, want: []string{readA}},
	{src: "cut-off second object", text: "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n{\"name\": \"list_f", want: []string{readA}},
	{src: "eom token after a python_tag call (Llama 3.1 template)", text: `<|python_tag|>{"name": "read_file", "parameters": {"path": "a.go"}}<|eom_id|>`, want: []string{readA}},
	// a known body in another wrapper
	{src: "<tool> wrapper (bug report, small model)", text: `<tool>{"name": "read_file", "arguments": {"path": "a.go"}}</tool>`, want: []string{readA}},
	{src: "<tools> wrapper with a list", text: `<tools>[{"name": "read_file", "arguments": {"path": "a.go"}}]</tools>`, want: []string{readA}},
	{src: "<response> wrapper", text: `<response>{"name": "read_file", "arguments": {"path": "a.go"}}</response>`, want: []string{readA}},
	{src: "<toolcall> wrapper", text: `<toolcall>{"name": "read_file", "arguments": {"path": "a.go"}}</toolcall>`, want: []string{readA}},
	{src: "xml fence around <tool_call>", text: "```xml\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n</tool_call>\n```", want: []string{readA}},
	{src: "functools[...] (Firefunction v2 template)", text: `functools[{"name": "read_file", "arguments": {"path": "a.go"}}]`, want: []string{readA}},
	{src: "{\"tool_calls\": [...]} object", text: `{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.go"}}]}`, want: []string{readA}},
	{src: "DeepSeek V3 special tokens (ollama model/parsers)", text: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"a.go\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", want: []string{readA}},
	{src: "DeepSeek V3.1 special tokens", text: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "a.go"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`, want: []string{readA}},
	{src: "Kimi K2 special tokens", text: `<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path": "a.go"}<|tool_call_end|><|tool_calls_section_end|>`, want: []string{readA}},
	// the name outside the JSON
	{src: "<function=NAME>{json}</function> (Llama 3.1 custom format)", text: `<function=read_file>{"path": "a.go"}</function>`, want: []string{readA}},
	{src: "mistral NAME[ARGS]{json} (Mistral v11 template)", text: `[TOOL_CALLS]read_file[ARGS]{"path": "a.go"}`, want: []string{readA}},
	{src: "mistral two NAME[ARGS] calls", text: `[TOOL_CALLS]read_file[ARGS]{"path": "a.go"}[TOOL_CALLS]list_files[ARGS]{}`, want: []string{readA, `list_files {}`}},
	// arguments that are not JSON
	{src: "Llama 3.2 pythonic list (Meta model card)", text: `[read_file(path="a.go")]`, want: []string{readA}},
	{src: "Llama 3.2 pythonic, two calls", text: `[read_file(path="a.go"), list_files(path=".")]`, want: []string{readA, `list_files {"path":"."}`}},
	{src: "python_tag with a pythonic call", text: `<|python_tag|>read_file(path="a.go")`, want: []string{readA}},
	{src: "Qwen3-Coder XML parameters (ollama qwen3coder parser)", text: "<tool_call>\n<function=read_file>\n<parameter=path>\na.go\n</parameter>\n<parameter=limit>\n20\n</parameter>\n</function>\n</tool_call>", want: []string{`read_file {"limit":20,"path":"a.go"}`}},
	{src: "GLM-4.6 arg_key/arg_value (ollama glm46 parser)", text: "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a.go</arg_value>\n</tool_call>", want: []string{readA}},
	{src: "Python dict literal", text: `{'name': 'read_file', 'arguments': {'path': 'a.go'}}`, want: []string{readA}},
	{src: "Python literal True", text: `{'name': 'edit_file', 'arguments': {'path': 'a.go', 'old_text': 'x', 'new_text': 'y', 'replace_all': True}}`, want: []string{`edit_file {"new_text":"y","old_text":"x","path":"a.go","replace_all":true}`}},
	// other key shapes
	{src: "OpenAI nested function with string arguments", text: `{"type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.go\"}"}}`, want: []string{readA}},
	{src: "a \"tool\" key", text: `{"tool": "read_file", "args": {"path": "a.go"}}`, want: []string{readA}},
	{src: "doubled braces", text: `{{"name": "read_file", "arguments": {"path": "a.go"}}}`, want: []string{readA}},
	// no arguments key: a call only when the tool needs none
	{src: "name alone, no required arguments", text: `{"name": "list_files"}`, want: []string{`list_files {}`}},
	{src: "name alone, required arguments missing", text: `{"name": "read_file"}`},
	// lead-ins
	{src: "short lead-in then JSON", text: "I'll list the files.\n{\"name\": \"list_files\", \"parameters\": {}}", want: []string{`list_files {}`}},
	{src: "a lead-in that announces nothing (asked)", text: "config.json contains one object.\n{\"name\": \"list_files\", \"parameters\": {}}", want: []string{`list_files {}`}, ask: true},
	{src: "lead-in and a fence that ends the reply", text: "Let me read it:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n```", want: []string{readA}},
	{src: "announced, then what the call will give (llama3.2)", text: "To read the file, I'll use the read_file tool:\n\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.go\"}}\n\nThis will show me the contents of the file.", want: []string{readA}},
	{src: "announced, then what comes once it returns", text: "Let me list the files first.\n{\"name\": \"list_files\", \"parameters\": {}}\nOnce I have the list, I can find the configuration.", want: []string{`list_files {}`}},
	{src: "schema mode: an announced fence with a plan after it (asked)", strict: true, ask: true, text: "I'll read the file first.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n```\nThen I will explain it.", want: []string{readA}},
	{src: "'I can use' announces an act", text: "I can use the read_file tool to read it.\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.go\"}}", want: []string{readA}},
	{src: "prose mode: the only fence after an announced action", text: "I'll read the file first.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n```\nThen I will explain it.", want: []string{readA}},
}

// Act or quote, by rule (issue 37): which rule decides each reply of the
// corpus (and the families' and the quotations'), logged for the table in
// docs/tool-call-recovery.md. The replies whose evidence does not decide
// — the model is asked, one round — stay at most 5% of those holding a
// call, and no quotation of the corpus acts.
func TestRecoveryDecisionShare(t *testing.T) {
	lookup := builtinLookup()
	byRule := map[string][]string{}
	acted, asked, withCall := 0, 0, 0
	for _, c := range append(append([]recoveryCase{}, recoveryCorpus...), moreFamilies...) {
		r := Recover(c.text, lookup, c.strict)
		if len(r.Calls) == 0 {
			continue
		}
		withCall++
		byRule[r.Rule] = append(byRule[r.Rule], c.src)
		switch r.Decision {
		case Act:
			acted++
		case Ask:
			asked++
		}
	}
	for _, rule := range []string{RuleWhole, RuleMarkers, RuleBegins, RuleAnnounced, RuleUndecided} {
		t.Logf("%-22s %2d  %s", rule, len(byRule[rule]), strings.Join(byRule[rule], "; "))
	}
	t.Logf("%d replies hold a call: %d act, %d ask the model (%.1f%%)", withCall, acted, asked, 100*float64(asked)/float64(withCall))
	if asked*20 > withCall {
		t.Fatalf("%d of %d replies ask the model: over 5%%", asked, withCall)
	}
}

// Quotations, echoes and plain text are never calls.
func TestRecoveryRefusesQuotes(t *testing.T) {
	long := strings.Repeat("The README explains how the agent is configured, which tools it offers and how approvals work. ", 4)
	runRecoveryCases(t, []recoveryCase{
		{src: "fenced example in the middle of prose", text: "To read a file, the model sends:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n```\nand the content comes back in the next message."},
		{src: "<tool_call> inside an explanation", text: "The template wraps each call as <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}</tool_call> and the server parses it out."},
		{src: "README summary ending with an example line", text: long + "\nIt ends with this example request:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}"},
		{src: "echoed tool output", text: "[tool_result id=1 tool=read_file a.go bytes=60 truncated=false]\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b.go\"}}\n[end tool_result id=1]\nThe file holds an example call."},
		{src: "inline code", text: "Use `{\"name\": \"list_files\"}` to list files."},
		{src: "an example followed by what it would do", text: "For example, you could send:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\nThis will show the file."},
		{src: "a demonstration with what it would do after", text: "I'll demonstrate:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\nThis will tell the server to read the file."},
		{src: "showing the call's shape", text: "Let me show you the call:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\nThis will read a.go."},
		{src: "a hypothetical call with what it would do", text: "Next, I would call:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\nThis will list its contents."},
		{src: "announced but declined after", text: "I'll show the call:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\nThis will read the file, but I will not run it."},
		{src: "two fenced examples", text: "Either\n```json\n{\"name\": \"list_files\", \"arguments\": {}}\n```\nor\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n```"},
		{src: "schema mode: a long explanation before the JSON", strict: true, text: strings.Repeat("Here is the configuration. ", 10) + "\n{\"name\": \"list_files\", \"arguments\": {}}"},
		{src: "Go code (ollama tools test)", text: "for { fmt.Println(\"hello\") }"},
		{src: "brackets in prose (ollama tools test)", text: "[special delivery]"},
		{src: "an unregistered tool", text: `{"name": "delete_everything", "arguments": {}}`},
		{src: "an unregistered pythonic call", text: `[rm(path="/")]`},
		{src: "JSON data, not a call", text: `{"path": "a.go", "lines": 3}`},
		{src: "arguments that do not fit the schema", text: `{"name": "read_file", "arguments": {"path": ["a", "b"]}}`},
		{src: "truncated JSON", text: `{"name": "read_file", "arguments": {"path": `},
		{src: "plain answer", text: "Hello, how can I help you today?"},
	})
}

// FuzzRecoverToolCalls: any recovered call names a registered tool with
// JSON arguments and a well-formed ID, and a fenced block in the middle of
// prose never becomes a call.
func FuzzRecoverToolCalls(f *testing.F) {
	for _, s := range []string{
		`{"name": "read_file", "parameters": {"path": "a.go"}}`,
		"I will read it.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```",
		`[TOOL_CALLS] [{"name": "list_files", "arguments": {"path": "."}}]`,
		`<tool_call>{"name": "read_file", "arguments": {"path": "x"}}</tool_call>`,
		`[read_file(path="a.go"), list_files()]`,
		"<tool_call>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>",
		`{'name': 'read_file', 'arguments': {'path': 'a'}}`,
		`{"name": "read_file", "parameters": {"path": "a.go"`,
		"Some prose {with braces} and {\"name\": 3}",
		"<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">a</｜DSML｜parameter>\n</｜DSML｜invoke>",
		`<start_function_call>call:read_file{path:<escape>a<escape>}<end_function_call>`,
		">>>read_file\n{\"path\": \"a\"}>>>list_files\n{}",
		"Action: ```json\n[{\"tool_name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}]\n```",
		`[Calling tool: read_file({"path": "a"})]`,
		"<|tool_calls_begin|><|tool_call_begin|>read_file<|tool_sep|>{\"path\": \"a\"}<|tool_call_end|>",
		`<think>x</think>{"tool": "read_file", "path": "a"}`,
		`I'll call read_file(path=a)`,
	} {
		f.Add(s, "\n```json\n{\"name\": \"list_files\", \"arguments\": {}}\n```\n")
	}
	lookup := builtinLookup()
	f.Fuzz(func(t *testing.T, s, fence string) {
		for _, strict := range []bool{false, true} {
			calls, _ := recoverCalls(s, lookup, strict)
			for _, c := range calls {
				if _, ok := lookup(c.Function.Name); !ok {
					t.Fatalf("invented a call to %q", c.Function.Name)
				}
				if !json.Valid([]byte(c.Function.Arguments)) {
					t.Fatalf("invalid arguments %q", c.Function.Arguments)
				}
				if !callIDRE().MatchString(c.ID) {
					t.Fatalf("bad id %q", c.ID)
				}
			}
		}
		// A fence between two paragraphs of prose is a quotation.
		if strings.Count(s+fence, "```") > 2 || !strings.Contains(fence, "```") {
			return
		}
		prose := "Here is how the protocol looks in the documentation:"
		quoted := prose + fence + "That is the format the server expects, described above."
		if calls, _ := recoverCalls(quoted, lookup, false); len(calls) > 0 {
			t.Fatalf("a fenced block in the middle of prose became a call: %q", quoted)
		}
	})
}

// BenchmarkRecoverAdversarial: replies built to make a scanner quadratic
// (openers that never close, deep nesting, long lines) cost linear time.
func BenchmarkRecoverAdversarial(b *testing.B) {
	lookup := builtinLookup()
	inputs := map[string]string{
		"braces":   strings.Repeat("{\n", 100000),
		"brackets": strings.Repeat("[", 200000),
		"toolcall": strings.Repeat("<tool_call>", 20000),
		"function": strings.Repeat("<function=a>", 20000),
		"pythonic": strings.Repeat("read_file(\n", 20000),
		"ticks":    strings.Repeat("` a ", 50000),
		"deepseek": strings.Repeat("<｜tool▁call▁begin｜>", 8000),
		// the families issue 30 added
		"functionary": strings.Repeat(">>>read_file\n{\n", 15000),
		"calling":     strings.Repeat("[Calling tool: read_file(", 10000),
		"gemma":       strings.Repeat("<start_function_call>call:read_file{", 6000),
		"dsml":        strings.Repeat("<｜DSML｜invoke name=\"read_file\">", 6000),
		"action":      strings.Repeat("Action: {\n", 20000),
		"inline":      strings.Repeat("so read_file(", 20000),
		"mistral":     strings.Repeat("[TOOL_CALLS] json ", 12000),
		"kimi":        strings.Repeat("<|tool_call_begin|>", 12000),
		"glm":         strings.Repeat("read_file <arg_key>\n", 12000),
	}
	for name, s := range inputs {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				recoverCalls(s, lookup, false)
			}
		})
	}
}

// The prose after an acted call (an answer written as if the call had
// returned) is left out of the answer, and loses only what touches the
// call.
func TestRecoveredProseKeepsItsBrackets(t *testing.T) {
	r := Recover("{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.go\"}}}[/TOOL_CALLS]\nIt declares m := map[string]int{}", builtinLookup(), false)
	if len(r.Calls) != 1 || r.Prose != "" || r.Dropped != "It declares m := map[string]int{}" {
		t.Fatalf("%d calls, prose %q, dropped %q", len(r.Calls), r.Prose, r.Dropped)
	}
}

// Never run a repaired call with wrong arguments (issue 30): arguments that
// cannot be decoded faithfully give no call — an unclosed <parameter= (its
// value would swallow the next one), a backslash that is not an escape
// (C:\Users lost its backslashes) — while the same call written properly
// is recovered byte for byte.
func TestRecoveryRefusesUnfaithfulArguments(t *testing.T) {
	runRecoveryCases(t, []recoveryCase{
		{src: "unclosed parameter (Qwen3-Coder format)", text: "<tool_call>\n<function=write_file>\n<parameter=path> test.txt\n<parameter=content> hello</parameter>\n</function>\n</tool_call>"},
		{src: "unclosed last parameter", text: "<tool_call>\n<function=read_file>\n<parameter=path>\na.go\n</function>\n</tool_call>"},
		{src: "JSON with an invalid escape", text: `{"name": "read_file", "arguments": {"path": "C:\Users\me\a.go"}}`},
		{src: "Python dict with an invalid escape", text: `{'name': 'read_file', 'arguments': {'path': 'C:\Users\me\a.go'}}`},
		{src: "Windows path escaped", text: `{"name": "read_file", "arguments": {"path": "C:\\Users\\me\\a.go"}}`, want: []string{`read_file {"path":"C:\\Users\\me\\a.go"}`}},
		{src: "Python dict, escaped quote and newline", text: `{'name': 'write_file', 'arguments': {'path': 'a.txt', 'content': 'it\'s\n'}}`, want: []string{`write_file {"content":"it's\n","path":"a.txt"}`}},
	})
}

// What models print every day when they act, and what a reply that only
// quotes a call looks like (issue 37 and its red team): each is decided by
// the rule named, never by asking the user.
var actOrQuoteCases = []struct {
	src, text string
	want      Decision
	rule      string
}{
	{"Hermes after a sentence", "Let me check the weather. <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}</tool_call>", Act, RuleMarkers},
	{"glued to a sentence", "Sure, let me check.<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}</tool_call>", Act, RuleMarkers},
	{"Mistral after a greeting", `Hello[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.go"}}]`, Act, RuleMarkers},
	{"Mistral then an invented answer", "[TOOL_CALLS] [{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}]\nThe file a.go declares package main and a function that prints hello, which is everything it holds.", Act, RuleMarkers},
	{"function tag after an announcement, invented result after", "I'll search for that.\n<function=read_file>{\"path\": \"a.go\"}</function>\nThe file says hello.", Act, RuleMarkers},
	{"Using tool: before JSON", "Using tool: read_file\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}", Act, RuleAnnounced},
	{"python_tag after prose", "I need the file first.\n<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.go\"}}", Act, RuleMarkers},
	{"begins, then declines", "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\nI will not run it, it is just documentation.", Quote, RuleDeclines},
	{"marked, then declines", "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}</tool_call>\nBut I won't run this until you confirm the path.", Quote, RuleDeclines},
	{"an example after for example", "You can read files with the tool. For example:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}", Quote, ""}, // not even a candidate act: a lead-in ending in ':' introduces an example
	{"the syntax is", "The syntax is:\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}</tool_call>", Quote, RuleExplains},
	{"you could call", "To see it you could call\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n```", Quote, RuleExplains},
	{"asks the user", "[TOOL_CALLS] [{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}]\nShall I run this?", Quote, RuleAsksUser},
	{"would you like me to", "Would you like me to read it?\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}", Quote, RuleAsksUser},
	{"a short lead-in that announces nothing", "config.json contains one object.\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}", Ask, RuleUndecided},
}

func TestActOrQuoteByEvidence(t *testing.T) {
	lookup := builtinLookup()
	for _, c := range actOrQuoteCases {
		r := Recover(c.text, lookup, false)
		if r.Decision != c.want || c.rule != "" && r.Rule != c.rule {
			t.Errorf("%s: %s (%s), want %s (%s)", c.src, r.Decision, r.Rule, c.want, c.rule)
		}
	}
	// Never a call: in the middle of an explanation, in a code span.
	runRecoveryCases(t, []recoveryCase{
		{src: "a call in the middle of an explanation", text: "To write a file the model sends {\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}} and the server answers with its content."},
		{src: "a marked call inside a code span", text: "Send `<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}</tool_call>` to read a file."},
	})
}

func TestRecoveryMoreFamilies(t *testing.T) { runRecoveryCases(t, moreFamilies) }

var moreFamilies = []recoveryCase{
	// Command-R / Command R+ (Cohere's tool-use prompt: "Action: ```json [...]```")
	{src: "Command-R Action block (Cohere tool-use docs)", text: "Action: ```json\n[\n    {\n        \"tool_name\": \"read_file\",\n        \"parameters\": {\n            \"path\": \"a.go\"\n        }\n    }\n]\n```", want: []string{readA}},
	{src: "Command-R plan then Action block", text: "Plan: I will read a.go first.\nAction: ```json\n[\n    {\n        \"tool_name\": \"read_file\",\n        \"parameters\": {\"path\": \"a.go\"}\n    }\n]\n```", want: []string{readA}},
	// Mistral: a sentence between two call blocks (llama.cpp / vLLM issues)
	{src: "Mistral text between two [TOOL_CALLS] blocks", text: "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}]\nNow the listing.\n[TOOL_CALLS][{\"name\": \"list_files\", \"arguments\": {}}]", want: []string{readA, listAll}},
	{src: "Mistral [TOOL_CALLS] then stray text before the list", text: "[TOOL_CALLS] json\n[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}]", want: []string{readA}},
	{src: "Mistral [TOOL_CALLS] then a fence", text: "[TOOL_CALLS]\n```json\n[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}]\n```", want: []string{readA}},
	// DeepSeek V3.2 DSML (DeepSeek-V3.2 encoding docs)
	{src: "DeepSeek V3.2 DSML invoke", text: "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">a.go</｜DSML｜parameter>\n<｜DSML｜parameter name=\"limit\" string=\"false\">20</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>", want: []string{`read_file {"limit":20,"path":"a.go"}`}},
	{src: "DeepSeek V3.2 DSML two invokes", text: "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">a.go</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"list_files\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>", want: []string{readA, listAll}},
	{src: "DeepSeek tokens with ASCII pipes", text: "<|tool▁calls▁begin|><|tool▁call▁begin|>function<|tool▁sep|>read_file\n```json\n{\"path\": \"a.go\"}\n```<|tool▁call▁end|><|tool▁calls▁end|>", want: []string{readA}},
	{src: "DeepSeek tokens with ASCII pipes and underscores", text: "<|tool_calls_begin|><|tool_call_begin|>read_file<|tool_sep|>{\"path\": \"a.go\"}<|tool_call_end|><|tool_calls_end|>", want: []string{readA}},
	// llama.cpp's documented fallbacks (common/chat.cpp, Hermes 2 Pro parser)
	{src: "llama.cpp <function name=\"...\">", text: `<function name="read_file">{"path": "a.go"}</function>`, want: []string{readA}},
	{src: "llama.cpp <json> wrapper", text: `<json>{"name": "read_file", "arguments": {"path": "a.go"}}</json>`, want: []string{readA}},
	{src: "llama.cpp <JSON> wrapper", text: `<JSON>{"name": "read_file", "arguments": {"path": "a.go"}}</JSON>`, want: []string{readA}},
	{src: "llama.cpp <xml> wrapper", text: `<xml>{"name": "read_file", "arguments": {"path": "a.go"}}</xml>`, want: []string{readA}},
	// two XML-style calls (Qwen3-Coder parser tests)
	{src: "Qwen3-Coder two <tool_call> blocks", text: "<tool_call>\n<function=read_file>\n<parameter=path>\na.go\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=list_files>\n</function>\n</tool_call>", want: []string{readA, listAll}},
	{src: "Qwen3-Coder two functions in one <tool_call>", text: "<tool_call>\n<function=read_file>\n<parameter=path>\na.go\n</parameter>\n</function>\n<function=list_files>\n</function>\n</tool_call>", want: []string{readA, listAll}},
	// Kimi K2 (vLLM kimi_k2 parser tests)
	{src: "Kimi K2 call with no arguments", text: "<|tool_calls_section_begin|><|tool_call_begin|>functions.list_files:0<|tool_call_argument_begin|><|tool_call_end|><|tool_calls_section_end|>", want: []string{listAll}},
	{src: "Kimi K2 call without the argument marker", text: "<|tool_calls_section_begin|><|tool_call_begin|>functions.list_files:0<|tool_call_end|><|tool_calls_section_end|>", want: []string{listAll}},
	{src: "Kimi K2 Windows path", text: `<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path": "C:\\Users\\me\\a.go"}<|tool_call_end|><|tool_calls_section_end|>`, want: []string{`read_file {"path":"C:\\Users\\me\\a.go"}`}},
	// key shapes
	{src: "a \"tool\" key with tool_input", text: `{"tool": "read_file", "tool_input": {"path": "a.go"}}`, want: []string{readA}},
	{src: "a \"tool\" key with the arguments beside it", text: `{"tool": "read_file", "path": "a.go"}`, want: []string{readA}},
	{src: "LangChain action/action_input", text: `{"action": "read_file", "action_input": {"path": "a.go"}}`, want: []string{readA}},
	// pseudo-code: the reply is only the call
	{src: "pseudo-code call after a lead-in", text: `I'll call read_file(path="a.go")`, want: []string{readA}},
	{src: "pseudo-code call with a bare value", text: `read_file(path=a.go)`, want: []string{readA}},
	// further families
	{src: "LFM2 <|tool_call_start|> (Liquid model card)", text: `<|tool_call_start|>[read_file(path="a.go")]<|tool_call_end|>`, want: []string{readA}},
	{src: "Functionary v3 recipient (>>>NAME)", text: ">>>read_file\n{\"path\": \"a.go\"}", want: []string{readA}},
	{src: "Functionary v3 two calls", text: ">>>read_file\n{\"path\": \"a.go\"}>>>list_files\n{}", want: []string{readA, listAll}},
	{src: "Functionary v2 <|recipient|>", text: "<|from|>assistant\n<|recipient|>read_file\n<|content|>{\"path\": \"a.go\"}", want: []string{readA}},
	{src: "FunctionGemma call syntax (Google model card)", text: `<start_function_call>call:read_file{path:<escape>a.go<escape>}<end_function_call>`, want: []string{readA}},
	{src: "FunctionGemma two arguments", text: `<start_function_call>call:read_file{path:<escape>a.go<escape>,limit:20}<end_function_call>`, want: []string{`read_file {"limit":20,"path":"a.go"}`}},
	{src: "[Calling tool: f({...})]", text: `[Calling tool: read_file({"path": "a.go"})]`, want: []string{readA}},
	{src: "GLM arguments without a wrapper", text: "read_file\n<arg_key>path</arg_key>\n<arg_value>a.go</arg_value>", want: []string{readA}},
	// reasoning before the call
	{src: "a call right after </think> on the same line", text: `<think>The user wants a.go.</think>{"name": "read_file", "arguments": {"path": "a.go"}}`, want: []string{readA}},
}

// The new markers quoted in prose are not calls.
func TestRecoveryMoreFamiliesQuoted(t *testing.T) {
	runRecoveryCases(t, []recoveryCase{
		{src: "FunctionGemma syntax in a sentence", text: "FunctionGemma writes <start_function_call>call:read_file{path:<escape>a.go<escape>}<end_function_call> and the server parses it."},
		{src: "LFM marker in a sentence", text: "LFM2 wraps calls as <|tool_call_start|>[read_file(path=\"a.go\")]<|tool_call_end|> in its template, as documented."},
		{src: "pseudo-code in the middle of prose", text: `You can use read_file(path="a.go") to read the file, then edit it.`},
		{src: "pseudo-code in an explanation", text: `The function is declared as read_file(path="a.go") in the docs.`},
		{src: "DSML in a sentence", text: "DeepSeek V3.2 uses <｜DSML｜invoke name=\"read_file\"> blocks</｜DSML｜invoke> which the server parses."},
		{src: "Functionary marker mid-line", text: "Functionary writes >>>read_file then the JSON on the next line."},
		{src: "Command-R Action in an explanation", text: "Command-R answers with a line like\nAction: ```json\n[{\"tool_name\": \"read_file\", \"parameters\": {\"path\": \"a.go\"}}]\n```\nand the server runs it."},
		{src: "a flat tool key with an unknown argument", text: `{"tool": "read_file", "path": "a.go", "mode": "fast"}`},
	})
}

// Arguments that cannot be read faithfully are not run, and the model is
// told what to fix.
func TestRecoveryExplainsUnreadableCalls(t *testing.T) {
	lookup := builtinLookup()
	for _, c := range []struct{ text, want string }{
		{`{"name": "read_file", "arguments": {"path": "C:\Users\me\a.go"}}`, `\\`},
		{"<tool_call>\n<function=write_file>\n<parameter=path> test.txt\n<parameter=content> hello</parameter>\n</function>\n</tool_call>", "</parameter>"},
		{`{"name": "read_file", "arguments": {"path": ["a", "b"]}}`, "path"},
		{`{"name": "read_file", "arguments": {}}`, "path"},
	} {
		r := Recover(c.text, lookup, false)
		if len(r.Calls) != 0 || len(r.Unread) == 0 {
			t.Fatalf("%q: calls %v, unread %q", c.text, r.Calls, r.Unread)
		}
		if note := r.Note(); !strings.Contains(note, "read_file") && !strings.Contains(note, "write_file") || !strings.Contains(note, c.want) {
			t.Fatalf("%q: note %q lacks %q", c.text, note, c.want)
		}
	}
	// A quotation with broken arguments is prose: no note.
	quoted := "The docs show this broken example:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"C:\\Users\"}}\nwhich the server rejects, as explained."
	if r := Recover(quoted, lookup, false); len(r.Unread) != 0 {
		t.Fatalf("a quotation got a note: %q", r.Unread)
	}
}
