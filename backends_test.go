// Feature: the model backends as a session uses them — capability detection,
// summaries, the stats window, /model and /ollama, routes, num_ctx and model
// information; spans models.go, ollama.go, context.go, config.go and
// turn.go.
package harvey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/fakeopenai"
	"github.com/harvey-agent/harvey/internal/llm"
)

// Capability detection from /api/show, as wire.md §5 describes it, and the
// tool mode it leads to.
func TestCapabilityDetection(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest", "gemma:latest", "old-tools:latest", "old-plain:latest")
	f.Caps["gemma:latest"] = []string{"completion"}
	f.Caps["old-tools:latest"] = nil // server < 0.6.4: no capabilities field
	f.Template["old-tools:latest"] = "{{ if .Tools }}tools{{ end }}"
	f.Caps["old-plain:latest"] = nil
	f.Template["old-plain:latest"] = "{{ .Prompt }}"
	env := newTestEnv(t, f, "llama3.2")
	for _, step := range [][2]string{
		{"llama3.2", "tool mode:   schema (tool support: yes)"},
		{"gemma", "tool mode:   prose (tool support: no)"},
		{"old-tools", "tool mode:   schema (tool support: yes)"},
		{"old-plain", "tool mode:   prose (tool support: unknown)"}, // last: used below
	} {
		model, want := step[0], step[1]
		if err := env.a.UseModel(t.Context(), model); err != nil {
			t.Fatal(err)
		}
		out, err := dispatch(t, env.a, "/status")
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("%s: /status = %q %v, want %q", model, out, err, want)
		}
	}
	// In prose mode no tools go on the wire; the prompt describes them.
	f.Script(fakeollama.TextReply("old-plain", "ok"))
	if err := env.a.RunPrompt(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	req := f.ChatRequests()[0]
	if _, has := req["tools"]; has {
		t.Fatalf("tools sent in prose mode: %v", req["tools"])
	}
	if sys := fakeollama.MessagesOf(req)[0]["content"].(string); !strings.Contains(sys, `{"name": "TOOL", "arguments": {...}}`) {
		t.Fatalf("system prompt lacks the prose tool description: %q", sys)
	}
}

// /summarize condenses the history through the model, keeps the system prompt
// and pinned context, and refuses when the model returns nothing.
func TestSummarize(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	if _, err := dispatch(t, env.a, "/summarize"); err == nil || !strings.Contains(err.Error(), "nothing to summarize") {
		t.Fatalf("empty: %v", err)
	}
	dispatch(t, env.a, "/context add the repo uses Go 1.26")
	f.Script(fakeollama.TextReply("llama3.2", "First answer."), fakeollama.TextReply("llama3.2", "Second answer."))
	env.a.RunPrompt(t.Context(), "first question")
	env.a.RunPrompt(t.Context(), "second question")
	before := append([]llm.Message(nil), env.a.History...)

	f.Script(fakeollama.TextReply("llama3.2", ""))
	if _, err := dispatch(t, env.a, "/summarize"); err == nil || !strings.Contains(err.Error(), "history kept") {
		t.Fatalf("empty summary: %v", err)
	}
	if len(env.a.History) != len(before) {
		t.Fatal("history changed by a failed summary")
	}
	f.Script(fakeollama.TextReply("llama3.2", "We answered two questions."))
	out, err := dispatch(t, env.a, "/summarize")
	if err != nil || !strings.Contains(out, "history condensed from 6 messages") {
		t.Fatalf("summarize: %q %v", out, err)
	}
	h := env.a.History
	if len(h) != 3 || h[0].Role != "system" || h[0].Content != before[0].Content ||
		!strings.Contains(h[1].Content, "[pinned context]\nthe repo uses Go 1.26") ||
		h[2].Content != summaryPrefix+"We answered two questions.\n[end of summary]" {
		t.Fatalf("history after summary = %+v", h)
	}
	// The summary request carried the whole conversation.
	reqs := f.ChatRequests()
	last := fakeollama.MessagesOf(reqs[len(reqs)-1])
	if len(last) != 7 || !strings.Contains(last[6]["content"].(string), "Summarize this conversation") {
		t.Fatalf("summary request = %d messages", len(last))
	}
}

// HARVEY.md is the system prompt; its markers are expanded once, so the
// prompt prefix stays byte-identical across turns.
func TestHarveyMDMarkers(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "HARVEY.md"), []byte("Project rules.\nToday: <!-- @date -->\nFiles:\n<!-- @files -->\nGit: <!-- @git-status -->\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644)
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	cf, _ := configfile.Load(ws.Tree)
	var out, errOut strings.Builder
	a := newAgent(ws, cf, newLineReader(strings.NewReader("")), &out, &errOut)
	a.OllamaURL = f.URL()
	if err := a.UseModel(t.Context(), "llama3.2"); err != nil {
		t.Fatal(err)
	}
	sys := a.History[0].Content
	for _, want := range []string{"You are Harvey", "Project rules.", "Today: " + time.Now().Format("2006-01-02"), "main.go", "Git: (not a git repository)"} {
		if !strings.Contains(sys, want) {
			t.Fatalf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "<!-- @") {
		t.Fatalf("marker left:\n%s", sys)
	}
	// A new file does not change the prompt mid-session.
	os.WriteFile(filepath.Join(dir, "later.go"), []byte("package main\n"), 0o644)
	f.Script(fakeollama.TextReply("llama3.2", "one"), fakeollama.TextReply("llama3.2", "two"))
	a.RunPrompt(t.Context(), "a")
	a.RunPrompt(t.Context(), "b")
	reqs := f.ChatRequests()
	s1, s2 := fakeollama.MessagesOf(reqs[0])[0]["content"], fakeollama.MessagesOf(reqs[1])[0]["content"]
	if s1 != s2 || strings.Contains(s2.(string), "later.go") {
		t.Fatal("system prompt changed between turns")
	}
}

// The spinner's estimate averages the last five turns.
func TestStatsWindow(t *testing.T) {
	a := &Agent{}
	if a.estimateDuration() != 0 {
		t.Fatal("estimate without history")
	}
	for i := 1; i <= 7; i++ {
		a.recordStats(llm.ChatStats{ReplyTokens: 10 * i, TokensPerSec: 10}) // i seconds each
	}
	if got := a.estimateDuration(); got != 5*time.Second { // turns 3..7
		t.Fatalf("estimate = %v", got)
	}
	s := llm.ChatStats{PromptTokens: 57, ReplyTokens: 11, Elapsed: 1200 * time.Millisecond, TokensPerSec: 12.8}
	if f := s.Format(); !strings.Contains(f, "57") || !strings.Contains(f, "11") || !strings.Contains(f, "12.8 tok/s") {
		t.Fatalf("format = %q", f)
	}
}

func TestModelAndOllamaCommands(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest")
	env := newTestEnv(t, f, "llama3.2")
	steps := [][2]string{
		{"/model", "mistral:latest"},
		{"/model mistral", "mistral:latest"},
		{"/status", "mistral:latest"},
		{"/ollama status", "Ollama 0.15.4 at " + f.URL()},
		{"/ollama list", "llama3.2:latest"},
		{"/ollama use llama3.2", "llama3.2"},
	}
	for _, s := range steps {
		out, err := dispatch(t, env.a, s[0])
		if err != nil || !strings.Contains(out, s[1]) {
			t.Fatalf("%s: %q %v, want %q", s[0], out, err, s[1])
		}
	}
	if env.a.ModelName != "llama3.2:latest" && env.a.ModelName != "llama3.2" {
		t.Fatalf("model = %q", env.a.ModelName)
	}
	if _, err := dispatch(t, env.a, "/model nosuch"); err == nil || !strings.Contains(err.Error(), "ollama pull nosuch") {
		t.Fatalf("/model nosuch: %v", err)
	}
	if _, err := dispatch(t, env.a, "/ollama stop"); err == nil || !strings.Contains(err.Error(), "does not stop") {
		t.Fatalf("/ollama stop: %v", err)
	}
}

// Routes persist in harvey.yaml and can be turned off and removed.
func TestRoutesPersist(t *testing.T) {
	f := fakeopenai.New(t)
	env := routeEnv(t, f, "vllm")
	b, _ := os.ReadFile(filepath.Join(env.dir, "agents", "harvey.yaml"))
	if !strings.Contains(string(b), "name: box") || !strings.Contains(string(b), "provider: vllm") {
		t.Fatalf("harvey.yaml = %s", b)
	}
	cf, _ := configfile.Load(env.ws.Tree)
	if len(cf.Routes) != 1 || cf.Routes[0].Model != "qwen2.5-coder-7b" || !cf.Routes[0].Enabled {
		t.Fatalf("reloaded routes = %+v", cf.Routes)
	}
	dispatch(t, env.a, "/route disable box")
	if err := env.a.RunPrompt(t.Context(), "@box hi"); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("disabled route: %v", err)
	}
	dispatch(t, env.a, "/route enable box")
	f.Script(fakeopenai.Text("hello from the box"))
	if err := env.a.RunPrompt(t.Context(), "@box hi"); err != nil || !strings.Contains(env.out.String(), "hello from the box") {
		t.Fatalf("enabled route: %v %q", err, env.out.String())
	}
	dispatch(t, env.a, "/route remove box")
	if err := env.a.RunPrompt(t.Context(), "@box hi"); err == nil || !strings.Contains(err.Error(), "no route @box") {
		t.Fatalf("removed route: %v", err)
	}
	if _, err := dispatch(t, env.a, "/route add bad nosuchprovider http://x m"); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Fatalf("bad provider: %v", err)
	}
	if _, err := dispatch(t, env.a, "/route add nomodel vllm http://x"); err == nil || !strings.Contains(err.Error(), "give a MODEL") {
		t.Fatalf("no model: %v", err)
	}
	// With the only route gone, the file holds nothing, not "{}".
	if b, _ := os.ReadFile(filepath.Join(env.dir, "agents", "harvey.yaml")); strings.TrimSpace(string(b)) != "" {
		t.Fatalf("harvey.yaml after the last route went = %q", b)
	}
}

// num_ctx is never more than the model's own context length.
func TestNumCtxClampedToModel(t *testing.T) {
	f := fakeollama.New(t, "tinyllama:latest")
	f.CtxLen = map[string]int{"tinyllama:latest": 2048}
	env := newTestEnv(t, f, "tinyllama")
	if !strings.Contains(env.errOut.String(), "num_ctx 8192 is more than tinyllama:latest's 2048-token context; using 2048") {
		t.Fatalf("stderr = %q", env.errOut.String())
	}
	f.Script(fakeollama.TextReply("tinyllama", "hi"))
	env.a.RunPrompt(t.Context(), "hello")
	opts := f.ChatRequests()[0]["options"].(map[string]any)
	if opts["num_ctx"].(float64) != 2048 || env.a.maxOut() != 2048 {
		t.Fatalf("num_ctx sent %v, result cap %d", opts["num_ctx"], env.a.maxOut())
	}
}

// The model menu's details come from /api/tags and, for each model at
// once, /api/show.
func TestModelInfos(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest", "gemma:2b")
	f.Caps["gemma:2b"] = []string{"completion"}
	oc, err := newOllamaClient(f.URL(), "", 0, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	d := modelDetails(t.Context(), oc)
	for name, want := range map[string]string{
		"llama3.2:latest": "3.2B Q4_K_M, 2.0 GB, calls tools",
		"mistral:latest":  "7.2B Q4_0, 4.1 GB, calls tools",
		"gemma:2b":        "no tool calling",
	} {
		if !strings.Contains(d[name], want) {
			t.Fatalf("%s: %q, want %q", name, d[name], want)
		}
	}
	if len(modelDetails(t.Context(), struct{}{})) != 0 {
		t.Fatal("details from a backend that cannot say")
	}
}
