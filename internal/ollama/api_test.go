package ollama

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/llm"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// apiServer is an Ollama with two models, one that calls tools and one
// that does not, as /api/tags, /api/show, /api/ps, /api/version,
// /api/embed and a plain /api/chat answer them; it keeps the chat requests.
func apiServer(t *testing.T) (*Client, *[]map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var chats []map[string]any
	expires := time.Now().Add(4 * time.Minute).UTC().Format(time.RFC3339)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		switch r.URL.Path {
		case "/api/version":
			fmt.Fprint(w, `{"version":"0.13.0"}`)
		case "/api/tags":
			fmt.Fprint(w, `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","size":2019393189,"details":{"parameter_size":"3.2B","quantization_level":"Q4_K_M"}},{"name":"gemma:2b","model":"gemma:2b","size":1678447520,"details":{"parameter_size":"2B","quantization_level":"Q4_0"}}]}`)
		case "/api/show":
			if req["model"] == "gemma:2b" {
				fmt.Fprint(w, `{"template":"{{ .Prompt }}","capabilities":["completion"],"model_info":{"gemma.context_length":8192}}`)
				return
			}
			fmt.Fprint(w, `{"template":"{{ if .Tools }}tools{{ end }}","capabilities":["completion","tools"],"model_info":{"llama.context_length":131072}}`)
		case "/api/ps":
			fmt.Fprintf(w, `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","expires_at":%q}]}`, expires)
		case "/api/embed":
			fmt.Fprint(w, `{"embeddings":[[0.1,0.2],[0.3,0.4]]}`)
		case "/api/chat":
			mu.Lock()
			chats = append(chats, req)
			mu.Unlock()
			fmt.Fprintln(w, `{"model":"llama3.2","message":{"role":"assistant","content":"Hello."},"done":true,"prompt_eval_count":12,"eval_count":3}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	c, err := New(s.URL, "llama3.2", 4096, "5m", 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, &chats
}

// What the model menu and the session ask of Ollama besides a chat.
func TestOllamaAPI(t *testing.T) {
	c, chats := apiServer(t)
	ctx := t.Context()
	if v, err := c.Reachable(ctx); err != nil || v != "0.13.0" {
		t.Errorf("Reachable: %q %v", v, err)
	}
	infos, err := c.ModelInfos(ctx)
	if err != nil || len(infos) != 2 {
		t.Fatalf("%v %v", infos, err)
	}
	if d := infos[0].Describe(); d != "3.2B Q4_K_M, 2.0 GB, calls tools" {
		t.Errorf("llama3.2: %q", d)
	}
	if d := infos[1].Describe(); !strings.Contains(d, "no tool calling") {
		t.Errorf("gemma: %q", d)
	}
	cp, n, err := c.Capability(ctx, "llama3.2:latest")
	if err != nil || cp != llm.CapYes || n != 131072 || !strings.Contains(c.PromptTemplate("llama3.2:latest"), ".Tools") {
		t.Errorf("Capability: %v %d %v", cp, n, err)
	}
	if cp, _ := c.ToolSupport(ctx, "gemma:2b"); cp != llm.CapNo {
		t.Errorf("gemma calls tools: %v", cp)
	}
	if loaded, until, err := c.Loaded(ctx); err != nil || !loaded || time.Until(until) < time.Minute {
		t.Errorf("Loaded: %v %v %v", loaded, until, err)
	}
	if c.ContextWindow() != 4096 || c.Name() != "ollama llama3.2" || c.Close() != nil {
		t.Error("the client's own figures")
	}
	var out strings.Builder
	if _, err := c.Chat(ctx, []llm.Message{{Role: "user", Content: "hi"}}, &out); err != nil || out.String() != "Hello." {
		t.Errorf("Chat: %q %v", out.String(), err)
	}
	tools := []anyllm.Tool{{Type: "function", Function: anyllm.Function{Name: "read_file", Parameters: map[string]any{"type": "object"}}}}
	if err := c.Warmer([]llm.Message{{Role: "system", Content: "be brief"}}, tools)(ctx); err != nil {
		t.Fatal(err)
	}
	warm := (*chats)[len(*chats)-1]
	if opts, _ := warm["options"].(map[string]any); opts["num_predict"] != float64(1) || opts["num_ctx"] != float64(4096) || warm["stream"] != false || warm["keep_alive"] != "5m0s" || len(warm["tools"].([]any)) != 1 {
		t.Errorf("the warm request: %v", warm)
	}
	e := NewEmbedder(c.BaseURL, "nomic-embed-text")
	if vs, err := e.Embed(ctx, []string{"a", "b"}); err != nil || len(vs) != 2 || e.Name() != "nomic-embed-text" {
		t.Errorf("Embed: %v %v", vs, err)
	}
}
