package mcpcli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/configfile"
	"gopkg.in/yaml.v3"
)

// harvey mcp add writes the grants' settings as a person would write them.
func TestMCPAddGrantFlags(t *testing.T) {
	s, err := ParseAdd([]string{"--url", "https://x.example/mcp", "--client-id", "c", "--idp-issuer", "https://idp.example", "--idp-client-id", "h", "--id-token-command", "gcloud auth print-identity-token"})
	if err != nil || s.OAuth.Enterprise == nil || s.OAuth.Enterprise.IdPIssuer != "https://idp.example" || s.OAuth.GrantKind() != "enterprise" {
		t.Fatalf("%+v %v", s.OAuth, err)
	}
	b, _ := yaml.Marshal(s)
	if !strings.Contains(string(b), "id_token_command: gcloud auth print-identity-token") {
		t.Errorf("written as:\n%s", b)
	}
	if _, err := ParseAdd([]string{"--url", "https://x.example/mcp", "--client-id", "c", "--idp-client-id", "h"}); err == nil {
		t.Error("an identity provider with no issuer")
	}
	if s, err := ParseAdd([]string{"--url", "https://x.example/mcp", "--client-id", "c", "--workload-token", "/var/run/secrets/tokens/mcp"}); err != nil || s.OAuth.GrantKind() != "workload" {
		t.Errorf("%+v %v", s.OAuth, err)
	}
	// A client ID metadata document stands in for a client ID.
	cimd := "https://harvey.example/oauth/client.json"
	if s, err := ParseAdd([]string{"--url", "https://x.example/mcp", "--client-metadata-url", cimd, "--issuer", "https://as.example"}); err != nil || s.OAuth.ClientMetadataURL != cimd || s.OAuth.ClientID != "" {
		t.Errorf("%+v %v", s.OAuth, err)
	} else if b, _ := yaml.Marshal(s); !strings.Contains(string(b), "client_metadata_url: "+cimd) {
		t.Errorf("written as:\n%s", b)
	}
	for _, bad := range [][]string{
		{"--client-metadata-url", "http://harvey.example/client.json"},
		{"--client-metadata-url", "https://harvey.example"},
		{"--client-metadata-url", "https://harvey.example/client.json#me"},
		{"--client-metadata-url", cimd, "--client-id", "c"},
		{"--client-metadata-url", cimd, "--client-secret", "s"},
	} {
		if _, err := ParseAdd(append([]string{"--url", "https://x.example/mcp"}, bad...)); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
}

// add, import and remove, as a user runs them in a fresh home: the config
// written where LoadUser reads it, a server Cursor names found and
// imported by name, a stdio server that names a path of the home the
// sandbox does not show said at once with the setting, and removed.
func TestAddImportRemove(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	os.MkdirAll(filepath.Join(home, ".cursor"), 0o755)
	os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"), []byte(`{"mcpServers": {"notes": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "~/notes"]}}}`), 0o644)
	run := func(f func([]string, io.Writer, io.Writer) int, args ...string) (string, string, int) {
		var out, errOut strings.Builder
		code := f(args, &out, &errOut)
		return out.String(), errOut.String(), code
	}
	out, _, code := run(Import)
	if code != 0 || !strings.Contains(out, "Cursor") || !strings.Contains(out, "notes") {
		t.Fatalf("import lists %d:\n%s", code, out)
	}
	out, errOut, code := run(Import, "notes")
	if code != 0 || !strings.Contains(out, "added MCP server notes") {
		t.Fatalf("import notes %d:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "~/notes") || !strings.Contains(errOut, "sandbox: {readable: [~/notes]}") {
		t.Errorf("no word of the hidden ~/notes:\n%s", errOut)
	}
	if _, errOut, code := run(Import, "absent"); code != 1 || !strings.Contains(errOut, `no MCP server "absent"`) {
		t.Errorf("import absent %d: %s", code, errOut)
	}
	if out, errOut, code := run(Add, "web", "--url", "https://x.example/mcp", "--header", "X-Team=core"); code != 0 || errOut != "" || !strings.Contains(out, "added MCP server web") {
		t.Errorf("add web %d:\n%s%s", code, out, errOut)
	}
	for _, bad := range [][]string{{}, {"a__b", "--url", "https://x.example"}, {"x", "--header", "novalue", "--url", "https://x.example"}, {"x"}} {
		if _, _, code := run(Add, bad...); code != 2 {
			t.Errorf("add %q: %d", bad, code)
		}
	}
	cfg, _, err := configfile.LoadUser()
	if err != nil || cfg.MCP.Servers["notes"].Command[0] != "npx" || cfg.MCP.Servers["web"].Headers["X-Team"] != "core" {
		t.Fatalf("config read back: %v %+v", err, cfg.MCP.Servers)
	}
	if out, _, code := run(Remove, "notes"); code != 0 || !strings.Contains(out, "removed MCP server notes") {
		t.Errorf("remove %d: %s", code, out)
	}
	if _, _, code := run(Remove); code != 2 {
		t.Errorf("remove with no name: %d", code)
	}
	if cfg, _, _ := configfile.LoadUser(); len(cfg.MCP.Servers) != 1 {
		t.Errorf("after remove: %+v", cfg.MCP.Servers)
	}
}
