package mcpclient

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
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

// A server of your own config that a package runner starts starts in a
// directory of its own (issue 75), not the workspace, where npx, uvx or
// python -m would take a repository's copy of its package; "." and "./X"
// in its arguments still name the workspace. A program named by its path,
// and a workspace's server, start in the workspace.
func TestYourServerStartsInADirectoryOfItsOwn(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	yours := config.MCPServer{Command: []string{"npx", "-y", "server-filesystem", "."}}
	d := serverDir(yours)
	if d == "" || !strings.HasPrefix(d, datadir.Path()) {
		t.Fatalf("your server's directory: %q", d)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("not made private: %v %v", fi, err)
	}
	if d2 := serverDir(config.MCPServer{Command: []string{"uvx", "mcp-server-git"}}); d2 == d || d2 == "" {
		t.Errorf("another server's directory: %q", d2)
	}
	for _, argv := range [][]string{{"/usr/local/bin/mcp-git"}, {"sh", "-c", "npx x"}, {"node", "/opt/server.js"}, {"uv", "run", "server"}} {
		if d := serverDir(config.MCPServer{Command: argv}); d != "" {
			t.Errorf("%q, which names its program, starts in %q, not the workspace", argv, d)
		}
	}
	for _, argv := range [][]string{{"pnpm", "dlx", "x"}, {"python3", "-m", "mcp_x"}, {"/usr/bin/npx", "x"}, {"uv", "tool", "run", "x"}} {
		if !runsPackage(argv) {
			t.Errorf("%q runs a package by its name", argv)
		}
	}
	if d := serverDir(config.MCPServer{Command: yours.Command, FromWorkspace: true}); d != "" {
		t.Errorf("a workspace's server starts in %q", d)
	}
	got := inWorkspace([]string{".", "-y", ".", "./notes", "../up", ".hidden"}, "/ws")
	if want := []string{".", "-y", "/ws", "/ws/notes", "../up", ".hidden"}; !slices.Equal(got, want) {
		t.Errorf("arguments: %q, want %q", got, want)
	}
}
