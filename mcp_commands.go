package harvey

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/mcpclient"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// MCP in the session: starting the configured servers, /mcp, a server's
// prompts as /SERVER:PROMPT, and the progress line while a call runs. The
// client side of the protocol is mcp.go.

// startMCP starts every enabled server and registers its tools
// (mcpclient's StartAll). With kept, the session's start: servers start in
// the background and the first turn (or /mcp) waits for them (mcpReady).
func (a *Agent) startMCP(ctx context.Context, kept bool) {
	if len(a.Config.MCP.Servers) > 0 {
		a.mcp = newMCPManager(a)
		a.mcp.StartAll(ctx, a.Config.MCP.Servers, kept)
	}
}

// mcpReady, with wait, waits for the servers still starting in the
// background (a turn, /mcp); once none is left starting it says what the
// servers' tools offer the model (at a session's start, without wait, only
// when none is starting).
func (a *Agent) mcpReady(ctx context.Context, wait bool) {
	if wait && !a.mcp.Await(ctx) || a.mcp.Pending() || a.mcp.Len() == 0 || a.ModelName == "" {
		return
	}
	for _, l := range a.offerLines(a.ModelName, a.window(a.Client)) {
		a.logf("%s", a.dim("· "+l))
	}
}

// newMCPManager is the session's MCP manager, its servers' host the session.
func newMCPManager(a *Agent) *mcpclient.Manager {
	return mcpclient.New(mcpHost{termUI: termUI{&a.Terminal}, gate: a.gate, tools: a.Tools, mcp: func() *mcpclient.Manager { return a.mcp }}, a.Workspace.Root,
		mcpclient.Options{Version: Version, Policy: a.gate.cfg.Sandbox, RunTimeout: time.Duration(a.Config.RunTimeout)})
}

// cmdMCP is /mcp: servers, state, tools and what they add to the prompt;
// /mcp restart NAME.
func cmdMCP(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if a.mcp.Len() == 0 {
		fmt.Fprintln(out, "no MCP servers configured (mcp: servers: in your config; see README)")
		return nil
	}
	a.mcpReady(ctx, true) // the servers still starting first: a restart is of a server that has started
	if len(args) == 2 && args[0] == "restart" {
		s, ok := a.mcp.Server(args[1])
		if !ok {
			return fmt.Errorf("no MCP server %q", args[1])
		}
		for _, t := range s.Tools() {
			a.Tools.Unregister(s.Name() + config.MCPNameSep + t.Name)
		}
		s.Restarted()
		if err := a.mcp.Connect(ctx, s); err != nil {
			return fmt.Errorf("MCP server %s: %v", s.Name(), err)
		}
		registerMCP(a.mcp, a.Tools, &a.Terminal, s)
		fmt.Fprintf(out, "%s restarted: %s\n", s.Name(), termtext.Plural(len(s.Tools()), "tool"))
		return nil
	}
	if len(args) > 0 {
		return a.commands.usageError("mcp")
	}
	a.mcp.StartLazy(ctx)
	names := a.mcp.Names()
	for _, n := range names {
		s, _ := a.mcp.Server(n)
		tools := s.Tools()
		var toks int
		for _, t := range tools {
			if tool, _, ok := a.Tools.GetTool(n + config.MCPNameSep + t.Name); ok {
				b, _ := json.Marshal(tool)
				toks += len(b) / 4
			}
		}
		fmt.Fprintf(out, "%s: %s, %s, ~%d prompt tokens\n", n, termtext.Sanitize(s.State()), termtext.Plural(len(tools), "tool"), toks)
		for _, t := range tools {
			fmt.Fprintf(out, "  %s%s%s — %s\n", n, config.MCPNameSep, termtext.Sanitize(t.Name), termtext.Sanitize(termtext.FirstLine(t.Description)))
		}
	}
	if a.ModelName != "" {
		for _, l := range a.offerLines(a.ModelName, a.window(a.Client)) {
			fmt.Fprintln(out, termtext.Sanitize(l))
		}
	}
	for _, n := range names {
		s, _ := a.mcp.Server(n)
		for _, p := range s.Prompts() {
			fmt.Fprintf(out, "prompt /%s:%s — %s\n", n, termtext.Sanitize(p.Name), termtext.Sanitize(termtext.FirstLine(p.Description)))
		}
	}
	return nil
}

// runMCPPrompt runs /SERVER:PROMPT [ARG=VALUE | VALUE]...: the server's
// prompt, filled with the arguments (by name, or in the order the prompt
// declares them), becomes the user's next request to the model.
func runMCPPrompt(ctx context.Context, a *Agent, server, name string, args []string) error {
	text, err := a.mcp.GetPrompt(ctx, server, name, args)
	if err != nil {
		return err
	}
	return a.chatTurn(ctx, text)
}
