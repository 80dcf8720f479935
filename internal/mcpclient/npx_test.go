package mcpclient

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// A repository's npx server (.mcp.json, confirmed) neither makes nor reads
// the store the user's own servers share: its package's install scripts,
// run with its env:, could otherwise leave a copy that the user's server
// of the same package would run in every workspace. Nor does an HTTP server
// or a command that is not npx.
func TestWorkspaceServerSharesNoNpxStore(t *testing.T) {
	own := config.MCPServer{Command: []string{"npx", "-y", "tiny-mcp"}, Env: map[string]string{"NODE_OPTIONS": "--require ./evil.js"}}
	if got := sharedPackages(own); len(got) != 1 || got[0] != "tiny-mcp" {
		t.Fatalf("your own npx server: %q", got)
	}
	repo := own
	repo.FromWorkspace = true
	for _, cfg := range []config.MCPServer{repo, {URL: "https://mcp.example/mcp"}, {Command: []string{"node", "server.js"}}} {
		if got := sharedPackages(cfg); got != nil {
			t.Errorf("%+v: shares %q", cfg, got)
		}
	}
	if t.Failed() {
		return // shareNpx would start a real fetch
	}
	// Such a server asks nothing of the session and makes no store.
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	m := &Manager{} // no host: asking it anything (the policy, a line) would panic
	s := &Server{name: "s", cfg: repo}
	if got := m.shareNpx(t.Context(), s); got != "" || s.npx != "-" {
		t.Errorf("a repository's server: %q %q", got, s.npx)
	}
	if _, err := os.Stat(filepath.Join(data, "harvey", "npx")); err == nil {
		t.Error("a store was made")
	}
}

// The store goes under the npm cache's layer only, on a copy.
func TestNpxStoreUnderTheNpmCache(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("npm_config_cache", "")
	npm, other := filepath.Join(home, ".npm"), filepath.Join(home, ".cache")
	layers := []sandbox.CacheLayer{{Lower: other}, {Lower: npm + "/"}}
	got := below(layers, "/data/npx/k")
	if got[1].Below != "/data/npx/k" || got[0].Below != "" || layers[1].Below != "" {
		t.Errorf("%+v (from %+v)", got, layers)
	}
	if got := below(layers, ""); &got[0] != &layers[0] {
		t.Error("no store: the layers are not as they were")
	}
}
