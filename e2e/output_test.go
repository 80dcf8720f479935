package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/events"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// outputSchema is docs/output.md's table of events: each type and the
// fields it must carry (besides v, seq and type). The test reads the
// table from the doc, so the doc and the code cannot drift apart.
func outputSchema(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("docs", "output.md"))
	if err != nil {
		t.Fatal(err)
	}
	schema := map[string][]string{}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([^|]*) \\|")
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		var fields []string
		names, _, _ := strings.Cut(m[2], " — ")
		names = regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(names, "")
		for _, f := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(names, -1) {
			fields = append(fields, f[1])
		}
		schema[m[1]] = fields
	}
	if len(schema) < 8 {
		t.Fatalf("docs/output.md lists %d event types", len(schema))
	}
	return schema
}

// --output stream-json through the built binary: a turn with a tool call,
// a refused write and an error — every line parses, the events come in
// order, each matches the schema in docs/output.md, a secret is redacted,
// and nothing but JSON reaches stdout; --output json gives one object with
// the same facts; exit codes are unchanged.
func TestOutputJSONThroughTheBinary(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	schema := outputSchema(t)
	script := func(f *fakeollama.Server) {
		f.Script(
			fakeollama.ToolReply("llama3.2",
				fakeollama.Call{ID: "r1", Name: "read_file", Args: map[string]any{"path": "notes.txt"}},
				fakeollama.Call{ID: "w1", Name: "write_file", Args: map[string]any{"path": "out.txt", "content": "token=ghp_" + strings.Repeat("A", 36)}}),
			fakeollama.TextReply("llama3.2", "The note says hello; I could not write out.txt."),
			fakeollama.Reply{Status: 400, ErrMsg: "invalid request: the second prompt is refused"},
		)
	}
	dir := t.TempDir()
	WriteFile(t, dir, "notes.txt", "hello\n")
	WriteFile(t, dir, "script.txt", "what does the note say?\nand again?\n")

	f := fakeollama.New(t, "llama3.2:latest")
	script(f)
	out, errOut, code := Run(t, bin, dir, "", "--run", "script.txt", "--output", "stream-json", "--model", "llama3.2", "--ollama", f.URL())
	if code != 1 {
		t.Fatalf("exit %d (want 1: the error)\n%s\n%s", code, out, errOut)
	}
	var types []string
	seq := 0
	whole := map[string]string{} // what a script reads without joining pieces
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		typ, _ := ev["type"].(string)
		switch typ {
		case "assistant_message":
			whole["message"], _ = ev["text"].(string)
		case "tool_result":
			id, _ := ev["id"].(string)
			whole[id], _ = ev["output"].(string)
		}
		if ev["v"] != float64(events.SchemaVersion) || ev["seq"] != float64(seq+1) {
			t.Fatalf("version or order: %v", ev)
		}
		seq++
		fields, ok := schema[typ]
		if !ok {
			t.Fatalf("event type %q is not in docs/output.md", typ)
		}
		for _, k := range fields {
			if _, ok := ev[k]; !ok {
				t.Errorf("%s event without %q: %v", typ, k, ev)
			}
		}
		types = append(types, typ)
	}
	got := strings.Join(types, " ")
	want := regexp.MustCompile(`^turn_start tool_call tool_result tool_call refused tool_result (assistant_text )+assistant_message usage turn_start (error )+end$`)
	if !want.MatchString(got) {
		t.Fatalf("events in this order: %s", got)
	}
	if whole["message"] != "The note says hello; I could not write out.txt." {
		t.Errorf("assistant_message: %q", whole["message"])
	}
	if !strings.Contains(whole["r1"], "hello") || !strings.Contains(whole["w1"], "approval") {
		t.Errorf("tool_result outputs: read_file %q, write_file %q", whole["r1"], whole["w1"])
	}
	if strings.Contains(out, "ghp_") || !strings.Contains(out, "REDACTED") {
		t.Errorf("the secret in the arguments was not redacted as the model's view is")
	}
	if !strings.Contains(errOut, "⚙ read_file") {
		t.Errorf("the human lines left stderr: %s", errOut)
	}

	f = fakeollama.New(t, "llama3.2:latest")
	script(f)
	out, _, code = Run(t, bin, dir, "", "--run", "script.txt", "--output", "json", "--model", "llama3.2", "--ollama", f.URL())
	var res struct {
		V         int    `json:"v"`
		Type      string `json:"type"`
		Answer    string `json:"answer"`
		ToolCalls []struct {
			ID, Name, Status, Summary, Approval string
			Arguments                           map[string]any
		} `json:"tool_calls"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			ReplyTokens  int `json:"reply_tokens"`
		} `json:"usage"`
		Errors     []string `json:"errors"`
		ExitCode   int      `json:"exit_code"`
		ExitReason string   `json:"exit_reason"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if code != 1 || res.ExitCode != 1 || res.ExitReason != "error" || res.V != 1 || len(res.ToolCalls) != 2 || len(res.Errors) != 2 {
		t.Fatalf("json: exit %d %+v", code, res)
	}
	if c := res.ToolCalls[0]; c.Name != "read_file" || c.Status != "ok" || c.Arguments["path"] != "notes.txt" {
		t.Errorf("read_file: %+v", c)
	}
	if c := res.ToolCalls[1]; c.Name != "write_file" || c.Status != "refused" || !strings.Contains(c.Approval, "refused") {
		t.Errorf("write_file: %+v", c)
	}
	if res.Usage.ReplyTokens == 0 {
		t.Errorf("usage: %+v", res.Usage)
	}

	// A refused write alone: exit 3, as in text mode.
	f = fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "x.txt", "content": "x"}}), fakeollama.TextReply("llama3.2", "Not written."))
	out, _, code = Run(t, bin, dir, "", "-p", "write it", "--output", "json", "--model", "llama3.2", "--ollama", f.URL())
	if code != 3 || !strings.Contains(out, `"exit_reason": "not_approved"`) || !strings.Contains(out, `"answer": "Not written."`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if _, _, code := Run(t, bin, dir, "", "--output", "xml", "-p", "x"); code != 2 {
		t.Fatalf("a bad --output: exit %d", code)
	}
}

// A secret the model streams in pieces (the fake sends seven bytes at a
// time) is redacted whole before it leaves, on the terminal and in every
// --output format (issue 45): a token of a known shape, and a quoted
// password with spaces in it.
func TestSplitSecretNeverLeaves(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	token := "sk-proj-" + strings.Repeat("Zq9", 10)
	reply := "Use " + token + " for the client.\nThen run PASSWORD=\"correct horse battery staple\" make deploy\nDone."
	for _, format := range []string{"text", "json", "stream-json"} {
		f := fakeollama.New(t, "llama3.2:latest")
		f.Script(fakeollama.TextReply("llama3.2", reply))
		out, errOut, code := Run(t, bin, t.TempDir(), "", "-p", "how?", "--model", "llama3.2", "--ollama", f.URL(), "--output", format)
		if code != 0 || !strings.Contains(out, "Done.") && !strings.Contains(out, `Done.`) {
			t.Fatalf("%s: exit %d %s %s", format, code, out, errOut)
		}
		for _, s := range []string{"Zq9Zq9Zq9", "horse", "battery"} {
			if strings.Contains(out, s) || strings.Contains(errOut, s) {
				t.Errorf("%s: a piece of a secret left: %q\n%s", format, s, out)
			}
		}
		if !strings.Contains(out, "for the client") || !strings.Contains(out, "make deploy") {
			t.Errorf("%s: the rest of the reply is missing:\n%s", format, out)
		}
	}
}

// Every tool_result says how the call ended in one word (issue 77): a
// wrong argument type is invalid_args, a command past its timeout is
// timeout, a command that exits 1 is failed; the model's header says the
// same. A command printing 200 KB is cut for the model, kept whole:
// read_output with a pattern returns a line from its middle with its line
// number, and with no id reads the last command's.
func TestToolResultClassesAndTheWholeOutput(t *testing.T) {
	t.Parallel()
	RequireSandbox(t)
	bin := Build(t)
	dir := t.TempDir()
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "bad", Name: "read_file", Args: map[string]any{"path": "a.txt", "offset": map[string]any{"x": 1}}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "slow", Name: "run_command", Args: map[string]any{"command": "sleep 30", "timeout": 1}}),
		fakeollama.ToolReply("llama3.2", CmdCall("fail", "sh -c 'exit 1'")),
		fakeollama.ToolReply("llama3.2", CmdCall("big", "seq -f 'row %g of the report' 1 12000")),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "find", Name: "read_output", Args: map[string]any{"pattern": "^row 6543 "}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "page", Name: "read_output", Args: map[string]any{"id": 3, "offset": 11999}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "none", Name: "read_output", Args: map[string]any{"id": "job-9"}}),
		fakeollama.TextReply("llama3.2", "Done."))
	out, errOut, code := Run(t, bin, dir, "", "-p", "go", "--yes", "--output", "stream-json", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	class := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		json.Unmarshal(sc.Bytes(), &ev)
		if ev["type"] == "tool_result" {
			class[ev["id"].(string)], _ = ev["class"].(string)
		}
	}
	want := map[string]string{"bad": "invalid_args", "slow": "timeout", "fail": "failed", "big": "ok", "find": "ok", "page": "ok", "none": "invalid_args"}
	for id, c := range want {
		if class[id] != c {
			t.Errorf("%s: class %q, want %q", id, class[id], c)
		}
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	if !strings.Contains(res["slow"], "class=timeout") || !strings.Contains(res["bad"], "class=invalid_args") {
		t.Errorf("the model's headers: %.120s | %.120s", res["slow"], res["bad"])
	}
	if !strings.Contains(res["big"], `read_output {"id": "3"`) || strings.Contains(res["big"], "row 6543 of") {
		t.Errorf("the cut result does not say how to read on, or was not cut: %.300s", res["big"][len(res["big"])-300:])
	}
	if !strings.Contains(res["find"], "6543: row 6543 of the report") || !strings.Contains(res["find"], "output 3: seq") {
		t.Errorf("read_output with a pattern: %s", res["find"])
	}
	if !strings.Contains(res["page"], "12000: row 12000 of the report") || strings.Contains(res["page"], "11998:") {
		t.Errorf("read_output with an offset: %s", res["page"])
	}
}

// A tool written inline in your own config (tools.define, issue 77) is
// offered and runs as a tool file's would, with its own variables (env:)
// and no others of yours; a workspace config's tools.define is not read.
func TestInlineToolOfYourConfig(t *testing.T) {
	t.Parallel()
	RequireSandbox(t)
	bin := Build(t)
	dir, cfg := t.TempDir(), t.TempDir()
	WriteFile(t, cfg, "harvey/harvey.yaml", "tools:\n  define:\n    greet:\n      description: Greet someone.\n      parameters: {who: {type: string, required: true}}\n"+
		"      command: [sh, -c, 'echo \"$GREETING $1 ${SECRET_OF_YOURS:-none}\"', sh, \"{{who}}\"]\n      env: {GREETING: hello}\n      effect: read\n")
	WriteFile(t, dir, "agents/harvey.yaml", "tools:\n  define:\n    planted:\n      command: [touch, planted]\n      effect: read\n")
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "g", Name: "greet", Args: map[string]any{"who": "Ada"}}), fakeollama.TextReply("llama3.2", "Done."))
	out, errOut, code := RunEnv(t, bin, dir, "", []string{"XDG_CONFIG_HOME=" + cfg, "SECRET_OF_YOURS=s3cr3t"}, "-p", "greet Ada", "--model", "llama3.2", "--ollama", f.URL())
	reqs := f.ChatRequests()
	if code != 0 || len(reqs) != 2 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if names := fakeollama.ToolNamesOf(reqs[0]); !slices.Contains(names, "greet") || slices.Contains(names, "planted") {
		t.Errorf("offered: %v", names)
	}
	if !strings.Contains(errOut, "tools.define is read from your own config only") {
		t.Errorf("the workspace's tools.define is not said: %s", errOut)
	}
	if r := fakeollama.ToolResults(reqs)["g"]; !strings.Contains(r, "hello Ada none") {
		t.Errorf("the inline tool's run: %s", r)
	}
}
