package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// A workspace's config as a session meets it: its plain settings apply,
// what would send or loosen waits (Gated) with the .mcp.json servers, a
// confirmation applies them and is remembered for the same bytes only; a
// broken file is never saved over.
func TestWorkspaceConfigFlow(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o755)
	os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte("# the team's\nmodel: mistral\nollama_url: http://127.0.0.2:9\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers":{"fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","."]}}}`), 0o644)
	open := func() (*wspath.Tree, *File) {
		ws, err := wspath.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		cf, err := Load(ws)
		if err != nil {
			t.Fatal(err)
		}
		return ws, cf
	}
	ws, cf := open()
	if cf.Model != "mistral" || cf.OllamaURL == "http://127.0.0.2:9" || len(cf.MCP.Servers) != 0 {
		t.Fatalf("unconfirmed: model %q, url %q, servers %v", cf.Model, cf.OllamaURL, cf.MCP.Servers)
	}
	names := GatedNames(cf.Gated)
	if !strings.Contains(strings.Join(names, " "), "ollama_url") || !strings.Contains(strings.Join(names, " "), MCPFilesKey) {
		t.Fatalf("gated: %v", names)
	}
	if s := GatedSummary(cf.Gated); s == "" {
		t.Error("no summary of what waits")
	}
	if d := DescribeServers(map[string]config.MCPServer{"fs": {Command: []string{"npx", "-y", "x"}}}); !strings.Contains(d, "npx -y x") {
		t.Errorf("DescribeServers: %q", d)
	}
	if err := cf.AcceptWorkspace(ws.Root); err != nil {
		t.Fatal(err)
	}
	if cf.OllamaURL != "http://127.0.0.2:9" || cf.MCP.Servers["fs"].Command[0] != "npx" || !cf.MCP.Servers["fs"].FromWorkspace {
		t.Fatalf("confirmed: %q %v", cf.OllamaURL, cf.MCP.Servers)
	}
	if _, cf = open(); len(cf.Gated) != 0 || cf.OllamaURL != "http://127.0.0.2:9" {
		t.Errorf("the next session asked again: %v", GatedNames(cf.Gated))
	}
	os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte("model: mistral\nollama_url: http://127.0.0.3:9\n"), 0o644)
	if _, cf = open(); len(cf.Gated) == 0 {
		t.Error("a changed file was trusted")
	}
	cf.DeclineWorkspace()

	// A file that does not parse: the defaults, its line, and no save.
	os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte("model: [\n"), 0o644)
	ws2, _ := wspath.Open(dir)
	defer ws2.Close()
	cf2, err := Load(ws2)
	if err == nil || !strings.Contains(err.Error(), "line") {
		t.Fatalf("a broken file: %v", err)
	}
	if err := cf2.Save(ws2); err == nil {
		t.Error("saved over a file that did not load")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "agents", "harvey.yaml")); string(b) != "model: [\n" {
		t.Errorf("the broken file was changed: %q", b)
	}
}

// Your own config edited in place: a server added, replaced and removed,
// every comment and other key kept.
func TestEditUserConfig(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	p := filepath.Join(cfgHome, "harvey", "harvey.yaml")
	os.MkdirAll(filepath.Dir(p), 0o700)
	os.WriteFile(p, []byte("# mine\nmodel: llama3.2 # small\n"), 0o600)
	if _, err := SetServer("fs", config.MCPServer{Command: []string{"npx", "-y", "fs"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := SetServer("fs", config.MCPServer{URL: "https://x/mcp"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "# mine") || !strings.Contains(string(b), "# small") || !strings.Contains(string(b), "url: https://x/mcp") || strings.Contains(string(b), "npx") {
		t.Fatalf("after set:\n%s", b)
	}
	cfg, _, err := LoadUser()
	if err != nil || cfg.MCP.Servers["fs"].URL != "https://x/mcp" || cfg.Model != "llama3.2" {
		t.Fatalf("%+v %v", cfg, err)
	}
	if _, err := RemoveServer("fs"); err != nil {
		t.Fatal(err)
	}
	if _, err := RemoveServer("fs"); err == nil {
		t.Error("removed a server that is not there")
	}
	if _, err := SaveUserModel("mistral"); err != nil {
		t.Fatal(err)
	}
	if cfg, _, _ := LoadUser(); cfg.Model != "mistral" || len(cfg.MCP.Servers) != 0 {
		t.Errorf("%+v", cfg)
	}
}

// The servers other clients name: Claude Desktop's, Claude Code's (top
// level and per project), Cursor's, Codex's.
func TestImportSources(t *testing.T) {
	home := t.TempDir()
	write := func(rel, body string) {
		os.MkdirAll(filepath.Join(home, filepath.Dir(rel)), 0o755)
		os.WriteFile(filepath.Join(home, rel), []byte(body), 0o644)
	}
	write(".config/Claude/claude_desktop_config.json", `{"mcpServers":{"time":{"command":"uvx","args":["mcp-server-time"]}}}`)
	write(".claude.json", `{"mcpServers":{"git":{"command":"uvx","args":["mcp-server-git"]}},"projects":{"/p":{"mcpServers":{"pg":{"command":"npx","args":["pg"]}}}}}`)
	write(".cursor/mcp.json", `{"mcpServers":{"remote":{"url":"https://r/mcp"}}}`)
	write(".codex/config.toml", "[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs\"]\n")
	var got []string
	for _, s := range ImportSources(home) {
		for n := range s.Servers {
			got = append(got, s.Client+":"+n)
		}
	}
	want := "Claude Desktop:time Claude Code:git Claude Code (/p):pg Cursor:remote Codex:docs"
	if strings.Join(got, " ") != want {
		t.Errorf("%v, want %s", got, want)
	}
}

// A confirmation covers exactly what it showed (issue 75): a repository's
// server that your own config shadowed, or that it switched off, is not in
// the question and does not run; when you remove yours, it is asked about
// before it runs, in agents/harvey.yaml and in .mcp.json alike; a server's
// read_only: is in the question.
func TestConfirmationCoversWhatItShowed(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	yours := "mcp:\n  servers:\n    github:\n      command: [my-github-mcp]\n    notes:\n      command: [my-notes]\n"
	os.MkdirAll(filepath.Join(cfgHome, "harvey"), 0o700)
	os.WriteFile(filepath.Join(cfgHome, "harvey", "harvey.yaml"), []byte(yours), 0o600)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o755)
	os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte("mcp:\n  servers:\n    github:\n      command: [sh, -c, planted]\n    off:\n      command: [sh, -c, off]\n      enabled: false\n    notes2:\n      command: [notes-mcp]\n      read_only: [save_note]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers":{"notes":{"command":"sh","args":["-c","hidden"]},"fs":{"command":"fs-mcp"}}}`), 0o644)
	load := func() *File {
		ws, err := wspath.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		cf, err := Load(ws)
		if err != nil {
			t.Fatal(err)
		}
		return cf
	}
	cf := load()
	shown := GatedSummary(cf.Gated)
	for _, hidden := range []string{"planted", "off", "hidden"} {
		if strings.Contains(shown, hidden) {
			t.Errorf("the question shows %q, which would not run: %s", hidden, shown)
		}
	}
	if !strings.Contains(shown, "save_note run without asking (read_only)") || !strings.Contains(shown, "fs-mcp") {
		t.Errorf("the question does not show the server's read_only: or the .mcp.json server: %s", shown)
	}
	if err := cf.AcceptWorkspace(dir); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"github": "my-github-mcp", "notes": "my-notes", "notes2": "notes-mcp", "fs": "fs-mcp"} {
		if s := cf.MCP.Servers[n]; len(s.Command) == 0 || s.Command[0] != want {
			t.Errorf("confirmed: %s is %v", n, s.Command)
		}
	}
	if _, ok := cf.MCP.Servers["off"]; ok {
		t.Error("a server switched off was taken")
	}
	// You remove yours: what they shadowed is asked about, and does not run
	// meanwhile.
	os.WriteFile(filepath.Join(cfgHome, "harvey", "harvey.yaml"), []byte("model: llama3.2\n"), 0o600)
	cf = load()
	shown = GatedSummary(cf.Gated)
	if !strings.Contains(shown, "planted") || !strings.Contains(shown, "hidden") {
		t.Errorf("the servers yours shadowed are not asked about: %s", shown)
	}
	if s, ok := cf.MCP.Servers["github"]; ok {
		t.Errorf("the repository's github server runs unasked: %v", s.Command)
	}
	if s, ok := cf.MCP.Servers["notes"]; ok {
		t.Errorf("the .mcp.json notes server runs unasked: %v", s.Command)
	}
}
