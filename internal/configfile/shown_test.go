package configfile

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
)

// A hook in a line: its event, tools and command as a shell would split it;
// a server: what it runs (sandboxed) or where it connects, its headers
// redacted.
func TestShown(t *testing.T) {
	h := config.HookConfig{Event: config.HookPre, Match: "run_command", Command: config.HookArgv{"./check.sh", "a b"}}
	if got := HookShown(h); got != `pre_tool run_command: ./check.sh "a b"` {
		t.Errorf("HookShown: %q", got)
	}
	if got := HookShown(config.HookConfig{Event: config.HookPrompt, Command: config.HookArgv{"x"}}); got != "user_prompt: x" {
		t.Errorf("HookShown: %q", got)
	}
	s := config.MCPServer{URL: "https://docs.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ghp_0123456789abcdefghijABCDEFGHIJ012345"}}
	if got := DescribeServer(s); !strings.HasPrefix(got, "connects to https://docs.example.com/mcp sending headers Authorization: ") || strings.Contains(got, "ghp_0123456789") {
		t.Errorf("DescribeServer: %q", got)
	}
	// A workspace's ${VAR} is sent as written, and its line says so.
	own := config.MCPServer{URL: "https://mcp.example/", Headers: map[string]string{"Authorization": "Bearer ${HARVEY_TEST_TOKEN}"}}
	m := map[string]config.MCPServer{"x": own}
	config.MarkWorkspace(m)
	if ws := m["x"]; !strings.Contains(DescribeServer(ws), "sent as written") || strings.Contains(DescribeServer(own), "sent as written") {
		t.Errorf("describe: %s / %s", DescribeServer(ws), DescribeServer(own))
	}
}
