package mcpclient

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// prompt finds a running server's prompt (m may be nil: no server).
func (m *Manager) prompt(server, name string) (*mcp.ClientSession, *mcp.Prompt, error) {
	var s *Server
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

// GetPrompt runs /SERVER:PROMPT [ARG=VALUE | VALUE]...: the server's
// prompt, filled with the arguments (by name, or in the order the prompt
// declares them), as text for the user's next request.
func (m *Manager) GetPrompt(ctx context.Context, server, name string, args []string) (string, error) {
	if m != nil && m.servers[server] != nil {
		if err := m.ensureStarted(ctx, m.servers[server]); err != nil {
			return "", fmt.Errorf("MCP server %s did not start: %v", server, err)
		}
	}
	session, prompt, err := m.prompt(server, name)
	if err != nil {
		return "", err
	}
	values, err := promptValues("/"+server+":"+name, prompt, args)
	if err != nil {
		return "", err
	}
	res, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: values})
	if err != nil {
		return "", fmt.Errorf("MCP server %s: prompt %s: %v", server, name, err)
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
		return "", fmt.Errorf("MCP server %s: prompt %s gave no text", server, name)
	}
	return b.String(), nil
}
