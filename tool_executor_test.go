package harvey

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// These run Harvey's real Ollama client over loopback HTTP against the fake
// server and assert both what reached the model and what the user saw.

func TestToolLoopSingleCall(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	os.WriteFile(filepath.Join(env.dir, "config.yaml"), []byte("port: 8080\n"), 0o644)
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "call_abc12345", Name: "read_file", Args: map[string]any{"path": "config.yaml"}}),
		fakeollama.TextReply("llama3.2", "The port is 8080."),
	)
	if err := env.a.RunPrompt(t.Context(), "what port?"); err != nil {
		t.Fatal(err)
	}
	if got := env.out.String(); !strings.Contains(got, "The port is 8080.") {
		t.Fatalf("stdout = %q", got)
	}
	if !strings.Contains(env.errOut.String(), "⚙ read_file config.yaml") || !strings.Contains(env.errOut.String(), "✓ 1 line\n") {
		t.Fatalf("stderr = %q", env.errOut.String())
	}
	reqs := f.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	// num_ctx from config, tools sent, full schema (enum survives).
	opts := reqs[0]["options"].(map[string]any)
	if opts["num_ctx"].(float64) != config.DefaultNumCtx {
		t.Fatalf("num_ctx = %v", opts["num_ctx"])
	}
	if names := fakeollama.ToolNamesOf(reqs[0]); strings.Join(names, ",") != "delegate,edit_file,find_code,git_command,job_kill,job_output,list_files,read_file,read_output,run_command,search_files,write_file" {
		t.Fatalf("tools = %v", names)
	}
	if !strings.Contains(mustJSON(reqs[0]["tools"]), `"enum":["status","diff","log","show","blame"]`) {
		t.Fatalf("enum lost from schema: %s", mustJSON(reqs[0]["tools"]))
	}
	msgs := fakeollama.MessagesOf(reqs[1])
	asst, tool := msgs[len(msgs)-2], msgs[len(msgs)-1]
	calls := asst["tool_calls"].([]any)
	call := calls[0].(map[string]any)
	if call["id"] != "call_abc12345" {
		t.Fatalf("assistant call id = %v", call["id"])
	}
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_abc12345" || tool["tool_name"] != "read_file" {
		t.Fatalf("tool message = %v", tool)
	}
	if c := tool["content"].(string); !strings.Contains(c, "port: 8080") || !strings.Contains(c, "[tool_result id=call_abc12345 tool=read_file config.yaml") {
		t.Fatalf("tool content = %q", c)
	}
	// The request prefix stays byte-identical: request 1's messages are a
	// prefix of request 2's.
	m0, m1 := fakeollama.MessagesOf(reqs[0]), fakeollama.MessagesOf(reqs[1])
	for i := range m0 {
		if mustJSON(m0[i]) != mustJSON(m1[i]) {
			t.Fatalf("message %d changed between rounds", i)
		}
	}
}

func TestToolLoopTwoCallsWithRepeatedIDs(t *testing.T) {
	f := fakeollama.New(t, "qwen2.5:7b")
	env := newTestEnv(t, f, "qwen2.5:7b")
	os.WriteFile(filepath.Join(env.dir, "a.txt"), []byte("A\n"), 0o644)
	os.WriteFile(filepath.Join(env.dir, "b.txt"), []byte("B\n"), 0o644)
	// No IDs from the server (Ollama < 0.12.10): Harvey must make them unique.
	f.Script(
		fakeollama.ToolReply("qwen2.5:7b", fakeollama.Call{Name: "read_file", Args: map[string]any{"path": "a.txt"}}, fakeollama.Call{Name: "read_file", Args: map[string]any{"path": "b.txt"}}),
		fakeollama.TextReply("qwen2.5:7b", "done"),
	)
	if err := env.a.RunPrompt(t.Context(), "read both"); err != nil {
		t.Fatal(err)
	}
	msgs := fakeollama.MessagesOf(f.ChatRequests()[1])
	n := len(msgs)
	id1, id2 := msgs[n-2]["tool_call_id"], msgs[n-1]["tool_call_id"]
	if id1 == "" || id1 == id2 {
		t.Fatalf("tool call ids not unique: %v %v", id1, id2)
	}
	if !strings.Contains(msgs[n-2]["content"].(string), "A") || !strings.Contains(msgs[n-1]["content"].(string), "B") {
		t.Fatal("results out of order")
	}
}

func TestToolLoopTextThenCallInFinalChunk(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	os.WriteFile(filepath.Join(env.dir, "x.go"), []byte("package x\n"), 0o644)
	// Calls in the done:true frame (built-in parser models).
	done := strings.Replace(fakeollama.DoneLine("llama3.2"), `"content":""`, `"content":"","tool_calls":[{"function":{"index":0,"name":"read_file","arguments":{"path":"x.go"}}}]`, 1)
	f.Script(fakeollama.Reply{Lines: []string{fakeollama.ContentLine("llama3.2", "Let me look. "), done}}, fakeollama.TextReply("llama3.2", "It is package x."))
	if err := env.a.RunPrompt(t.Context(), "what package?"); err != nil {
		t.Fatal(err)
	}
	out := env.out.String()
	if !strings.Contains(out, "Let me look.") || !strings.Contains(out, "It is package x.") {
		t.Fatalf("stdout = %q", out)
	}
}

func TestRecoverLlamaJSONInContent(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	os.WriteFile(filepath.Join(env.dir, "main.go"), []byte("package main\n"), 0o644)
	f.Script(
		fakeollama.TextReply("llama3.2", "```json\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"main.go\"}}\n```"),
		fakeollama.TextReply("llama3.2", "It is package main."),
	)
	if err := env.a.RunPrompt(t.Context(), "what is main.go?"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(env.out.String(), `"parameters"`) {
		t.Fatalf("raw JSON shown to the user: %q", env.out.String())
	}
	if !strings.Contains(env.errOut.String(), "recovered from text") {
		t.Fatalf("stderr = %q", env.errOut.String())
	}
	msgs := fakeollama.MessagesOf(f.ChatRequests()[1])
	last := msgs[len(msgs)-1]
	if last["role"] != "tool" || !strings.Contains(last["content"].(string), "package main") {
		t.Fatalf("recovered result not fed back: %v", last)
	}
}

func TestStringTimeoutCoercedAndUnknownTool(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c1", Name: "run_command", Args: map[string]any{"command": "echo hi", "timeout": "30"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c2", Name: "open_file", Args: map[string]any{"path": "x"}}),
		fakeollama.TextReply("llama3.2", "ok"),
	)
	if err := env.a.RunPrompt(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	reqs := f.ChatRequests()
	m := fakeollama.MessagesOf(reqs[1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "hi\n[exit 0]") {
		t.Fatalf("run_command result = %q", c)
	}
	m = fakeollama.MessagesOf(reqs[2])
	c := m[len(m)-1]["content"].(string)
	if !strings.Contains(c, `error: unknown tool "open_file"; available tools: delegate, edit_file, find_code, git_command, job_kill, job_output, list_files, read_file`) {
		t.Fatalf("unknown tool result = %q", c)
	}
}

func TestBadArgumentsBecomeErrorResults(t *testing.T) {
	ex := &ToolExecutor{registry: newToolRegistry(), maxIterations: 10, maxOutputBytes: 1000}
	env := newTestEnv(t, nil, "")
	ex.registry = env.a.Tools
	ex.host = newTurnHost(env.a)
	msgs, err := ex.ExecuteToolCalls(t.Context(), []anyllm.ToolCall{
		{ID: "a", Type: "function", Function: fc("read_file", `{"path": `)},
		{ID: "b", Type: "function", Function: fc("read_file", `{"path": 12, "offset": "x"}`)},
		{ID: "c", Type: "function", Function: fc("read_file", `{}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"not valid JSON", `argument "offset": expected an integer`, `missing required argument "path"`}
	for i, w := range want {
		if msgs[i].ToolCallID != string(rune('a'+i)) || !strings.Contains(msgs[i].Content, w) {
			t.Fatalf("result %d = %q, want %q", i, msgs[i].Content, w)
		}
	}
}

func TestModelWithoutToolsUsesProseMode(t *testing.T) {
	f := fakeollama.New(t, "gemma2:latest")
	f.Caps["gemma2:latest"] = []string{"completion"}
	env := newTestEnv(t, f, "gemma2")
	os.WriteFile(filepath.Join(env.dir, "a.txt"), []byte("hello\n"), 0o644)
	f.Script(
		fakeollama.TextReply("gemma2", `{"name": "read_file", "arguments": {"path": "a.txt"}}`),
		fakeollama.TextReply("gemma2", "It says hello."),
	)
	if err := env.a.RunPrompt(t.Context(), "read a.txt"); err != nil {
		t.Fatal(err)
	}
	reqs := f.ChatRequests()
	if _, ok := reqs[0]["tools"]; ok {
		t.Fatal("tools sent to a model without tool support")
	}
	if sys := fakeollama.MessagesOf(reqs[0])[0]["content"].(string); !strings.Contains(sys, "- read_file(path, limit?, offset?)") {
		t.Fatalf("system prompt lacks prose tools: %q", sys)
	}
	m := fakeollama.MessagesOf(reqs[1])
	if last := m[len(m)-1]; last["role"] != "user" || !strings.Contains(last["content"].(string), "hello") {
		t.Fatalf("prose result = %v", last)
	}
	if !strings.Contains(env.out.String(), "It says hello.") {
		t.Fatalf("stdout = %q", env.out.String())
	}
}

func TestToolsRejectedMidSessionSwitchesToProse(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	f.Script(
		fakeollama.Reply{Status: 400, ErrMsg: "registry.ollama.ai/library/llama3.2:latest does not support tools"},
		fakeollama.TextReply("llama3.2", "Hello!"),
	)
	if err := env.a.RunPrompt(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	reqs := f.ChatRequests()
	if len(reqs) != 2 || reqs[1]["tools"] != nil {
		t.Fatalf("retry should carry no tools: %v", reqs[1]["tools"])
	}
	if env.a.toolMode() != ModeProse {
		t.Fatalf("mode = %s", env.a.toolMode())
	}
	if !strings.Contains(env.errOut.String(), "does not support tools") {
		t.Fatalf("stderr = %q", env.errOut.String())
	}
}

func TestLoopLimit(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	for i := 0; i < 12; i++ {
		f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{Name: "list_files", Args: map[string]any{"path": "."}}))
	}
	err := env.a.RunPrompt(t.Context(), "loop")
	if !errors.Is(err, ErrToolLoopLimit) || !strings.Contains(err.Error(), "max_tool_calls_per_turn is 10") {
		t.Fatalf("err = %v", err)
	}
	// The third identical call in a row gets an error result, not a run.
	msgs := fakeollama.MessagesOf(f.ChatRequests()[3])
	if c := msgs[len(msgs)-1]["content"].(string); !strings.Contains(c, "same arguments 2 times in a row") {
		t.Fatalf("repeat not flagged: %q", c)
	}
	// The user is told in their terms, not the model's.
	if e := env.errOut.String(); !strings.Contains(e, "not run: the same call for the 3rd time in a row") || strings.Contains(e, "you already called") {
		t.Fatalf("stderr = %q", e)
	}
	// The count goes on with the run of repeats.
	msgs = fakeollama.MessagesOf(f.ChatRequests()[6])
	if c := msgs[len(msgs)-1]["content"].(string); !strings.Contains(c, "same arguments 5 times in a row") {
		t.Fatalf("count stuck: %q", c)
	}
}

func TestLargeFileResultCapped(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	big := strings.Repeat("0123456789abcdef\n", 1<<16) // 1 MB
	os.WriteFile(filepath.Join(env.dir, "big.txt"), []byte(big), 0o644)
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c", Name: "read_file", Args: map[string]any{"path": "big.txt"}}), fakeollama.TextReply("llama3.2", "big"))
	if err := env.a.RunPrompt(t.Context(), "read big"); err != nil {
		t.Fatal(err)
	}
	// With the default num_ctx (8192) one result may take a quarter of the window.
	m := fakeollama.MessagesOf(f.ChatRequests()[1])
	c := m[len(m)-1]["content"].(string)
	if len(c) > 8192+600 || !strings.Contains(c, "[output truncated at 8192 bytes]") || !strings.Contains(c, "truncated=true") ||
		!strings.Contains(c, "[more lines follow; continue with offset=") {
		t.Fatalf("result len %d, tail %q", len(c), c[len(c)-200:])
	}
	// With a large window, max_output_bytes (64 KB) is the cap.
	setNumCtx(env, 65536)
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "d", Name: "read_file", Args: map[string]any{"path": "big.txt"}}), fakeollama.TextReply("llama3.2", "big"))
	if err := env.a.RunPrompt(t.Context(), "read big again"); err != nil {
		t.Fatal(err)
	}
	m = fakeollama.MessagesOf(f.ChatRequests()[3])
	c = m[len(m)-1]["content"].(string)
	if len(c) > config.DefaultMaxOutputBytes+600 || !strings.Contains(c, "[output truncated at 65536 bytes]") {
		t.Fatalf("result len %d, tail %q", len(c), c[len(c)-200:])
	}
}

func TestHeadlessWriteRefusedWithoutYes(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.approvals.auto = false
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "new.txt", "content": "x"}}), fakeollama.TextReply("llama3.2", "I could not write it."))
	if err := env.a.RunPrompt(t.Context(), "write"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(env.dir, "new.txt")); err == nil {
		t.Fatal("file written without approval")
	}
	m := fakeollama.MessagesOf(f.ChatRequests()[1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "headless mode refuses it unless harvey runs with --yes") {
		t.Fatalf("result = %q", c)
	}
	if !strings.Contains(env.errOut.String(), "✗") {
		t.Fatalf("stderr = %q", env.errOut.String())
	}
}

func TestStreamFailures(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.Config.Retry.Attempts = -1 // the explanations, without the retries (retry_test.go)
	cut := fakeollama.TextReply("llama3.2", "partial answer")
	cut.NoDone = true
	f.Script(cut)
	if err := env.a.RunPrompt(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "cut off") {
		t.Fatalf("cut-off stream: %v", err)
	}
	f.Script(fakeollama.Reply{Status: 404, ErrMsg: "model 'llama3.2' not found"})
	if err := env.a.RunPrompt(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "ollama pull llama3.2") || !strings.Contains(err.Error(), "installed: llama3.2:latest") {
		t.Fatalf("404: %v", err)
	}
	f.Script(fakeollama.Reply{Status: 500})
	if err := env.a.RunPrompt(t.Context(), "x"); err == nil {
		t.Fatal("empty-body 500 gave no error")
	}
	f.Script(fakeollama.Reply{Status: 429, ErrMsg: "too many requests, try again later"})
	if err := env.a.RunPrompt(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "rate limited by the server: too many requests") {
		t.Fatalf("429: %v", err)
	}
	f.Script(fakeollama.Reply{Status: 400, ErrMsg: "input length exceeds the context length"})
	if err := env.a.RunPrompt(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "context too long") || !strings.Contains(err.Error(), "raise num_ctx") {
		t.Fatalf("context: %v", err)
	}
	f.Script(fakeollama.Reply{Lines: []string{fakeollama.DoneLine("llama3.2")}})
	if err := env.a.RunPrompt(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty reply: %v", err)
	}
	f.Script(fakeollama.Reply{Lines: []string{fakeollama.ContentLine("llama3.2", "a"), `{"error":"an error was encountered while running the model: unexpected EOF"}`}})
	if err := env.a.RunPrompt(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "running the model") {
		t.Fatalf("mid-stream error: %v", err)
	}
}

// A tool registered from Go code asks for approval: headless without --yes
// it does not run.
func TestRegisterToolAsksFirst(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.approvals.auto = false
	ran := false
	env.a.Tools.RegisterTool("deploy", "Deploy the app.", map[string]any{"type": "object", "properties": map[string]any{}}, func(context.Context, map[string]any) (string, error) {
		ran = true
		return "deployed", nil
	})
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "d", Name: "deploy", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "deploy"); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("an API tool ran without approval")
	}
	m := fakeollama.MessagesOf(f.ChatRequests()[1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "needs approval") {
		t.Fatalf("result = %q", c)
	}
}

// The tool line says what a call does (issue 49): find_code's question,
// not the word "question"; an MCP tool's query, URL or name, or its one
// text argument, else every argument with its value; a long value cut on a
// rune boundary.
func TestCallSummarySaysWhatACallDoes(t *testing.T) {
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"question": "where is the config\nparsed?"}, `"where is the config parsed?"`},
		{map[string]any{"path": "a.go"}, "a.go"},
		{map[string]any{"query": "open issues", "limit": 5.0}, `"open issues"`},
		{map[string]any{"url": "https://example.com/x", "method": "GET"}, "https://example.com/x"},
		{map[string]any{"repo": "harvey-agent/harvey", "limit": 5.0}, "harvey-agent/harvey"},
		{map[string]any{"owner": "a", "repo": "b"}, "owner=a repo=b"},
		{map[string]any{"id": 2.0}, "id=2"}, // job_output, job_kill: the value, not the name (issue 76)
		{map[string]any{"question": strings.Repeat("é", 100)}, `"` + strings.Repeat("é", 59) + "..."},
	} {
		if got := callSummary("tool", c.args); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
}

// The output the model reads keeps what matters (issue 62): a failing test
// suite that prints 50 KB, on a small model's 8 KB cap, reaches the model
// with its first lines, the size of what was cut, and its verdict last.
func TestLongOutputKeepsTheVerdict(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "t", Name: "run_command", Args: map[string]any{"command": "echo '--- FAIL: TestFirst'; seq 1 9000; echo 'FAIL	example.com/m	0.01s'; exit 1"}}),
		fakeollama.TextReply("llama3.2", "ok"),
	)
	if err := env.a.RunPrompt(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	c := fakeollama.ToolResults(f.ChatRequests())["t"]
	if len(c) > 8192+600 || !strings.Contains(c, "--- FAIL: TestFirst") || !strings.Contains(c, "bytes of the middle") ||
		!strings.Contains(c, "9000\nFAIL\texample.com/m\t0.01s\n[exit 1]") || strings.Contains(c, "[output truncated") {
		t.Fatalf("%d bytes: %q … %q", len(c), c[:min(len(c), 120)], c[max(0, len(c)-200):])
	}
}
