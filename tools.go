package harvey

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

// toolSet is what the model is offered: the registry (built-in tools, user
// tools from agents/tools, MCP tools) and where each came from.
type toolSet struct {
	Tools        *ToolRegistry
	cfg          *ConfigFile // the session's config: max_tools and each server's models:
	userTools    []string    // names registered from agents/tools
	toolProblems []ToolFileProblem
	mcp          *mcpManager // MCP servers (mcp.go); nil until started
}

// ToolHandler executes a named tool and returns its result as a string.
type ToolHandler func(ctx context.Context, args map[string]any) (string, error)

// toolResult is what a tool returns: Text for the model, Summary for the
// user's "✓" line (empty: the first line of Text), so no summary is ever
// parsed back out of the text.
type toolResult struct{ Text, Summary string }

// toolFunc is a tool as the executor runs it.
type toolFunc func(ctx context.Context, args map[string]any) (toolResult, error)

// toolEntry pairs an anyllm.Tool schema with its local function.
type toolEntry struct {
	schema anyllm.Tool
	run    toolFunc
	// effect says what approval the tool needs: read-only tools never ask.
	effect ToolEffect
	// source names where the tool came from ("built-in" or a file).
	source string
}

// ToolEffect classifies what a tool can do, for approvals.
type ToolEffect string

const (
	EffectRead  ToolEffect = "read"
	EffectWrite ToolEffect = "write"
	EffectExec  ToolEffect = "exec"
)

// DefaultMaxOutputBytes is the cap on any tool output given to the model. It
// is also the hard ceiling: config may only lower it.
const DefaultMaxOutputBytes = 65536

// ---- output cap ----

// truncationMarker is appended when output is cut at limit bytes.
func truncationMarker(limit int) string {
	return fmt.Sprintf("[output truncated at %d bytes]", limit)
}

// capOutput cuts b to at most limit bytes at a UTF-8 rune boundary, makes the
// text valid UTF-8, and appends the truncation marker when it was cut (or
// when truncated says the source had more).
func capOutput(b []byte, limit int, truncated bool) string {
	// The limit is the caller's (maxOut and the executor's cap already hold
	// the 64 KB ceiling); lowering it here cut the paging hint that the
	// executor's slack exists for.
	if limit <= 0 {
		limit = DefaultMaxOutputBytes
	}
	if len(b) > limit {
		b = b[:limit]
		truncated = true
	}
	if truncated && len(b) > 0 {
		// Do not end inside a multi-byte rune: step back to its start.
		i := len(b) - 1
		for i > 0 && i > len(b)-4 && !utf8.RuneStart(b[i]) {
			i--
		}
		if !utf8.FullRune(b[i:]) {
			b = b[:i]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if truncated {
		if !strings.HasSuffix(s, "\n") && s != "" {
			s += "\n"
		}
		s += truncationMarker(limit)
	}
	return s
}

// isBinary applies git's rule: a NUL byte in the first 8000 bytes.
func isBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}

// approverKey carries, in a tool's context, who may approve its effects.
type approverKey struct{}

// approver asks the user before an effect.
type approver interface {
	confirm(ctx context.Context, tool, action, preview string) error
}

func withApprover(ctx context.Context, ap approver) context.Context {
	return context.WithValue(ctx, approverKey{}, ap)
}

// approve asks the approver in ctx; with none, the effect is refused.
func approve(ctx context.Context, tool, action string) error {
	ap, ok := ctx.Value(approverKey{}).(approver)
	if !ok || ap == nil {
		return fmt.Errorf("%w: %s needs approval and there is nobody to ask", ErrDenied, tool)
	}
	return ap.confirm(ctx, tool, action, "")
}
