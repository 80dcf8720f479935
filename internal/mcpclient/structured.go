package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harvey-agent/harvey/internal/termtext"
)

// resultText is what the model reads of a call's result: its content
// (mcpText), structuredContent compact where it is the content (no text,
// or a text block that is the same JSON spread over lines), and, for a
// tool that declares an outputSchema, a line when the result does not
// match it. The SDK does not check a server's output on the client side.
func resultText(res *mcp.CallToolResult, outputSchema any) string {
	text := mcpText(compactStructured(res))
	if outputSchema == nil || res.IsError {
		return text
	}
	if res.StructuredContent == nil {
		return text + "\n[the tool declares an outputSchema, but its result has no structuredContent]"
	}
	switch err := checkOutput(outputSchema, res.StructuredContent); {
	case errors.Is(err, errUnreadableSchema):
		return text + "\n[the tool's outputSchema could not be read (" + termtext.Clip(termtext.OneLine(err.Error()), 200) + "): its result is not checked]"
	case err != nil:
		return text + "\n[its structuredContent does not match the tool's outputSchema: " + termtext.Clip(termtext.OneLine(err.Error()), 300) + "]"
	}
	return text
}

// errUnreadableSchema is an outputSchema that cannot be resolved (a remote
// $ref, a draft the checker does not know): the result is said unchecked,
// never passed as checked.
var errUnreadableSchema = errors.New("unreadable outputSchema")

// compactStructured is res with each text block that is structuredContent
// written out (the spec asks servers to send it so) replaced by its compact
// form: the same facts in fewer tokens.
func compactStructured(res *mcp.CallToolResult) *mcp.CallToolResult {
	if res.StructuredContent == nil {
		return res
	}
	compact, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return res
	}
	out := *res
	out.Content = make([]mcp.Content, len(res.Content))
	for i, c := range res.Content {
		out.Content[i] = c
		t, ok := c.(*mcp.TextContent)
		if !ok || !json.Valid([]byte(t.Text)) {
			continue
		}
		var b bytes.Buffer
		if json.Compact(&b, []byte(t.Text)) == nil && sameJSON(b.Bytes(), compact) {
			out.Content[i] = &mcp.TextContent{Text: string(compact)}
		}
	}
	return &out
}

// sameJSON reports whether two JSON texts are the same value (keys in
// any order).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// checkOutput validates what a tool returned against its outputSchema
// (draft 2020-12 or 07); a schema that cannot be read is
// errUnreadableSchema (the server's problem, not the call's).
func checkOutput(schema, value any) error {
	b, err := json.Marshal(schema)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnreadableSchema, err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: %v", errUnreadableSchema, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnreadableSchema, err)
	}
	// The value as JSON decodes it, whatever Go type the SDK gave it.
	vb, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("it cannot be read as JSON: %v", err)
	}
	var v any
	json.Unmarshal(vb, &v)
	if err := rs.Validate(v); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}

// outputSchema is the outputSchema tool declared (nil: none).
func (s *Server) outputSchema(tool string) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tools {
		if t.Name == tool {
			return t.OutputSchema
		}
	}
	return nil
}
