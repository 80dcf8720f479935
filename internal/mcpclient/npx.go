package mcpclient

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/npxshare"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// npxFetch bounds the one fetch of a server's npx packages (the download
// its first start would have made).
const npxFetch = 2 * time.Minute

// shareNpx is the store of s's npx packages (internal/npxshare), fetched
// at its first start: "" where it has none. Only a server of the user's own
// config is shared: a repository's server fetches its own into its
// workspace's layer, as before. A fetch that fails is said once, and the
// server then fetches its own for the rest of the session.
func (m *Manager) shareNpx(ctx context.Context, s *Server) string {
	if s.npx != "" && s.npx != "-" {
		return s.npx
	}
	pkgs := sharedPackages(s.cfg)
	if s.npx == "-" || pkgs == nil || !npxshare.Shared() {
		s.npx = "-"
		return ""
	}
	fctx, cancel := context.WithTimeout(ctx, npxFetch)
	defer cancel()
	store, err := npxshare.Store(fctx, pkgs, s.cfg.Expanded(s.cfg.Env), m.opts.Policy)
	if err != nil {
		s.npx = "-"
		m.say(s, termtext.Warn, "MCP server "+s.name+": its npx package could not be fetched once for every workspace ("+err.Error()+"); it fetches its own")
		return ""
	}
	s.npx = store
	return store
}

// sharedPackages are the npx packages of cfg that may be shared (nil: none):
// a stdio server of the user's own config only, never a repository's.
func sharedPackages(cfg config.MCPServer) []string {
	if cfg.URL != "" || cfg.FromWorkspace {
		return nil
	}
	return npxshare.Packages(cfg.Command)
}

// below puts store under the npm cache's layer, on a copy of layers.
func below(layers []sandbox.CacheLayer, store string) []sandbox.CacheLayer {
	if store == "" {
		return layers
	}
	home, _ := os.UserHomeDir()
	cache := sandboxpolicy.NpmCache(home)
	out := slices.Clone(layers)
	for i := range out {
		if filepath.Clean(out[i].Lower) == cache {
			out[i].Below = store
		}
	}
	return out
}
