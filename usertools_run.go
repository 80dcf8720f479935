package harvey

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/usertools"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// A user tool as it runs: its arguments put in its command line (never
// through a shell), each path through the path policy, and the run through
// the gate run_command uses.

// checkToolPaths puts every path parameter through the path policy of
// read_file (write_file for a path that does not exist yet, in a tool that
// is not read-only) and passes the resolved workspace-relative path on:
// the program gets the checked object, never the spelling the model chose
// (a link, "..", agents/, a denied file are refused here).
func (g *Gate) checkToolPaths(t *usertools.Tool, args map[string]any) (map[string]any, error) {
	var out map[string]any
	for _, p := range t.Params {
		v, ok := args[p.Name].(string)
		if p.Type != "path" || !ok {
			continue
		}
		rp, err := g.ws.Resolve(v, wspath.OpRead)
		if err != nil && t.Effect != usertools.Read {
			if wp, werr := g.ws.Resolve(v, wspath.OpWrite); werr == nil && wp.Info == nil {
				rp, err = wp, nil
			} else if werr == nil {
				wp.Close()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("argument %q: %w", p.Name, err)
		}
		rp.Close()
		rel := rp.Rel
		if strings.HasPrefix(rel, "-") {
			rel = "./" + rel
		}
		if out == nil {
			out = maps.Clone(args)
		}
		out[p.Name] = rel
	}
	if out == nil {
		return args, nil
	}
	return out, nil
}

// runUserTool runs a user tool through the gate run_command uses
// (runGated): its path parameters checked, exec permission, safe mode's
// allowlist, approval by effect (read-only tools run without asking), the
// sandboxed runner, the audit record.
func (g *Gate) runUserTool(ctx context.Context, t *usertools.Tool, args map[string]any) (toolResult, error) {
	r, err := g.userToolRequest(t, args, "")
	if err != nil {
		return toolResult{}, err
	}
	res, err := g.runGated(ctx, r)
	if err != nil {
		return toolResult{}, err
	}
	return commandResult(res, g.resultCap()), nil // its exit status and timeout said, as a command's
}

// userToolRequest is the run of t with args: its path parameters checked
// and its command line built (a refusal is audited); how says what the
// approval adds ("" for a call that returns its result).
func (g *Gate) userToolRequest(t *usertools.Tool, args map[string]any, how string) (runRequest, error) {
	args, err := g.checkToolPaths(t, args)
	if err != nil {
		g.audit("tool", t.Name, err, 0)
		return runRequest{}, err
	}
	argv, err := t.BuildArgv(args)
	if err != nil {
		return runRequest{}, err
	}
	shown := t.Name + ": " + termtext.QuoteArgv(argv)
	ask := ""
	if t.Effect != usertools.Read {
		ask = t.Name
	}
	return runRequest{audit: "tool", shown: shown, tool: ask, action: "run " + t.Name + " (" + t.Effect + how + "): " + termtext.QuoteArgv(argv), argv: argv, timeout: t.Timeout, env: t.Env, hosts: t.Hosts}, nil
}
