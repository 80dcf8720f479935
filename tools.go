package harvey

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/mcpclient"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/usertools"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// toolSet is what the model is offered: the registry (built-in tools, user
// tools from agents/tools, MCP tools) and where each came from.
type toolSet struct {
	Tools        *ToolRegistry
	cfg          *configfile.File  // the session's config: max_tools and each server's models:
	userTools    []string          // names registered from agents/tools
	userDefs     []*usertools.Tool // what those files say, in the same order
	ownTools     []string          // names registered from your own tools directory (usertools.go: ownToolsDir)
	async        map[string]bool   // the registered tools of yours with async: true
	toolProblems []usertools.Problem
	mcp          *mcpclient.Manager // MCP servers (internal/mcpclient); nil until started
}

// ToolHandler executes a named tool and returns its result as a string.
type ToolHandler func(ctx context.Context, args map[string]any) (string, error)

// toolResult is what a tool returns: Text for the model, Summary for the
// user's "✓" line (empty: the first line of Text), so no summary is ever
// parsed back out of the text.
type toolResult struct {
	Text, Summary string
	// Failed: the call ran and what it ran failed (a command's non-zero
	// exit, a timeout): the user's line shows ✗, never ✓.
	Failed bool
	// Notes are lines for the user (and --output) beside the summary: the
	// files a command changed in the workspace, what the check after it
	// undid, the sandbox rule that stopped it. The model reads them in Text.
	Notes []string
	// Response is the result as Claude Code's hooks read tool_response
	// (Bash: stdout, stderr, interrupted); nil: Harvey's own shape.
	Response map[string]any
	// Class is how it ended where Failed does not say (internal/toolclass:
	// a command that timed out); "" for the rest.
	Class string
}

// toolFunc is a tool as the executor runs it.
type toolFunc func(ctx context.Context, call callScope, args map[string]any) (toolResult, error)

// callScope is what the executor passes a tool with each call, explicitly:
// the cap on one result of the turn that made it (0: the main model's).
type callScope struct {
	maxOut  int
	streams bool // keep a command's stdout and stderr apart (a post_tool hook reads them so)
}

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

// ---- output cap ----

// approver asks the user before an effect (the gate: gate.confirm).
type approver interface {
	confirm(ctx context.Context, tool, action string) error
}

// ToolMode is how the current model gets tools.
type ToolMode string

const (
	ModeSchema ToolMode = "schema" // tools sent as JSON schemas
	ModeProse  ToolMode = "prose"  // tools described in the system prompt
	ModeOff    ToolMode = "off"
)

// callSummary is the one-line description of a call: the path, command,
// pattern or question it acts on; for any other tool (MCP tools too) the
// argument that says what it does — a query, a URL, a name — or its one
// text argument; else the argument names.
func callSummary(name string, args map[string]any) string {
	for _, k := range []string{"path", "command", "pattern", "subcommand", "question", "query", "q", "url", "uri", "file", "filename", "name", "title"} {
		if v, ok := args[k].(string); ok && v != "" {
			return termtext.Clip(summaryOf(k, v, args), 120)
		}
	}
	var only string
	n := 0
	for _, v := range args {
		if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
			only, n = s, n+1
		}
	}
	if n == 1 {
		return termtext.Clip(termtext.Flat(only), 120)
	}
	// No text to show: the values themselves (job_output id=2), not the
	// names alone.
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(args)) {
		parts = append(parts, k+"="+termtext.Clip(termtext.Flat(fmt.Sprint(args[k])), 40))
	}
	return termtext.Clip(strings.Join(parts, " "), 120)
}

// summaryOf is the text a call's key argument k (value v) is shown as.
func summaryOf(k, v string, args map[string]any) string {
	switch k {
	case "subcommand":
		if rest, ok := args["args"].(string); ok && rest != "" {
			return v + " " + rest
		}
	case "pattern":
		if p, ok := args["path"].(string); ok && p != "" {
			return fmt.Sprintf("%q in %s", v, p)
		}
		return fmt.Sprintf("%q", v)
	case "question", "query", "q":
		return fmt.Sprintf("%q", termtext.Flat(v))
	}
	return v
}

func schemaTokensOf(mode ToolMode, tools []anyllm.Tool) int {
	if mode != ModeSchema {
		return 0
	}
	b, _ := json.Marshal(tools)
	return len(b) / 4
}

// offersAsync reports whether tools include an async tool of yours.
func (ts *toolSet) offersAsync(tools []anyllm.Tool) bool {
	for _, t := range tools {
		if ts.async[t.Function.Name] {
			return true
		}
	}
	return false
}
