// Package mcpcli is harvey mcp add, remove and import: the user's config
// edited keeping its comments (internal/configfile), a server's flags read
// (an HTTP server's OAuth flags are internal/mcpauth's), and the servers
// other agents' configs already name (Claude Desktop, Claude Code, Cursor,
// Codex's TOML: configfile.ImportSources) brought in by name. A stdio
// server that names a path of the home the sandbox does not show its
// programs is said at once, with the setting that shows it.
//
// Contract: Add, Remove and Import take the arguments after their word and
// return the exit status; ParseAdd is Add's reading of its flags. harvey
// mcp list, login and logout start servers and stay with the session's
// code (the root's cli.go, mcp_oauth.go).
package mcpcli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/mcpauth"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// Usage is harvey mcp's usage.
const Usage = `usage: harvey mcp list
       harvey mcp add NAME [--env K=V]... [--read-only TOOL]... -- COMMAND [ARGS...]
       harvey mcp add NAME --url URL [--header K=V]... [--client-id ID [--client-secret S | --private-key FILE] [--client-credentials]]
                 [--client-metadata-url HTTPS-URL]   your client ID metadata document, instead of a client ID
                 [--issuer URL | --auth-server-metadata-url URL]   the authorization server your credentials go to
                 [--workload-token FILE | --workload-token-command CMD]
                 [--idp-issuer URL --idp-client-id ID [--idp-client-secret S] [--id-token-command CMD]]
       harvey mcp remove NAME
       harvey mcp import [NAME...]     servers in Claude Desktop, Claude Code, Cursor and Codex configs
       harvey mcp login NAME           log in to an HTTP server that uses OAuth (the token is kept for later sessions)
       harvey mcp logout NAME          forget its token`

// Add is `harvey mcp add`.
func Add(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, Usage)
		return 2
	}
	name := args[0]
	if !configfile.ValidServerName(name) {
		fmt.Fprintf(stderr, "harvey: server name %q: use 1 to 32 letters, digits, _ or - (no __)\n", name)
		return 2
	}
	s, err := ParseAdd(args[1:])
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 2
	}
	p, err := configfile.SetServer(name, s)
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "added MCP server %s to %s\n", name, p)
	warnHiddenPaths(name, s, stderr)
	return 0
}

// warnHiddenPaths says, at mcp add and import, which paths of the user's
// home a stdio server names (a filesystem server's ~/notes, a script in
// ~) that the sandbox will not show it, with the setting that does: such
// a server would otherwise fail at every start ("Cannot access
// directory") with nothing said where it was added.
func warnHiddenPaths(name string, s config.MCPServer, stderr io.Writer) {
	if len(s.Command) == 0 {
		return
	}
	home, _ := os.UserHomeDir()
	if home == "" {
		return
	}
	cfg, _, _ := configfile.LoadUser()
	spec := sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: "/nonexistent-workspace", Policy: cfg.Sandbox, Purpose: "mcp-check"})
	seen := append(append(append([]string{}, spec.RO...), spec.RW...), sandboxpolicy.InstallTree(s.Command[0])...)
	var hidden []string
	for _, a := range s.Command {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v // --root=~/notes
		}
		p := datadir.ExpandHome(a, home)
		if !filepath.IsAbs(p) || p == home || !sandbox.Under(p, []string{home}) || sandbox.Under(p, seen) {
			continue
		}
		shown := "~" + strings.TrimPrefix(p, home)
		if !slices.Contains(hidden, shown) {
			hidden = append(hidden, shown)
		}
	}
	if len(hidden) == 0 {
		return
	}
	fmt.Fprintf(stderr, "warning: MCP server %s names %s, which the sandbox does not show its programs; let it read there with, in your config, sandbox: {readable: [%s]} (writable: to let it write)\n",
		termtext.Sanitize(name), termtext.Sanitize(strings.Join(hidden, ", ")), termtext.Sanitize(strings.Join(hidden, ", ")))
}

// ParseAdd reads harvey mcp add's flags (and the command after --).
func ParseAdd(args []string) (config.MCPServer, error) {
	var s config.MCPServer
	kv := func(flag, v string, m *map[string]string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("%s takes K=V, not %q", flag, v)
		}
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = val
		return nil
	}
	for i := 0; i < len(args); i++ {
		a, val := args[i], ""
		if i+1 < len(args) {
			val = args[i+1]
		}
		var err error
		switch a {
		case "--":
			s.Command = args[i+1:]
			i = len(args)
			continue
		case "--env":
			err = kv(a, val, &s.Env)
		case "--header":
			err = kv(a, val, &s.Headers)
		case "--url":
			s.URL = val
		case "--read-only":
			s.ReadOnly = append(s.ReadOnly, val)
		default:
			if !mcpauth.IsFlag(a) {
				return s, errors.New(Usage)
			}
			if s.OAuth == nil {
				s.OAuth = &config.MCPOAuth{}
			}
			if mcpauth.SetFlag(s.OAuth, a, val) {
				continue // takes no value
			}
		}
		if err != nil {
			return s, err
		}
		i++
	}
	if (len(s.Command) == 0) == (s.URL == "") {
		return s, errors.New("give either -- COMMAND [ARGS...] or --url URL")
	}
	return s, mcpauth.CheckFlags(s.OAuth, s.URL != "")
}

// Remove is `harvey mcp remove NAME`.
func Remove(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, Usage)
		return 2
	}
	p, err := configfile.RemoveServer(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed MCP server %s from %s\n", args[0], p)
	return 0
}

// Import is `harvey mcp import [NAME...]`: without names it lists what
// it found; with names it adds those servers to the user's config.
func Import(args []string, stdout, stderr io.Writer) int {
	home, _ := os.UserHomeDir()
	sources := configfile.ImportSources(home)
	if len(args) == 0 {
		if len(sources) == 0 {
			fmt.Fprintln(stdout, "no MCP servers found in Claude Desktop, Claude Code, Cursor or Codex configs")
			return 0
		}
		for _, src := range sources {
			fmt.Fprintf(stdout, "%s (%s):\n", src.Client, src.Path)
			for _, n := range slices.Sorted(maps.Keys(src.Servers)) {
				fmt.Fprintf(stdout, "  %-20s %s\n", n, termtext.Sanitize(src.Servers[n].Target()))
			}
			for _, n := range src.Unread {
				fmt.Fprintf(stdout, "  %-20s not imported: its settings use TOML Harvey does not read (a multi-line array?); add it with harvey mcp add\n", termtext.Sanitize(n))
			}
		}
		fmt.Fprintln(stdout, "add some with: harvey mcp import NAME [NAME...]")
		return 0
	}
	code := 0
	for _, name := range args {
		var found *config.MCPServer
		for _, src := range sources {
			if s, ok := src.Servers[name]; ok {
				found = &s
				break
			}
		}
		if found == nil {
			fmt.Fprintf(stderr, "harvey: no MCP server %q in the configs found (harvey mcp import lists them)\n", name)
			code = 1
			continue
		}
		p, err := configfile.SetServer(name, *found)
		if err != nil {
			fmt.Fprintf(stderr, "harvey: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "added MCP server %s to %s\n", name, p)
		warnHiddenPaths(name, *found, stderr)
	}
	return code
}
