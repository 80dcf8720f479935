package harvey

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/harvey-agent/harvey/internal/ollama"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/ollama/ollama/api"
)

// The first answer on a Raspberry Pi. The fixed head of every request —
// the system prompt, the tool block, the project's instructions — costs a
// minute to evaluate at a Pi's ~11 prompt tokens a second, and Ollama
// evaluates it only when asked. So as soon as the model is known (start,
// /model), Harvey sends Ollama exactly the messages the first real request
// will start with, asking for one token it discards: the model is loaded
// and its cache holds the head while the user is still typing. Nothing
// waits for it — a prompt sent meanwhile goes ahead (Ollama reuses what the
// warm request evaluated). Only in the REPL (headless -p would only add a
// request), and only for Ollama (never a cloud provider: it would cost
// money). keep_alive (default 30m) keeps the model loaded between turns.

// warming is a warm request in flight.
type warming struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// stopWarm cancels a warm request still in flight (a model switch, exit).
func (be *backend) stopWarm() {
	if be.warm != nil {
		be.warm.cancel()
		<-be.warm.done
		be.warm = nil
	}
}

// loadedLine says for /status whether Ollama holds the model.
func (be *backend) loadedLine(ctx context.Context) string {
	oc, ok := be.Client.(*ollama.Client)
	if !ok {
		return ""
	}
	loaded, until, err := oc.Loaded(ctx)
	var se api.StatusError
	switch {
	case errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusMethodNotAllowed):
		return "unknown: this server does not say which models it holds in memory (it has no /api/ps: not Ollama, or an older Ollama)"
	case err != nil:
		return "unknown: the server did not say which models it holds in memory (" + termtext.Clip(termtext.OneLine(err.Error()), 80) + ")"
	case !loaded:
		return "not loaded (the next answer waits for Ollama to load it)"
	case until.IsZero():
		return "loaded"
	}
	return fmt.Sprintf("loaded (until %s; keep_alive keeps it while you work)", until.Local().Format("15:04"))
}
