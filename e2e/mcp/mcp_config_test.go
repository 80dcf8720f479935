// Feature: MCP configuration — workspace .mcp.json files and the server
// config (mcp_config.go), and harvey mcp add, remove and import (internal/mcpcli).
package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
)

// harvey mcp add / remove / import, through the built binary: the user's
// config keeps its comments; import finds Claude Desktop's, Claude Code's
// (top level and per project), Cursor's and Codex's servers.
func TestEndToEndMCPAddRemoveImport(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	home, cfg, dir := t.TempDir(), t.TempDir(), t.TempDir()
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", "# my settings\nmodel: llama3.2 # the small one\n")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + cfg}
	run := func(args ...string) (string, string, int) { return e2e.RunEnv(t, bin, dir, "", env, args...) }
	// A server on a path of your home the sandbox does not show is said at
	// once, with the setting (issue 62); a path it shows is not.
	os.MkdirAll(filepath.Join(home, "notes"), 0o755)
	if _, errOut, _ := run("mcp", "add", "notes", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "~/notes"); !strings.Contains(errOut, "names ~/notes, which the sandbox does not show its programs") || !strings.Contains(errOut, "sandbox: {readable: [~/notes]}") {
		t.Errorf("no word of a hidden path: %s", errOut)
	}
	run("mcp", "remove", "notes")
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", e2e.ReadText(t, filepath.Join(cfg, "harvey", "harvey.yaml"))+"sandbox:\n  readable: [~/notes]\n")
	if _, errOut, _ := run("mcp", "add", "notes", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", filepath.Join(home, "notes")); strings.Contains(errOut, "does not show") {
		t.Errorf("a path the sandbox shows was warned about: %s", errOut)
	}
	run("mcp", "remove", "notes")
	if out, errOut, code := run("mcp", "add", "fs", "--env", "ROOT=/data", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"); code != 0 || !strings.Contains(out, "added MCP server fs") {
		t.Fatalf("add: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := run("mcp", "add", "docs", "--url", "https://docs.example.com/mcp", "--header", "Authorization=Bearer ${DOCS_TOKEN}"); code != 0 {
		t.Fatalf("add --url: %d %s", code, errOut)
	}
	if _, _, code := run("mcp", "add", "x"); code != 2 {
		t.Fatalf("add without a command: %d", code)
	}
	data, _ := os.ReadFile(filepath.Join(cfg, "harvey", "harvey.yaml"))
	if !strings.Contains(string(data), "# my settings") || !strings.Contains(string(data), "# the small one") {
		t.Fatalf("comments lost:\n%s", data)
	}
	var c config.Config
	if err := yaml.Unmarshal(data, &c); err != nil || strings.Join(c.MCP.Servers["fs"].Command, " ") != "npx -y @modelcontextprotocol/server-filesystem /data" ||
		c.MCP.Servers["fs"].Env["ROOT"] != "/data" || c.MCP.Servers["docs"].Headers["Authorization"] != "Bearer ${DOCS_TOKEN}" || c.Model != "llama3.2" {
		t.Fatalf("config:\n%s", data)
	}
	if _, errOut, code := run("mcp", "remove", "fs"); code != 0 {
		t.Fatalf("remove: %s", errOut)
	}
	if _, _, code := run("mcp", "remove", "fs"); code != 1 {
		t.Fatal("removing twice succeeded")
	}
	run("mcp", "remove", "docs") // nothing here reaches the network
	// add, then list: the server runs (the test binary plays it).
	if _, errOut, code := run("mcp", "add", "t", "--env", "HARVEY_TEST_HELPER=mcp-server", "--", os.Args[0]); code != 0 {
		t.Fatalf("add t: %s", errOut)
	}
	if out, errOut, code := run("mcp", "list"); code != 0 || !strings.Contains(out, "t: running, 6 tools") {
		t.Fatalf("list after add: %d %s %s", code, out, errOut)
	}
	e2e.WriteFile(t, home, ".config/Claude/claude_desktop_config.json", `{"mcpServers": {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}}`)
	e2e.WriteFile(t, home, ".claude.json", `{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}, "projects": {"/src/app": {"mcpServers": {"pg": {"command": "pg-mcp", "env": {"PGHOST": "db"}}}}}}`)
	e2e.WriteFile(t, home, ".cursor/mcp.json", `{"mcpServers": {"remote": {"url": "https://mcp.example.com/mcp"}}}`)
	e2e.WriteFile(t, home, ".codex/config.toml", "model = \"o3\"\n\n[mcp_servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\", \"--local-timezone=UTC\"]\n\n[mcp_servers.time.env]\nTZ = \"UTC\"\n")
	out, _, code := run("mcp", "import")
	for _, want := range []string{"Claude Desktop", "everything", "Claude Code", "memory", "Claude Code (/src/app)", "pg", "Cursor", "remote", "Codex", "time", "uvx mcp-server-time --local-timezone=UTC"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("import lists (%d), lacks %q:\n%s", code, want, out)
		}
	}
	if _, errOut, code := run("mcp", "import", "time", "pg", "remote"); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	data, _ = os.ReadFile(filepath.Join(cfg, "harvey", "harvey.yaml"))
	c = config.Config{}
	yaml.Unmarshal(data, &c)
	if c.MCP.Servers["time"].Env["TZ"] != "UTC" || c.MCP.Servers["time"].Command[0] != "uvx" || c.MCP.Servers["pg"].Env["PGHOST"] != "db" || c.MCP.Servers["remote"].URL != "https://mcp.example.com/mcp" {
		t.Fatalf("imported:\n%s", data)
	}
}
