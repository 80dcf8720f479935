// Feature: text-call recovery (internal/textcalls) of the formats issue 30
// lists as missed, against Harvey's own tools: each case is built from a
// public example of that format (the source says where), with the tool
// names and arguments changed to Harvey's.
package harvey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/textcalls"
)

const listAll = `list_files {}`

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
		r := textcalls.Recover(c.text, lookup, false)
		if len(r.Calls) != 0 || len(r.Unread) == 0 {
			t.Fatalf("%q: calls %v, unread %q", c.text, r.Calls, r.Unread)
		}
		if note := r.Note(); !strings.Contains(note, "read_file") && !strings.Contains(note, "write_file") || !strings.Contains(note, c.want) {
			t.Fatalf("%q: note %q lacks %q", c.text, note, c.want)
		}
	}
	// A quotation with broken arguments is prose: no note.
	quoted := "The docs show this broken example:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"C:\\Users\"}}\nwhich the server rejects, as explained."
	if r := textcalls.Recover(quoted, lookup, false); len(r.Unread) != 0 {
		t.Fatalf("a quotation got a note: %q", r.Unread)
	}
}

// Through the real Ollama client: a printed write whose path has
// backslashes that are not escapes is not run (nothing is created); the
// model is told to write \\ and its second try runs.
func TestUnreadablePrintedCallIsExplainedThroughFake(t *testing.T) {
	f := newFakeOllama(t, "mistral:latest")
	env := newTestEnv(t, f, "mistral")
	env.a.approvals.auto = true
	f.script(
		textReply("mistral", `[TOOL_CALLS] [{"name": "write_file", "arguments": {"path": "dir\sub.txt", "content": "hi"}}]`),
		textReply("mistral", `[TOOL_CALLS] [{"name": "write_file", "arguments": {"path": "new.txt", "content": "hi"}}]`),
		textReply("mistral", "Written."))
	if err := env.a.RunPrompt(t.Context(), "write hi to a file"); err != nil {
		t.Fatal(err)
	}
	reqs := f.chatRequests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	m := messagesOf(reqs[1])
	note := m[len(m)-1]
	if note["role"] != "user" || !strings.Contains(note["content"].(string), `write each backslash as \\`) || !strings.Contains(note["content"].(string), "write_file") {
		t.Fatalf("the model was told %s", mustJSON(note))
	}
	if !strings.Contains(env.out.String(), "[not run: a tool call written as text could not be read") {
		t.Fatalf("stdout = %q", env.out.String())
	}
	entries, _ := os.ReadDir(env.dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "sub") {
			t.Fatalf("a file from the unreadable call: %q", e.Name())
		}
	}
	if b, err := os.ReadFile(filepath.Join(env.dir, "new.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("second try: %q %v", b, err)
	}
}
