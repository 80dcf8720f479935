package harvey

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP in the session: starting the configured servers, /mcp, a server's
// prompts as /SERVER:PROMPT, and the progress line while a call runs. The
// client side of the protocol is mcp.go.

// startMCP starts every enabled server and registers its tools; a server
// that fails is reported in one line and the session goes on.
func (a *Agent) startMCP(ctx context.Context) {
	if len(a.Config.MCP.Servers) == 0 {
		return
	}
	a.mcp = &mcpManager{term: &a.Terminal, ws: a.Workspace, tools: a.Tools, cfg: a.Config, gate: a.gate, servers: map[string]*mcpServer{}, timeout: mcpTimeout}
	names := make([]string, 0, len(a.Config.MCP.Servers))
	for n := range a.Config.MCP.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cfg := a.Config.MCP.Servers[n]
		if !cfg.IsEnabled() {
			continue
		}
		s := &mcpServer{name: n, cfg: cfg}
		a.mcp.servers[n] = s
		if cfg.Lazy {
			s.state = "not started yet (lazy)"
			continue
		}
		if err := a.mcp.connect(ctx, s); err != nil {
			a.logf("%s", a.colorize("33", fmt.Sprintf("warning: MCP server %s: %s", n, termtext.OneLine(err.Error()))))
			continue
		}
		a.mcp.register(s)
	}
}

// cmdMCP is /mcp: servers, state, tools and what they add to the prompt;
// /mcp restart NAME.
func cmdMCP(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if a.mcp == nil || len(a.mcp.servers) == 0 {
		fmt.Fprintln(out, "no MCP servers configured (mcp: servers: in your config; see README)")
		return nil
	}
	if len(args) == 2 && args[0] == "restart" {
		s, ok := a.mcp.servers[args[1]]
		if !ok {
			return fmt.Errorf("no MCP server %q", args[1])
		}
		for _, t := range s.tools {
			a.Tools.Unregister(s.name + mcpNameSep + t.Name)
		}
		s.restarts = 0
		if err := a.mcp.connect(ctx, s); err != nil {
			return fmt.Errorf("MCP server %s: %v", s.name, err)
		}
		a.mcp.register(s)
		fmt.Fprintf(out, "%s restarted: %s\n", s.name, termtext.Plural(len(s.tools), "tool"))
		return nil
	}
	if len(args) > 0 {
		return a.commands.usageError("mcp")
	}
	a.mcp.startLazy(ctx)
	names := make([]string, 0, len(a.mcp.servers))
	for n := range a.mcp.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := a.mcp.servers[n]
		s.mu.Lock()
		var toks int
		for _, t := range s.tools {
			if tool, _, ok := a.Tools.GetTool(n + mcpNameSep + t.Name); ok {
				b, _ := json.Marshal(tool)
				toks += len(b) / 4
			}
		}
		fmt.Fprintf(out, "%s: %s, %s, ~%d prompt tokens\n", n, termtext.Sanitize(s.state), termtext.Plural(len(s.tools), "tool"), toks)
		for _, t := range s.tools {
			fmt.Fprintf(out, "  %s%s%s — %s\n", n, mcpNameSep, termtext.Sanitize(t.Name), termtext.Sanitize(termtext.FirstLine(t.Description)))
		}
		s.mu.Unlock()
	}
	if a.ModelName != "" {
		for _, l := range a.offerLines(a.ModelName, a.window(a.Client)) {
			fmt.Fprintln(out, termtext.Sanitize(l))
		}
	}
	for _, n := range names {
		for _, p := range a.mcp.servers[n].prompts {
			fmt.Fprintf(out, "prompt /%s:%s — %s\n", n, termtext.Sanitize(p.Name), termtext.Sanitize(termtext.FirstLine(p.Description)))
		}
	}
	return nil
}

// runMCPPrompt runs /SERVER:PROMPT [ARG=VALUE | VALUE]...: the server's
// prompt, filled with the arguments (by name, or in the order the prompt
// declares them), becomes the user's next request to the model.
func (a *Agent) runMCPPrompt(ctx context.Context, server, name string, args []string) error {
	session, prompt, err := a.mcp.prompt(server, name)
	if err != nil {
		return err
	}
	values, err := promptValues("/"+server+":"+name, prompt, args)
	if err != nil {
		return err
	}
	res, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: values})
	if err != nil {
		return fmt.Errorf("MCP server %s: prompt %s: %v", server, name, err)
	}
	var b strings.Builder
	for _, m := range res.Messages {
		if t, ok := m.Content.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(t.Text)
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return fmt.Errorf("MCP server %s: prompt %s gave no text", server, name)
	}
	return a.chatTurn(ctx, b.String())
}

// prompt finds a running server's prompt (m may be nil: no server).
func (m *mcpManager) prompt(server, name string) (*mcp.ClientSession, *mcp.Prompt, error) {
	var s *mcpServer
	if m != nil {
		s = m.servers[server]
	}
	if s == nil {
		return nil, nil, fmt.Errorf("unknown command /%s:%s; no MCP server %q (see /mcp)", server, name, server)
	}
	s.mu.Lock()
	session := s.session
	var prompt *mcp.Prompt
	for _, p := range s.prompts {
		if p.Name == name {
			prompt = p
		}
	}
	s.mu.Unlock()
	if session == nil || prompt == nil {
		return nil, nil, fmt.Errorf("MCP server %s has no prompt %q (see /mcp)", server, name)
	}
	return session, prompt, nil
}

// promptValues reads a prompt's arguments, by name (NAME=VALUE) or in the
// order the prompt declares them; every required one must be given. An
// error says what the command (cmd, /SERVER:PROMPT) takes.
func promptValues(cmd string, prompt *mcp.Prompt, args []string) (map[string]string, error) {
	values := map[string]string{}
	pos := 0
	for _, arg := range args {
		if k, v, ok := strings.Cut(arg, "="); ok && slices.ContainsFunc(prompt.Arguments, func(pa *mcp.PromptArgument) bool { return pa.Name == k }) {
			values[k] = v
			continue
		}
		for pos < len(prompt.Arguments) && values[prompt.Arguments[pos].Name] != "" {
			pos++
		}
		if pos >= len(prompt.Arguments) {
			return nil, fmt.Errorf("%s takes %s", cmd, promptUsage(prompt))
		}
		values[prompt.Arguments[pos].Name] = arg
	}
	for _, pa := range prompt.Arguments {
		if pa.Required && values[pa.Name] == "" {
			return nil, fmt.Errorf("%s needs %s; usage: %s %s", cmd, pa.Name, cmd, promptUsage(prompt))
		}
	}
	return values, nil
}

// promptUsage lists a prompt's arguments: NAME=VALUE, [OPTIONAL=VALUE].
func promptUsage(p *mcp.Prompt) string {
	var parts []string
	for _, pa := range p.Arguments {
		if pa.Required {
			parts = append(parts, pa.Name+"=VALUE")
		} else {
			parts = append(parts, "["+pa.Name+"=VALUE]")
		}
	}
	if len(parts) == 0 {
		return "no arguments"
	}
	return strings.Join(parts, " ")
}
