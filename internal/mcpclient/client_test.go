package mcpclient

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A prompt's arguments by name or in their order; a missing required one
// says the usage.
func TestPromptValues(t *testing.T) {
	p := &mcp.Prompt{Name: "review", Arguments: []*mcp.PromptArgument{{Name: "file", Required: true}, {Name: "focus"}}}
	v, err := promptValues("/s:review", p, []string{"a.go", "focus=errors"})
	if err != nil || v["file"] != "a.go" || v["focus"] != "errors" {
		t.Fatalf("%v %v", v, err)
	}
	if _, err := promptValues("/s:review", p, []string{"focus=x"}); err == nil || !strings.Contains(err.Error(), "file=VALUE [focus=VALUE]") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := promptValues("/s:review", p, []string{"a", "b", "c"}); err == nil {
		t.Error("three values for two arguments")
	}
}

// A result as the model reads it: text passed on, the rest one line each,
// structured content when there is nothing else.
func TestResultText(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("xx")},
		&mcp.ResourceLink{Name: "doc", URI: "file:///doc"}}}
	if got := mcpText(res); got != "hello\n[image: image/png, 2 bytes]\n[resource: doc file:///doc]" {
		t.Errorf("%q", got)
	}
	if got := mcpText(&mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}); got != `{"n":1}` {
		t.Errorf("structured: %q", got)
	}
	var m *Manager
	if m.Len() != 0 || m.Names() != nil {
		t.Error("a session without servers")
	}
	if _, err := m.GetPrompt(t.Context(), "s", "p", nil); err == nil || !strings.Contains(err.Error(), "no MCP server") {
		t.Errorf("no servers: %v", err)
	}
}
