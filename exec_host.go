package harvey

import (
	"errors"
	"time"

	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/recorder"
)

// turnHost is the executor's side of the session (execHost): how the
// tool loop's events reach the terminal, the approval service (through the
// gate), the audit log and the recording, and what prose fallback does to
// the session. It is built per turn from exactly those.
type turnHost struct {
	*Terminal
	gate     *Gate
	recorder *recorder.Recorder // nil unless --record
	fallback func(model string) (string, error)
}

// newTurnHost is the session's host for a turn's executor.
func newTurnHost(a *Agent) *turnHost {
	return &turnHost{Terminal: &a.Terminal, gate: a.gate, recorder: a.Recorder, fallback: a.proseFallback}
}

// audit records an effect with the outcome its error means.
func (h *turnHost) audit(action, details string, err error, d time.Duration) {
	h.gate.audit(action, details, err, d)
}

func (h *turnHost) recordToolCall(name, raw, result string, failed bool) {
	h.recorder.ToolCall(name, raw, result, failed)
}

func (h *turnHost) proseFallback(model string) (string, error) { return h.fallback(model) }

func (h *turnHost) callEvent(id, name, rawArgs string, recovered bool) {
	h.events.ToolCall(id, name, rawArgs, recovered)
}

func (h *turnHost) resultEvent(id, name, status, class, summary, output string, notes []string, d time.Duration) {
	h.events.ToolResult(id, name, status, class, summary, output, notes, d)
}

// proseFallback remembers that model cannot call tools and, when fallback
// is on, switches the session's prompt to prose tool mode.
func (a *Agent) proseFallback(model string) (string, error) {
	a.caps[model] = llm.CapNo
	if !a.Config.FallbackEnabled() {
		return "", errors.New("tools are off for this model (fallback_to_natural_language is false)")
	}
	a.note("· the server says this model does not support tools; switching to prose tool mode")
	a.refreshSystemPrompt()
	return a.SystemPrompt + "\n\n" + a.proseToolPrompt(&a.toolSet), nil
}
