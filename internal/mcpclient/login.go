package mcpclient

import (
	"context"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/mcpauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Login connects to the HTTP server name as harvey mcp login does: its
// OAuth logs in without asking (the browser, or the address pasted back),
// the connection is tried once more with the new token, and the session
// is closed. loggedIn says whether a login happened (false: a kept token,
// or none needed).
func Login(ctx context.Context, host Host, version, name string, cfg config.MCPServer) (loggedIn bool, err error) {
	m := &Manager{host: host, login: true, opts: Options{Version: version}}
	t, _, err := m.transport(name, cfg, "")
	if err != nil {
		return false, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "harvey", Version: version}, nil)
	session, err := client.Connect(ctx, t, nil)
	sa := mcpauth.Of(t)
	if err != nil && sa != nil && sa.LoggedIn() {
		session, err = client.Connect(ctx, t, nil)
	}
	if err != nil {
		return false, err
	}
	session.Close()
	return sa != nil && sa.LoggedIn(), nil
}
