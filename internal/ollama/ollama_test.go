package ollama

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/llm"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// server answers /api/chat with the NDJSON lines of reply (or a status)
// and keeps the requests it got.
func server(t *testing.T, status int, reply ...string) (*Client, *[]map[string]any) {
	t.Helper()
	var got []map[string]any
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/tags":
			fmt.Fprint(w, `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest"}]}`)
			return
		case "/api/chat":
		default:
			http.NotFound(w, r)
			return
		}
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		got = append(got, req)
		if status != 0 {
			w.WriteHeader(status)
			fmt.Fprint(w, reply[0])
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, l := range reply {
			fmt.Fprintln(w, l)
		}
	}))
	t.Cleanup(s.Close)
	c, err := New(s.URL, "llama3.2", 4096, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, &got
}

// A streamed reply: text to out as it comes, calls collected with an ID
// each (an ID a server sent that cannot go into a delimiter is replaced),
// the window and the tools sent, the figures of the done line kept.
func TestChatWithTools(t *testing.T) {
	c, got := server(t, 0,
		`{"model":"llama3.2","message":{"role":"assistant","content":"Let me "}}`,
		`{"model":"llama3.2","message":{"role":"assistant","content":"look."}}`,
		`{"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":[{"id":"call] x","function":{"name":"read_file","arguments":{"path":"a.go"}}}]}}`,
		`{"model":"llama3.2","done":true,"done_reason":"stop","prompt_eval_count":120,"eval_count":9}`)
	tools := []anyllm.Tool{{Type: "function", Function: anyllm.Function{Name: "read_file", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}}}
	var out strings.Builder
	st, calls, err := c.ChatWithTools(t.Context(), []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, tools, &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "Let me look." || len(calls) != 1 || calls[0].Function.Name != "read_file" || !strings.Contains(calls[0].Function.Arguments, `"a.go"`) {
		t.Fatalf("out %q calls %+v", out.String(), calls)
	}
	if !llm.ValidCallID(calls[0].ID) || strings.Contains(calls[0].ID, "]") {
		t.Errorf("call ID %q", calls[0].ID)
	}
	if st.PromptTokens != 120 || st.ReplyTokens != 9 {
		t.Errorf("stats %+v", st)
	}
	req := (*got)[0]
	if req["options"].(map[string]any)["num_ctx"] != float64(4096) || len(req["tools"].([]any)) != 1 {
		t.Errorf("request %v", req)
	}
}

// What a second try can fix is marked so for the retry loop; what it
// cannot is explained in one line; a stream cut before done is an error.
func TestFailuresClassified(t *testing.T) {
	for _, c := range []struct {
		status    int
		body      string
		transient bool
		says      string
	}{
		{503, `{"error":"server busy, please try again"}`, true, "server busy"},
		{500, `{"error":"llama runner process has terminated"}`, true, "llama runner"},
		{400, `{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}`, false, "does not support tools"},
		{404, `{"error":"model not found"}`, false, "ollama pull llama3.2"},
		{0, `{"model":"llama3.2","message":{"role":"assistant","content":"half"}}`, true, "cut off"},
	} {
		cl, _ := server(t, c.status, c.body)
		_, _, err := cl.ChatWithTools(t.Context(), []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, nil, io.Discard)
		var te *llm.TransientError
		if err == nil || errors.As(err, &te) != c.transient || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%d %s: %v (transient %v)", c.status, c.body, err, errors.As(err, &te))
		}
		if c.status == 400 && !errors.Is(err, llm.ErrToolsUnsupported) {
			t.Errorf("no tools: %v", err)
		}
	}
	cl, err := New("127.0.0.1:1", "m", 0, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.ChatWithTools(t.Context(), nil, nil, io.Discard); !errors.As(err, new(RefusedError)) || !strings.Contains(err.Error(), "ollama serve") {
		t.Errorf("refused: %v", err)
	}
}

// Addresses as people write them.
func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{"localhost:11434": "http://localhost:11434", "http://h:1/": "http://h:1", "https://ollama.example": "https://ollama.example"} {
		if got, err := NormalizeURL(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	if _, err := New("h", "m", 0, "forever", 0); err == nil {
		t.Error("keep_alive: forever accepted")
	}
}
