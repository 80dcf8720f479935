package configfile

import (
	"strings"
	"testing"
)

// Codex's TOML is read whole or not at all: a server whose value Harvey
// cannot read as TOML means it (a multi-line args array, an unclosed
// string) is not imported with half a command line; comments, literal
// strings, escapes and inline tables are read as TOML reads them.
func TestCodexServersReadWholeOrNotAtAll(t *testing.T) {
	toml := `model = "o3"
[mcp_servers.time]
command = "uvx" # the runner
args = ["mcp-server-time", '--local-timezone=UTC', "a,b\"c",]
env = { TZ = "UTC", "X-Y" = 'v,w' }

[mcp_servers.multi]
command = "npx"
args = [
  "-y",
  "@modelcontextprotocol/server-filesystem",
]

[mcp_servers.unclosed]
command = "npx
`
	servers, bad := codexServers(toml)
	tm := servers["time"]
	if strings.Join(tm.Command, "|") != `uvx|mcp-server-time|--local-timezone=UTC|a,b"c` || tm.Env["TZ"] != "UTC" || tm.Env["X-Y"] != "v,w" {
		t.Fatalf("time = %+v", tm)
	}
	if _, ok := servers["multi"]; ok || strings.Join(bad, ",") != "multi,unclosed" {
		t.Fatalf("servers %v, not read %v", servers, bad)
	}
}
