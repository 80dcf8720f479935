package harvey

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/termtext"
	anyllm "github.com/mozilla-ai/any-llm-go"
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

// defaultKeepAlive is how long Ollama keeps the model loaded after a
// request when the config does not say (Ollama's own default, 5 minutes,
// unloads it while the user reads and thinks).
const defaultKeepAlive = 30 * time.Minute

// warmRequest is the request that evaluates messages and generates one
// token (built before any goroutine runs, from a copy of the messages).
func (c *OllamaClient) warmRequest(messages []Message, tools []anyllm.Tool) (*ollamaRequest, error) {
	stream := false
	req := &api.ChatRequest{Model: c.Model, Messages: toOllamaMessages(messages), Stream: &stream, KeepAlive: c.KeepAlive,
		Options: map[string]any{"num_ctx": c.NumCtx, "num_predict": 1}}
	return &ollamaRequest{ChatRequest: req, Tools: tools}, nil
}

// Loaded reports whether Ollama holds the model in memory, and until when.
func (c *OllamaClient) Loaded(ctx context.Context) (bool, time.Time, error) {
	res, err := c.api.ListRunning(ctx)
	if err != nil {
		return false, time.Time{}, err
	}
	for _, m := range res.Models {
		if config.SameModel(m.Name, c.Model) || config.SameModel(m.Model, c.Model) {
			return true, m.ExpiresAt, nil
		}
	}
	return false, time.Time{}, nil
}

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
	oc, ok := be.Client.(*OllamaClient)
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
