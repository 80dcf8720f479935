package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeHost is the session as a server sees it: what it says, registers and
// shows of progress, kept for the test to read.
type fakeHost struct {
	mu         sync.Mutex
	said       []string
	registered []string
	gone       []string
	progress   []string
}

func (h *fakeHost) Say(_ termtext.Tone, line string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.said = append(h.said, line)
}
func (h *fakeHost) Ask(string) (string, error)   { return "", nil }
func (h *fakeHost) Interactive() bool            { return false }
func (h *fakeHost) Sandbox(string) *sandbox.Spec { return &sandbox.Spec{} }
func (h *fakeHost) Record(string, string)        {}
func (h *fakeHost) Progress(server string, p *Progress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p == nil {
		h.progress = append(h.progress, server+" done")
		return
	}
	h.progress = append(h.progress, fmt.Sprintf("%s %s %v/%v", server, p.Message, p.Progress, p.Total))
}
func (h *fakeHost) Register(s *Server, gone []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gone = append(h.gone, gone...)
	for _, t := range s.Tools() {
		h.registered = append(h.registered, s.Name()+config.MCPNameSep+t.Name)
	}
}

// httpServer is an MCP server over streamable HTTP in the test's process:
// echo, fail (an error result), grow (adds a tool: the list changes), a
// tool with a name no provider takes, and a prompt.
func httpServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echo.", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a map[string]any
		json.Unmarshal(req.Params.Arguments, &a)
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Message: "half", Progress: 1, Total: 2})
		}
		return text(fmt.Sprintf("echo: %v (token sk-ant-api03-%s)", a["text"], strings.Repeat("x", 40))), nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Fails.", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := text("boom")
		r.IsError = true
		return r, nil
	})
	s.AddTool(&mcp.Tool{Name: "grow", Description: "Adds a tool.", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: "late", Description: "Added later.", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("late"), nil
		})
		return text("grown"), nil
	})
	s.AddTool(&mcp.Tool{Name: "bad name!", Description: "No provider takes this name.", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("never"), nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "review", Description: "Review a file.", Arguments: []*mcp.PromptArgument{{Name: "file", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Review " + req.Params.Arguments["file"]}}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A server over HTTP through the whole client: started, its tools and
// prompts read (a name no provider takes said once and left out), a call
// answered and redacted, progress shown, an error result an error, a
// changed list re-read between turns, the server's start kept for the next
// session (which starts it only at its first call), and stopped.
func TestHTTPServerThroughTheClient(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	url := httpServer(t)
	host := &fakeHost{}
	m := New(host, t.TempDir(), testOptions)
	s := m.Add("t", config.MCPServer{URL: url})
	if err := m.Connect(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	m.Keep(s)
	host.Register(s, nil)
	if s.State() != "running" || len(s.Tools()) != 3 || strings.Join(host.registered, " ") != "t__echo t__fail t__grow" {
		t.Fatalf("state %q, tools %v, registered %v", s.State(), s.Tools(), host.registered)
	}
	if len(host.said) != 1 || !strings.Contains(host.said[0], "bad name!") {
		t.Errorf("the tool no provider takes: %q", host.said)
	}
	if p := s.Prompts(); len(p) != 1 || p[0].Name != "review" {
		t.Errorf("prompts %v", p)
	}
	out, err := m.Call(t.Context(), s, "echo", "t__echo", map[string]any{"text": "hi"})
	if err != nil || !strings.HasPrefix(out, "echo: hi") || strings.Contains(out, strings.Repeat("x", 40)) {
		t.Errorf("echo: %q %v", out, err)
	}
	if _, err := m.Call(t.Context(), s, "fail", "t__fail", nil); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("an error result: %v", err)
	}
	if got, err := m.GetPrompt(t.Context(), "t", "review", []string{"a.go"}); err != nil || got != "Review a.go" {
		t.Errorf("prompt: %q %v", got, err)
	}
	if _, err := m.GetPrompt(t.Context(), "t", "review", nil); err == nil {
		t.Error("a prompt without its required argument")
	}
	m.Call(t.Context(), s, "grow", "t__grow", nil)
	for deadline := time.Now().Add(5 * time.Second); !s.ListChanged() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	m.Refresh(t.Context())
	if names := fmt.Sprint(s.Tools()); !strings.Contains(names, "late") {
		t.Errorf("after the list changed: %s", names)
	}
	host.mu.Lock()
	gone, progress, registered := strings.Join(host.gone, " "), strings.Join(host.progress, "; "), strings.Join(host.registered, " ")
	host.mu.Unlock()
	if !strings.Contains(gone, "t__echo") || !strings.Contains(registered, "t__late") {
		t.Errorf("the new list registered: gone %q, registered %q", gone, registered)
	}
	if !strings.Contains(progress, "t half 1/2") || !strings.HasSuffix(progress, "t done") {
		t.Errorf("progress shown: %q", progress)
	}
	m.Close()
	if s.State() != "stopped" || len(m.Failed()) != 1 {
		t.Errorf("closed: %q %v", s.State(), m.Failed())
	}

	// The next session offers what was kept, and starts the server at its
	// first call.
	m2 := New(&fakeHost{}, m.root, testOptions)
	s2 := m2.Add("t", config.MCPServer{URL: url})
	if !m2.FromKept(s2) || !strings.HasPrefix(s2.State(), "not started yet") || len(m2.Failed()) != 0 {
		t.Fatalf("kept: %q", s2.State())
	}
	if out, err := m2.Call(t.Context(), s2, "echo", "t__echo", map[string]any{"text": "again"}); err != nil || !strings.HasPrefix(out, "echo: again") || s2.State() != "running" {
		t.Errorf("first call of a kept server: %q %v %q", out, err, s2.State())
	}
	m2.Close()
}

// A server that does not answer is failed, its failure kept: the next
// session leaves it alone for FailedPause.
func TestHTTPServerThatFails(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	host := &fakeHost{}
	m := New(host, t.TempDir(), testOptions)
	m.SetTimeout(3 * time.Second)
	s := m.Add("gone", config.MCPServer{URL: srv.URL})
	if err := m.Connect(t.Context(), s); err == nil || !strings.HasPrefix(s.State(), "failed") {
		t.Fatalf("%v %q", err, s.State())
	}
	m2 := New(&fakeHost{}, m.root, testOptions)
	s2 := m2.Add("gone", config.MCPServer{URL: srv.URL})
	if !m2.FromKept(s2) || !s2.Paused() || !strings.Contains(s2.State(), "/mcp restart gone") {
		t.Errorf("the failure was not kept: %q", s2.State())
	}
	s2.Restarted()
	if s2.Paused() {
		t.Error("a restart by hand leaves it paused")
	}
}

// testOptions are the session's values the tests' managers get.
var testOptions = Options{Version: "test", RunTimeout: 10 * time.Second}

// Close does not wait for a server that is slow to start (issue 75): its
// start is ended with the session, at once.
func TestCloseEndsAStartUnderWay(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // initialize hangs, as a server still starting does
		case <-r.Context().Done():
		case <-quit:
		}
	}))
	defer srv.Close()
	defer close(quit)
	m := New(&fakeHost{}, t.TempDir(), testOptions)
	s := m.Add("slow", config.MCPServer{URL: srv.URL})
	started := make(chan error, 1)
	go func() { started <- m.Connect(context.Background(), s) }()
	time.Sleep(200 * time.Millisecond)
	begin := time.Now()
	m.Close()
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Close waited %s for a server still starting", d)
	}
	select {
	case err := <-started:
		if err == nil {
			t.Error("the start ended by Close succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the start goes on after Close")
	}
}
