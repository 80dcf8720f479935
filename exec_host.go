package harvey

import (
	"context"
	"errors"
	"strings"
	"time"
)

// The Agent's side of execHost: how the tool loop's events reach the
// terminal, the audit log and the recording.

// audit records an effect with the outcome its error means.
func (a *Agent) audit(action, details string, err error, d time.Duration) {
	a.Audit.Record(action, details, outcomeOf(err), d)
}

func (a *Agent) recordToolCall(name, raw, result string, failed bool) {
	a.Recorder.ToolCall(name, raw, result, failed)
}

// proseFallback remembers that model cannot call tools and, when fallback
// is on, switches the session's prompt to prose tool mode.
func (a *Agent) proseFallback(model string) (string, error) {
	a.caps[model] = CapNo
	if !a.Config.FallbackEnabled() {
		return "", errors.New("tools are off for this model (fallback_to_natural_language is false)")
	}
	a.note("· the server says this model does not support tools; switching to prose tool mode")
	a.refreshSystemPrompt()
	return a.SystemPrompt + "\n\n" + a.proseToolPrompt(), nil
}

// confirm is the approval of a tool call or a slash command's effect.
func (a *Agent) confirm(ctx context.Context, tool, action, preview string) error {
	r := approvalRequest{tool: tool, who: requesterOf(tool), action: action}
	if preview != "" {
		r.diff = func() string { return preview }
	}
	return a.approvals.approve(ctx, r)
}

// confirmRecovered asks before running a call recovered from a reply that
// also holds prose: the model may only have quoted it (an example, a
// "do not run this"). Neither --yes nor an earlier "always" answers for it,
// and headless it is refused: a printed call runs unasked only when it is
// the whole reply (docs/tool-call-recovery.md).
func (a *Agent) confirmRecovered(ctx context.Context, tool, summary string) error {
	what := strings.TrimSpace(tool + " " + summary)
	return a.approvals.approve(ctx, approvalRequest{tool: tool, who: byPrinted, action: what})
}
