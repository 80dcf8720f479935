package fakeollama

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// The endpoints besides chat answer as Ollama's do: the version, the
// installed models with their details, a model's context length and
// capabilities, the loaded ones (none where NoPS), and embeddings from the
// one embedding model installed, recorded.
func TestOtherEndpoints(t *testing.T) {
	f := New(t, "llama3.2:latest", "mistral:latest")
	f.CtxLen = map[string]int{"mistral:latest": 32768}
	f.Caps = map[string][]string{"llama3.2:latest": {"completion", "tools"}}
	resp, err := http.Get(f.URL() + "/api/version")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("version: %v", err)
	}
	resp.Body.Close()
	resp, _ = http.Get(f.URL() + "/api/tags")
	var tags struct {
		Models []struct {
			Name    string
			Size    int64
			Details map[string]any
		}
	}
	json.NewDecoder(resp.Body).Decode(&tags)
	resp.Body.Close()
	if len(tags.Models) != 2 || tags.Models[1].Name != "mistral:latest" || tags.Models[1].Details["parameter_size"] != "7.2B" {
		t.Errorf("tags: %+v", tags.Models)
	}
	code, show := post(t, f.URL()+"/api/show", `{"model":"mistral"}`)
	if info, _ := show["model_info"].(map[string]any); code != 200 || info["llama.context_length"] != float64(32768) {
		t.Errorf("show mistral: %d %v", code, show)
	}
	if _, show := post(t, f.URL()+"/api/show", `{"model":"llama3.2"}`); show["capabilities"] == nil {
		t.Errorf("show llama3.2 has no capabilities: %v", show)
	}
	f.Script(TextReply("llama3.2", "hi"))
	post(t, f.URL()+"/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}]}`)
	if _, ps := post(t, f.URL()+"/api/ps", ``); len(ps["models"].([]any)) != 1 {
		t.Errorf("ps after a chat: %v", ps)
	}
	f.NoPS = true
	if code, _ := post(t, f.URL()+"/api/ps", ``); code != 404 {
		t.Errorf("ps where NoPS: %d", code)
	}
	code, emb := post(t, f.URL()+"/api/embed", `{"model":"nomic-embed-text","input":["reading files quickly","files reading"]}`)
	vecs, _ := emb["embeddings"].([]any)
	if code != 200 || len(vecs) != 2 || !slices.Equal(f.EmbedTexts(), []string{"reading files quickly", "files reading"}) {
		t.Errorf("embed: %d %v %q", code, emb, f.EmbedTexts())
	}
	if code, _ := post(t, f.URL()+"/api/embed", `{"model":"other","input":["x"]}`); code != 404 {
		t.Errorf("an embedding model not installed: %d", code)
	}
	if code, _ := post(t, f.URL()+"/api/nothing", `{}`); code != 404 {
		t.Errorf("an unknown path: %d", code)
	}
}

// Texts that share words are near; words under four letters do not count.
func TestBagOfWords(t *testing.T) {
	a, b, c := BagOfWords("Reading files, quickly."), BagOfWords("reading FILES"), BagOfWords("a an the")
	same := 0
	for i := range a {
		if a[i] > 0 && b[i] > 0 {
			same++
		}
	}
	if same < 2 || slices.ContainsFunc(c, func(x float32) bool { return x != 0 }) {
		t.Errorf("bag of words: %v %v %v", a, b, c)
	}
}

// A server that starts late refuses connections, then answers on the same
// address; RefusingURL never answers.
func TestLateAndRefusing(t *testing.T) {
	_, url := Late(t, "llama3.2", "Late but here.", 300*time.Millisecond)
	if resp, err := http.Get(url + "/api/version"); err == nil {
		resp.Body.Close()
		t.Fatal("a late server answered at once")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(url + "/api/version")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the late server never came: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp, err := http.Get(RefusingURL(t) + "/api/version"); err == nil {
		resp.Body.Close()
		t.Error("RefusingURL answered")
	}
}

// ToolNamesOf and ToolResults read a recorded request as a test asks of
// it: the tools offered, and each call's result matched by order.
func TestRequestReaders(t *testing.T) {
	var req map[string]any
	json.Unmarshal([]byte(`{"tools":[{"type":"function","function":{"name":"read_file"}},{"type":"function","function":{"name":"run_command"}}],
		"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"a"},{"id":"b"}]},
		{"role":"tool","tool_name":"read_file","content":"A"},{"role":"tool","tool_name":"run_command","content":"B"}]}`), &req)
	if names := ToolNamesOf(req); !slices.Equal(names, []string{"read_file", "run_command"}) {
		t.Errorf("tool names: %v", names)
	}
	if r := ToolResults([]map[string]any{req}); r["a"] != "A" || r["b"] != "B" {
		t.Errorf("tool results: %v", r)
	}
}
