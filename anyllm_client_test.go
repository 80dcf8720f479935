// Feature: the OpenAI-compatible client (anyllm_client.go) against a fake
// server that speaks that wire protocol, quirks included, and through a route
// (config.go).
package harvey

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/fakeopenai"
	"github.com/harvey-agent/harvey/internal/llm"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// routeEnv is a test agent with a route @box to the fake OpenAI server.
func routeEnv(t *testing.T, f *fakeopenai.Server, provider string) *testEnv {
	env := newTestEnv(t, nil, "")
	var out bytes.Buffer
	if err := env.a.Dispatch(t.Context(), "/route add box "+provider+" "+f.URL()+" qwen2.5-coder-7b", &out); err != nil {
		t.Fatal(err)
	}
	return env
}

func TestOpenAICompatibleTextAndUsage(t *testing.T) {
	f := fakeopenai.New(t)
	c, err := newAnyLLMClient("llamacpp", f.URL(), "qwen2.5-coder-7b", 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Script(fakeopenai.Text("Hello from llama.cpp, in pieces."))
	var out strings.Builder
	st, err := c.Chat(t.Context(), []llm.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "hi"}}, &out)
	if err != nil || out.String() != "Hello from llama.cpp, in pieces." {
		t.Fatalf("chat: %q %v", out.String(), err)
	}
	if st.PromptTokens != 40 || st.ReplyTokens != 9 {
		t.Fatalf("stats = %+v", st)
	}
	if ms, err := c.Models(t.Context()); err != nil || len(ms) != 1 || ms[0] != "qwen2.5-coder-7b" {
		t.Fatalf("models = %v %v", ms, err)
	}
	req := f.ChatRequests()[0]
	if req["stream"] != true || req["model"] != "qwen2.5-coder-7b" {
		t.Fatalf("request = %v", req)
	}
}

// Fragmented tool-call deltas from an OpenAI-compatible server, through the
// whole loop via a route: the call runs, and the follow-up request carries
// the assistant's call and the tool result with matching IDs.
func TestOpenAICompatibleFragmentedToolCallThroughRoute(t *testing.T) {
	f := fakeopenai.New(t)
	env := routeEnv(t, f, "llamacpp")
	e2e.WriteFile(t, env.dir, "cfg.ini", "port=8080\n")
	f.Script(
		fakeopenai.Reply{Events: []string{
			fakeopenai.CallDelta(0, "call_A", "read_file", ""),
			fakeopenai.CallDelta(0, "", "", `{"pa`),
			fakeopenai.CallDelta(0, "", "", `th": "cfg`),
			fakeopenai.CallDelta(0, "", "", `.ini"}`),
			fakeopenai.Chunk(map[string]any{}, "tool_calls"),
			fakeopenai.UsageChunk(300, 20),
		}},
		fakeopenai.Text("The port is 8080."),
	)
	if err := env.a.RunPrompt(t.Context(), "@box what port?"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.out.String(), "The port is 8080.") {
		t.Fatalf("stdout = %q", env.out.String())
	}
	reqs := f.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	if !strings.Contains(mustJSON(reqs[0]["tools"]), `"enum":["status","diff","log","show","blame"]`) {
		t.Fatalf("schemas not sent whole: %s", mustJSON(reqs[0]["tools"]))
	}
	msgs := fakeollama.MessagesOf(reqs[1])
	asst, tool := msgs[len(msgs)-2], msgs[len(msgs)-1]
	calls, _ := asst["tool_calls"].([]any)
	if asst["role"] != "assistant" || len(calls) != 1 || !strings.Contains(mustJSON(calls[0]), `"id":"call_A"`) || !strings.Contains(mustJSON(calls[0]), `{\"path\": \"cfg.ini\"}`) {
		t.Fatalf("assistant = %s", mustJSON(asst))
	}
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_A" || !strings.Contains(tool["content"].(string), "port=8080") {
		t.Fatalf("tool message = %s", mustJSON(tool))
	}
}

// The accumulator on the quirks wire.md lists, through the real provider.
func TestOpenAICompatibleDeltaQuirks(t *testing.T) {
	cases := []struct {
		name   string
		events []string
		want   []string // name(args) per call
	}{
		{"llama.cpp puts { in the first delta", []string{fakeopenai.CallDelta(0, "c1", "list_files", "{"), fakeopenai.CallDelta(0, "", "", `"path":"."}`), fakeopenai.Chunk(map[string]any{}, "tool_calls")},
			[]string{`list_files({"path":"."})`}},
		{"old llama.cpp repeats the name", []string{fakeopenai.CallDelta(0, "", "read_file", `{"path":`), fakeopenai.CallDelta(0, "", "read_file", `"a.go"}`), fakeopenai.Chunk(map[string]any{}, "tool_calls")},
			[]string{`read_file({"path":"a.go"})`}},
		{"no ids, two calls in sequence", []string{fakeopenai.CallDelta(0, "", "read_file", `{"path":"a"}`), fakeopenai.CallDelta(1, "", "read_file", `{"path":"b"}`), fakeopenai.Chunk(map[string]any{}, "tool_calls")},
			[]string{`read_file({"path":"a"})`, `read_file({"path":"b"})`}},
		{"ollama /v1 reuses index 0 with new ids", []string{fakeopenai.CallDelta(0, "x1", "read_file", `{"path":"a"}`), fakeopenai.CallDelta(0, "x2", "list_files", `{}`), fakeopenai.Chunk(map[string]any{}, "tool_calls")},
			[]string{`read_file({"path":"a"})`, `list_files({})`}},
		{"finish stop after a call (gpt-4o)", []string{fakeopenai.CallDelta(0, "s1", "list_files", ""), fakeopenai.Chunk(map[string]any{}, "stop")},
			[]string{`list_files({})`}},
		{"interleaved parallel calls", []string{fakeopenai.CallDelta(0, "A", "read_file", ""), fakeopenai.CallDelta(1, "B", "list_files", ""), fakeopenai.CallDelta(0, "", "", `{"path":`), fakeopenai.CallDelta(1, "", "", `{}`), fakeopenai.CallDelta(0, "", "", `"a"}`), fakeopenai.Chunk(map[string]any{}, "tool_calls")},
			[]string{`read_file()`, `list_files({"path":{}"a"})`}},
	}
	f := fakeopenai.New(t)
	c, _ := newAnyLLMClient("openai-compatible", f.URL(), "m", 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.Script(fakeopenai.Reply{Events: tc.events})
			_, calls, err := c.ChatWithTools(t.Context(), []llm.Message{{Role: "user", Content: "x"}}, []anyllm.Tool{{Type: "function"}}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			ids := map[string]bool{}
			for _, call := range calls {
				args := call.Function.Arguments
				if args == "{}" && strings.HasSuffix(tc.want[len(got)], "()") {
					args = ""
				}
				got = append(got, call.Function.Name+"("+args+")")
				if call.ID == "" || ids[call.ID] {
					t.Fatalf("id %q empty or repeated", call.ID)
				}
				ids[call.ID] = true
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("calls = %v, want %v", got, tc.want)
			}
		})
	}
}

// Interleaved calls produce invalid JSON; the loop returns it to the model
// as an error result instead of failing the turn.
func TestInterleavedCallsBecomeErrorResults(t *testing.T) {
	f := fakeopenai.New(t)
	env := routeEnv(t, f, "vllm")
	f.Script(
		fakeopenai.Reply{Events: []string{fakeopenai.CallDelta(0, "A", "read_file", ""), fakeopenai.CallDelta(1, "B", "list_files", ""), fakeopenai.CallDelta(0, "", "", `{"path":`), fakeopenai.CallDelta(1, "", "", `{}`), fakeopenai.CallDelta(0, "", "", `"a"}`), fakeopenai.Chunk(map[string]any{}, "tool_calls")}},
		fakeopenai.Text("Sorry, retrying one at a time."),
	)
	if err := env.a.RunPrompt(t.Context(), "@box go"); err != nil {
		t.Fatal(err)
	}
	msgs := fakeollama.MessagesOf(f.ChatRequests()[1])
	if c := msgs[len(msgs)-1]["content"].(string); !strings.Contains(c, "error:") || !strings.Contains(c, "JSON") {
		t.Fatalf("result = %q", c)
	}
}

// Every way a stream can fail ends in one clear message.
func TestOpenAICompatibleFailures(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	env := routeEnv(t, f, "llamacpp")
	env.a.Config.Retry.Attempts = -1 // the explanations, without the retries (retry_test.go)
	cases := []struct {
		reply fakeopenai.Reply
		want  string
	}{
		{fakeopenai.Reply{Events: []string{fakeopenai.TextDelta("partial")}, NoDone: true}, "cut off"},
		{fakeopenai.Reply{Status: 404, Body: `{"error":{"message":"model not found","type":"invalid_request_error","code":"model_not_found"}}`}, "model not found"},
		// The OpenAI SDK retries a 429 twice; this server keeps refusing.
		{fakeopenai.Reply{Status: 429, Body: `{"error":{"message":"too many requests","type":"rate_limit_error"}}`}, "rate limited"},
		{fakeopenai.Reply{Status: 400, Body: `{"error":{"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","code":"context_length_exceeded"}}`}, "context too long; use /summarize"},
		{fakeopenai.Reply{Events: []string{fakeopenai.TextDelta("a"), `{"error":{"message":"slot unavailable","type":"server_error"}}`}}, "slot unavailable"},
	}
	for _, c := range cases {
		f.Script(c.reply)
		if c.reply.Status == 429 {
			f.Script(c.reply, c.reply)
		}
		err := env.a.RunPrompt(t.Context(), "@box hi")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("err = %v, want one line with %q", err, c.want)
		}
	}
	// A server that is not there.
	var out bytes.Buffer
	env.a.Dispatch(t.Context(), "/route add gone llamacpp http://127.0.0.1:1 m", &out)
	if err := env.a.RunPrompt(t.Context(), "@gone hi"); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("unreachable: %v", err)
	}
}

// Cancelling a reply in flight ends the turn with "cancelled", and no
// goroutine of either client outlives it.
func TestCancelLeavesNoGoroutines(t *testing.T) {
	fo := fakeopenai.New(t)
	fl := fakeollama.New(t, "llama3.2:latest")
	oc, _ := newAnyLLMClient("llamacpp", fo.URL(), "m", 0)
	ol, _ := newOllamaClient(fl.URL(), "llama3.2", 4096, "", 0)
	// Warm up connections and the HTTP machinery, then count.
	fo.Script(fakeopenai.Text("warm"))
	oc.Chat(t.Context(), []llm.Message{{Role: "user", Content: "x"}}, io.Discard)
	fl.Script(fakeollama.TextReply("llama3.2", "warm"))
	ol.Chat(t.Context(), []llm.Message{{Role: "user", Content: "x"}}, io.Discard)
	fo.CloseClientConnections()
	fl.Srv.CloseClientConnections()
	before := settleGoroutines()
	for i := 0; i < 5; i++ {
		fo.Script(fakeopenai.Reply{Events: []string{fakeopenai.TextDelta("slow"), fakeopenai.TextDelta("never")}, Stall: time.Minute})
		fl.Script(fakeollama.Reply{Lines: []string{fakeollama.ContentLine("llama3.2", "slow"), fakeollama.DoneLine("llama3.2")}, Stall: time.Minute})
		for _, c := range []llm.LLMClient{oc, ol} {
			ctx, cancel := contextWithCancel(t)
			go func() { time.Sleep(100 * time.Millisecond); cancel() }()
			_, _, err := c.ChatWithTools(ctx, []llm.Message{{Role: "user", Content: "x"}}, nil, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "cancel") {
				t.Fatalf("%s: err = %v", c.Name(), err)
			}
		}
	}
	fo.CloseClientConnections()
	fl.Srv.CloseClientConnections()
	if after := settleGoroutines(); after > before+2 {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("goroutines: %d before, %d after 10 cancelled turns\n%s", before, after, buf[:n])
	}
}

// Gemini is reached through its OpenAI-compatible endpoint: a key is
// required (GEMINI_API_KEY, then GOOGLE_API_KEY), and tool calls stream as
// they do from OpenAI.
func TestGeminiThroughOpenAICompatibleEndpoint(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	if _, err := newAnyLLMClient("gemini", "", "gemini-2.5-flash", 0); err == nil {
		t.Fatal("gemini without a key was accepted")
	}
	t.Setenv("GOOGLE_API_KEY", "g-key")
	f := fakeopenai.New(t)
	c, err := newAnyLLMClient("gemini", f.URL()+"/v1", "gemini-2.5-flash", 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Script(fakeopenai.Reply{Events: []string{fakeopenai.CallDelta(0, "c1", "read_file", `{"path":"a.go"}`), fakeopenai.Chunk(map[string]any{}, "tool_calls")}})
	_, calls, err := c.ChatWithTools(t.Context(), []llm.Message{{Role: "user", Content: "x"}}, []anyllm.Tool{{Type: "function"}}, io.Discard)
	if err != nil || len(calls) != 1 || calls[0].Function.Name != "read_file" || calls[0].Function.Arguments != `{"path":"a.go"}` {
		t.Fatalf("%v %+v", err, calls)
	}
	if m := f.Requests[0]["model"]; m != "gemini-2.5-flash" {
		t.Fatalf("model = %v", m)
	}
}
