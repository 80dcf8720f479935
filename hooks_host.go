package harvey

import (
	"context"
	"fmt"
	"os"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// Hooks are internal/hooks'; what they need of the session is hookHost:
// the gate every command passes (a workspace's hook runs through it,
// sandboxed, checked after, audited), the audit log, the terminal and the
// --output events.
type hookHost struct {
	g  *Gate
	tm *Terminal
}

// RunHook runs a hook as its origin says: a workspace's through the gate
// every command passes; one your config marks unsandboxed as your program;
// the rest in the sandbox made for hooks (userHook).
func (h hookHost) RunHook(ctx context.Context, hc config.HookConfig, stdin string, env []string, readable string) (runner.Result, error) {
	switch {
	case hc.FromWorkspace:
		return h.g.runGated(ctx, runRequest{audit: "hook", shown: configfile.HookShown(hc), argv: hc.Command, timeout: hc.TimeLimit(),
			hook: &hookRun{stdin: stdin, env: env, readable: readable}})
	case hc.Unsandboxed:
		// Your config said so for this hook: your program, as you.
		res := runner.Run(ctx, runner.Proc{Dir: h.g.ws.Root, Argv: hc.Command, Env: append(os.Environ(), env...), Timeout: hc.TimeLimit(),
			Limit: h.g.maxOut(), Stdin: stdin, SplitStderr: true})
		h.g.log.Record("hook", configfile.HookShown(hc)+" (unsandboxed)", runOutcome(res), res.Duration)
		return res, nil
	}
	return h.userHook(ctx, hc, stdin, env, readable)
}

// userHook runs a hook of the user's own in the sandbox made for hooks
// (internal/sandboxpolicy's HookView), then the check after every command; safe
// mode's allowlist is for the model's commands, not the user's hooks.
func (h hookHost) userHook(ctx context.Context, hc config.HookConfig, stdin string, env []string, readable string) (runner.Result, error) {
	g := h.g
	if err := sandboxpolicy.NoSandboxRefusal(g.cfg.Sandbox); err != nil {
		g.audit("hook", configfile.HookShown(hc), err, 0)
		return runner.Result{}, fmt.Errorf("%v (or unsandboxed: true on this hook, in your config, to run it as your program)", err)
	}
	home, _ := os.UserHomeDir()
	want := sandboxpolicy.SpecFor{Purpose: "hook", Hook: &sandboxpolicy.HookView{Home: home, Argv: hc.Command, Readable: hc.Readable, Writable: hc.Writable, Network: hc.Network}}
	if readable != "" {
		want.Readable = []string{readable}
	}
	want.Root, want.Policy, want.Bare = g.ws.Root, g.cfg.Sandbox, g.bare
	spec := runner.Proc{Dir: g.ws.Root, Argv: hc.Command, Env: append(secrets.WithNamed(secrets.YourEnviron(os.Environ()), os.Environ(), g.cfg.Sandbox.Env), env...), Timeout: hc.TimeLimit(),
		Limit: g.maxOut(), Sandbox: sandboxpolicy.CommandSpec(want), Stdin: stdin, SplitStderr: true, Refusals: true}
	return g.runGuarded(ctx, runRequest{audit: "hook", shown: configfile.HookShown(hc)}, spec), nil
}

func (h hookHost) Audit(action, detail string, err error) { h.g.audit(action, detail, err, 0) }
func (h hookHost) Summary(tool string, args map[string]any) string {
	return callSummary(tool, args)
}

// Say shows a hook's firing in the hooks' own colour, a warning in
// yellow.
func (h hookHost) Say(tone termtext.Tone, line string) {
	colour := "35"
	if tone == termtext.Warn {
		colour = "33"
	}
	h.tm.logf("%s", h.tm.colorize(colour, line))
}
func (h hookHost) Emit(fields map[string]any) { h.tm.events.Emit("hook", fields) }
