package mcptest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect is a client session to s, in memory.
func connect(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func text(r *mcp.CallToolResult) string {
	if len(r.Content) == 0 {
		return ""
	}
	t, _ := r.Content[0].(*mcp.TextContent)
	return t.Text
}

// The tools answer as their descriptions say.
func TestTools(t *testing.T) {
	cs := connect(t, Tools())
	if got := text(call(t, cs, "echo", map[string]any{"text": "hi"})); got != "echo: hi" {
		t.Errorf("echo: %q", got)
	}
	if got := text(call(t, cs, "add", map[string]any{"a": 2, "b": 3})); got != "5" {
		t.Errorf("add: %q", got)
	}
	if r := call(t, cs, "fail", map[string]any{}); !r.IsError {
		t.Errorf("fail is not an error: %q", text(r))
	}
	call(t, cs, "grow", map[string]any{})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
	}
	for _, n := range []string{"echo", "add", "fail", "crash", "grow", "hang", "late"} {
		if !names[n] {
			t.Errorf("no tool %s", n)
		}
	}
}

// Extra's prompt fills its arguments; its slow tool ends; BadNames lists
// the names it was made with.
func TestExtraAndBadNames(t *testing.T) {
	cs := connect(t, Extra())
	p, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"file": "a.go", "focus": "errors"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p.Messages)
	if want := "Review the file a.go carefully. Focus on errors."; !strings.Contains(string(b), want) {
		t.Errorf("prompt: %s", b)
	}
	if got := text(call(t, cs, "slow", map[string]any{})); got != "done in three steps" {
		t.Errorf("slow: %q", got)
	}
	tools, err := connect(t, BadNames()).ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Fatalf("bad names: %v %d", err, len(tools.Tools))
	}
}
