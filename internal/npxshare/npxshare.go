// Package npxshare fetches an npx MCP server's packages once per user,
// rather than once in every workspace (issue 62: 8 s and 54 MB each).
//
// The contract:
//   - Packages reads a server's command line as npx reads it, and names
//     the registry packages it would install: `npx [-y] PKG[@VER] ARGS`,
//     or `npx [-y] -p PKG... [--] CMD ARGS`. Any other option, a path, a
//     git or tarball URL or an alias (anything that is not NAME[@RANGE])
//     shares nothing: the server fetches its own, as before.
//   - Store fetches them (`npx --yes --package=PKG... -- true`) in the
//     sandbox, as a command of the user's, into a store that is the fetch's
//     whole workspace and its npm cache: DATA/npx/KEY, where KEY covers the
//     packages and every setting of the server's env:. The user's npm
//     settings apply; no repository's .npmrc is in view (the fetch's
//     working directory is the store). The store is renamed into place
//     only once complete, so a failed fetch leaves nothing, and is never
//     written again.
//   - Every workspace's server then sees the store read-only, as a layer
//     below its npm cache (sandbox.CacheLayer.Below): what npx finds there
//     (_npx/HASH, the tarballs) it does not download, and what the server
//     writes goes to its own workspace's layer.
//   - Only servers of the user's own config are shared (the caller's
//     rule): a repository's server could otherwise leave, through its
//     package's install scripts and its env:, a copy that the user's own
//     server of the same package would run in every workspace.
//   - Only where the sandbox has namespaces (overlays). With Landlock only
//     each workspace's server keeps fetching its own.
package npxshare

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/lazyre"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// registrySpec is NAME or @SCOPE/NAME, with an optional @VERSION, @RANGE
// or @TAG: what npm-package-arg reads as a registry package. Paths, URLs
// (a ':'), aliases (npm:) and ranges with spaces are left out.
var registrySpec = lazyre.New(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*(@[A-Za-z0-9._~^<>=|*+-]+)?$`)

// Packages is what npx would install for argv (a server's command), or
// nil where it is not only registry packages read as npx reads them.
func Packages(argv []string) []string {
	if len(argv) < 2 || filepath.Base(argv[0]) != "npx" {
		return nil
	}
	var pkgs []string
	explicit := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-y" || a == "--yes":
		case a == "-p" || a == "--package":
			if i+1 >= len(argv) {
				return nil
			}
			i++
			pkgs, explicit = append(pkgs, argv[i]), true
		case strings.HasPrefix(a, "--package="):
			pkgs, explicit = append(pkgs, strings.TrimPrefix(a, "--package=")), true
		case a == "--":
			if !explicit || i+1 >= len(argv) {
				return nil // npx -- PKG: read as the package, which is rare; not shared
			}
			return checked(pkgs)
		case strings.HasPrefix(a, "-"):
			return nil // another option of npm's: it may change what is fetched
		default:
			if !explicit {
				pkgs = append(pkgs, a) // the first positional is the package
			}
			return checked(pkgs) // npx reads no option after the first positional
		}
	}
	return nil
}

func checked(pkgs []string) []string {
	for _, p := range pkgs {
		if !registrySpec().MatchString(p) {
			return nil
		}
	}
	return pkgs
}

// Key names the store of pkgs fetched with env (the server's env:
// settings, expanded): another setting is another store.
func Key(pkgs []string, env map[string]string) string {
	h := sha256.New()
	sorted := slices.Clone(pkgs)
	sort.Strings(sorted)
	for _, p := range sorted {
		fmt.Fprintf(h, "package %q\n", p)
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "env %q=%q\n", k, env[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// Dir is where the stores are kept ("" with no data directory).
func Dir() string {
	if d := datadir.Path(); d != "" {
		return filepath.Join(d, "npx")
	}
	return ""
}

// Shared reports whether this machine's sandbox can share a store: one
// that is enforced, with namespaces (an overlay's lower layer).
func Shared() bool {
	s := sandbox.Available()
	return s.Enforced() && s.NS
}

// Store is the store of pkgs for a server with env (its env: settings,
// expanded), fetched first if it is not there yet; policy is the user's
// sandbox: block. A fetch that fails leaves nothing and says why.
func Store(ctx context.Context, pkgs []string, env map[string]string, policy config.SandboxPolicy) (string, error) {
	dir := Dir()
	if dir == "" || len(pkgs) == 0 || !Shared() {
		return "", errors.New("no store here")
	}
	final := filepath.Join(dir, Key(pkgs, env))
	if fi, err := os.Stat(final); err == nil && fi.IsDir() {
		return final, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	defer os.RemoveAll(filepath.Join(datadir.Path(), "caches", datadir.Key(tmp))) // the fetch's own cache layers
	if err := fetch(ctx, tmp, pkgs, env, policy); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(tmp, "_npx")); err != nil {
		return "", errors.New("npx installed nothing")
	}
	os.RemoveAll(filepath.Join(tmp, "_logs"))
	if err := os.Rename(tmp, final); err != nil {
		if fi, serr := os.Stat(final); serr == nil && fi.IsDir() {
			return final, nil // another session's fetch came first
		}
		return "", err
	}
	return final, nil
}

// fetch runs npx in the sandbox with tmp as its workspace, working
// directory and npm cache.
func fetch(ctx context.Context, tmp string, pkgs []string, env map[string]string, policy config.SandboxPolicy) error {
	spec := sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: tmp, Policy: policy, Purpose: "npx"})
	argv := []string{"npx", "--yes"}
	for _, p := range pkgs {
		argv = append(argv, "--package="+p)
	}
	vars := runner.BaseEnv()
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	vars = slices.DeleteFunc(vars, func(kv string) bool {
		return strings.HasPrefix(strings.ToLower(kv), "npm_config_cache=")
	})
	vars = append(vars, "npm_config_cache="+tmp, "npm_config_update_notifier=false")
	spec.RO = append(spec.RO, sandboxpolicy.InstallTree("npx")...)
	res := runner.Run(ctx, runner.Proc{Dir: tmp, Argv: append(argv, "--", "true"), Env: vars, Sandbox: spec})
	if err := res.Err; err != nil || res.ExitCode != 0 || res.TimedOut {
		if err == nil {
			err = errors.New(res.Status())
		}
		last := strings.TrimSpace(string(res.Output))
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			last = last[i+1:]
		}
		return fmt.Errorf("npx: %v: %s", err, last)
	}
	return nil
}
