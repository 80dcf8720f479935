package harvey

import (
	"context"
	"fmt"
	"os"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// Hooks are internal/hooks'; what they need of the session is hookHost:
// the gate every command passes (a workspace's hook runs through it,
// sandboxed, checked after, audited), the audit log, the terminal and the
// --output events.
type hookHost struct {
	g  *Gate
	tm *Terminal
}

func (h hookHost) Root() string { return h.g.ws.Root }

func (h hookHost) RunWorkspaceHook(ctx context.Context, hc config.HookConfig, stdin string, env []string, readable string) (runner.Result, error) {
	return h.g.runGated(ctx, runRequest{audit: "hook", shown: configfile.HookShown(hc), argv: hc.Command, timeout: hc.TimeLimit(),
		hook: &hookRun{stdin: stdin, env: env, readable: readable}})
}

// RunUserHook runs a hook of the user's own in the sandbox made for hooks
// (internal/runner's HookView), then the check after every command; safe
// mode's allowlist is for the model's commands, not the user's hooks.
func (h hookHost) RunUserHook(ctx context.Context, hc config.HookConfig, stdin string, env []string, readable string) (runner.Result, error) {
	g := h.g
	if err := runner.NoSandboxRefusal(g.cfg.Sandbox); err != nil {
		g.audit("hook", configfile.HookShown(hc), err, 0)
		return runner.Result{}, fmt.Errorf("%v (or unsandboxed: true on this hook, in your config, to run it as your program)", err)
	}
	home, _ := os.UserHomeDir()
	want := runner.SpecFor{Purpose: "hook", Hook: &runner.HookView{Home: home, Argv: hc.Command, Writable: hc.Writable, Network: hc.Network}}
	if readable != "" {
		want.Readable = []string{readable}
	}
	want.Root, want.Policy, want.Bare = g.ws.Root, g.cfg.Sandbox, g.bare
	spec := runner.Proc{Dir: g.ws.Root, Argv: hc.Command, Env: append(secrets.WithNamed(secrets.YourEnviron(os.Environ()), os.Environ(), g.cfg.Sandbox.Env), env...), Timeout: hc.TimeLimit(),
		Limit: g.maxOut(), Sandbox: runner.CommandSpec(want), Stdin: stdin, SplitStderr: true}
	return g.runGuarded(ctx, runRequest{audit: "hook", shown: configfile.HookShown(hc)}, spec), nil
}

func (h hookHost) Record(shown string, res runner.Result) {
	h.g.log.Record("hook", shown, runOutcome(res), res.Duration)
}

func (h hookHost) Audit(action, detail string, err error) { h.g.audit(action, detail, err, 0) }
func (h hookHost) MaxOut() int                            { return h.g.maxOut() }
func (h hookHost) Summary(tool string, args map[string]any) string {
	return callSummary(tool, args)
}
func (h hookHost) Say(line string)            { h.tm.logf("%s", h.tm.colorize("35", line)) }
func (h hookHost) Emit(fields map[string]any) { h.tm.events.Emit("hook", fields) }
func (h hookHost) Warn(line string)           { h.tm.logf("%s", h.tm.colorize("33", line)) }
func (h hookHost) Version() string            { return Version }
