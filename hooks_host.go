package harvey

import (
	"context"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/runner"
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
	return h.g.runGated(ctx, runRequest{audit: "hook", shown: hc.Shown(), argv: hc.Command, timeout: hc.TimeLimit(),
		hook: &hookRun{stdin: stdin, env: env, readable: readable}})
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
