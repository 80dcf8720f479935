package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// shapedSchema uses what a small subset of JSON Schema would drop: $schema,
// $defs and $ref, allOf, if/then/else, additionalProperties.
const shapedSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
 "$defs":{"level":{"type":"string","enum":["low","high"]}},
 "properties":{"level":{"$ref":"#/$defs/level"},"n":{"type":"integer"}},
 "allOf":[{"required":["level"]}],
 "if":{"properties":{"level":{"const":"high"}}},"then":{"required":["n"]},"else":{"properties":{"n":{"maximum":3}}},
 "additionalProperties":false}`

// elicitServer is a streamable HTTP MCP server with a tool of a shaped
// schema and a tool that asks the user for a name and a count in the
// middle of its call. inits counts the sessions it started.
func elicitServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var inits atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { inits.Add(1) },
	})
	s.AddTool(&mcp.Tool{Name: "shaped", Description: "Takes a shaped argument.", InputSchema: json.RawMessage(shapedSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shaped ok"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask", Description: "Asks the user.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Every field type of the specification's elicitation schema,
			// in an order that is not alphabetical: a string with a minimum
			// length, a titled single choice, a multi-select of one or two,
			// a bounded integer.
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you, and how many?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{
				  "name":{"type":"string","description":"your name","minLength":2},
				  "size":{"type":"string","title":"Size","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
				  "toppings":{"type":"array","items":{"type":"string","enum":["cheese","olives","basil"]},"minItems":1,"maxItems":2},
				  "count":{"type":"integer","minimum":1,"maximum":5}},
				 "required":["name"]}`)})
			if err != nil {
				return nil, err
			}
			text := res.Action
			if res.Action == "accept" {
				text = fmt.Sprintf("got %v %v %v %v", res.Content["name"], res.Content["size"], res.Content["toppings"], res.Content["count"])
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	// JSON responses: a request of the server's reaches the client only
	// through the standalone stream (as with the conformance suite's server).
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	t.Cleanup(srv.Close)
	return srv.URL, &inits
}

// Headless (issue 47): a server's request for input is declined at once,
// the call completes with the decline and the server is not restarted; a
// tool's schema reaches the model whole ($ref, allOf, if/then/else,
// additionalProperties).
func TestEndToEndMCPElicitationHeadless(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	url, inits := elicitServer(t)
	cfg := t.TempDir()
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    h:\n      url: %s\n      read_only: [ask, shaped]\n", url))
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "a", Name: "h__ask", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "Declined."))
	start := time.Now()
	out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", []string{"XDG_CONFIG_HOME=" + cfg}, "-p", "ask me", "--model", "llama3.2", "--ollama", f.URL())
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, "Declined.") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if r := fakeollama.ToolResults(f.ChatRequests())["a"]; !strings.Contains(r, "decline") {
		t.Errorf("the call's result: %s", r)
	}
	if !strings.Contains(errOut, "asked for input (Who are you, and how many?); declined") || took > 10*time.Second {
		t.Errorf("not declined at once with a line (%s): %s", took, errOut)
	}
	if strings.Contains(errOut, "restarted") || inits.Load() != 1 {
		t.Errorf("the server was restarted (%d sessions): %s", inits.Load(), errOut)
	}
	req := e2e.MustJSON(f.ChatRequests()[0])
	for _, want := range []string{`allOf`, `$ref`, `#/$defs/level`, `additionalProperties`, `"if"`, `"then"`, `"else"`, `$schema`} {
		if !strings.Contains(req, want) {
			t.Errorf("the schema reached the model without %s", want)
		}
	}
}
