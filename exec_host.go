package harvey

import (
	"errors"
	"time"
)

// The Agent's side of execHost: how the tool loop's events reach the
// terminal, the audit log and the recording.

func (tm *Terminal) note(s string) { tm.logf("%s", tm.dim(s)) }

func (tm *Terminal) warn(s string) { tm.logf("%s", tm.colorize("33", s)) }

func (tm *Terminal) toolLine(prefix, name, summary string) {
	tm.logf("%s %s %s", tm.colorize("36", prefix), sanitizeForTerminal(flatText(name)), sanitizeForTerminal(summary))
}

func (tm *Terminal) resultLine(ok bool, summary string) {
	if ok {
		tm.logf("  %s %s", tm.colorize("32", "✓"), sanitizeForTerminal(summary))
		return
	}
	tm.logf("  %s %s", tm.colorize("31", "✗"), sanitizeForTerminal(summary))
}

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

// outcomeOf is the one mapping from an effect's error to its audit
// outcome: refused by a rule or the user is denied; any other error failed.
func outcomeOf(err error) AuditOutcome {
	switch {
	case err == nil:
		return AuditSuccess
	case errors.Is(err, ErrDenied) || errors.Is(err, ErrRefused):
		return AuditDenied
	}
	return AuditError
}
