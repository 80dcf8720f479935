package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/toolclass"
)

// A tool's outputSchema is checked (the SDK checks nothing on the client
// side): a result that does not match says so, one without
// structuredContent says so; structuredContent reaches the model
// compactly where it is the content (issue 77).
func TestStructuredContentCheckedAndCompact(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"temperature": map[string]any{"type": "number"}, "city": map[string]any{"type": "string"}},
		"required": []any{"temperature", "city"}}
	spread := "{\n  \"temperature\": 21.5,\n  \"city\": \"Oslo\"\n}"
	good := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: spread}}, StructuredContent: map[string]any{"city": "Oslo", "temperature": 21.5}}
	if got := resultText(good, schema); got != `{"city":"Oslo","temperature":21.5}` {
		t.Errorf("a matching result, its text the same JSON spread out: %q", got)
	}
	prose := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "It is 21.5 °C in Oslo."}}, StructuredContent: map[string]any{"city": "Oslo", "temperature": 21.5}}
	if got := resultText(prose, schema); got != "It is 21.5 °C in Oslo." {
		t.Errorf("prose beside the structure is the content: %q", got)
	}
	bad := &mcp.CallToolResult{StructuredContent: map[string]any{"city": "Oslo", "temperature": "warm"}}
	if got := resultText(bad, schema); !strings.HasPrefix(got, `{"city":"Oslo","temperature":"warm"}`) || !strings.Contains(got, "does not match the tool's outputSchema") || !strings.Contains(got, "temperature") {
		t.Errorf("a result that does not match: %q", got)
	}
	missing := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	if got := resultText(missing, schema); !strings.Contains(got, "has no structuredContent") {
		t.Errorf("no structuredContent: %q", got)
	}
	if got := resultText(missing, nil); got != "done" {
		t.Errorf("no outputSchema: %q", got)
	}
	if got := resultText(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom"}}}, schema); got != "boom" {
		t.Errorf("an error result is not checked: %q", got)
	}
	if got := resultText(bad, map[string]any{"$ref": "https://example.com/remote.json"}); strings.Contains(got, "does not match") || !strings.Contains(got, "outputSchema could not be read") || !strings.Contains(got, "its result is not checked") {
		t.Errorf("a schema that cannot be resolved: not held against the result, and said unchecked: %q", got)
	}
}

// Over HTTP through the whole client (issue 77): a result that does not
// match its tool's outputSchema is said as such; a server's own timeout:
// ends a call that does not answer, classed timeout, and names the setting.
func TestOutputSchemaAndTimeoutOverTheWire(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	s := mcp.NewServer(&mcp.Implementation{Name: "w", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object","properties":{}}`)
	s.AddTool(&mcp.Tool{Name: "weather", Description: "Weather.", InputSchema: obj,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"temperature": "warm"}`}}, StructuredContent: map[string]any{"temperature": "warm"}}, nil
		})
	done := make(chan struct{})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Slow.", InputSchema: obj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
		case <-done:
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	m := New(&fakeHost{}, t.TempDir(), testOptions)
	sv := m.Add("w", config.MCPServer{URL: srv.URL, Timeout: config.Duration(300 * time.Millisecond)})
	if err := m.Connect(t.Context(), sv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	t.Cleanup(func() { close(done) }) // first: the slow call's handler returns
	out, err := m.Call(t.Context(), sv, "weather", "w__weather", nil)
	if err != nil || !strings.HasPrefix(out, `{"temperature":"warm"}`) || !strings.Contains(out, "does not match the tool's outputSchema") {
		t.Errorf("weather: %q %v", out, err)
	}
	start := time.Now()
	_, err = m.Call(t.Context(), sv, "slow", "w__slow", nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within its timeout: (300ms)") || toolclass.Of(err, false, "") != toolclass.Timeout || time.Since(start) > 5*time.Second {
		t.Errorf("slow: %v (%s)", err, time.Since(start))
	}
}
