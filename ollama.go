package harvey

import (
	"time"

	"github.com/harvey-agent/harvey/internal/ollama"
)

// The Ollama client is internal/ollama's (its own API through the official
// types, the stream read whole, every failure classified for the retry
// loop).

// newOllamaClient is ollama.New with Harvey's version in its requests.
func newOllamaClient(baseURL, model string, numCtx int, keepAlive string, timeout time.Duration) (*ollama.Client, error) {
	c, err := ollama.New(baseURL, model, numCtx, keepAlive, timeout)
	if err == nil {
		c.UserAgent = "harvey/" + Version
	}
	return c, err
}

// ollamaClient is the session's Ollama client (for /model and /ollama),
// or a new one for the configured server when another backend is attached.
func (be *backend) ollamaClient() (*ollama.Client, error) {
	if c, ok := be.Client.(*ollama.Client); ok {
		return c, nil
	}
	return newOllamaClient(be.OllamaURL, be.ModelName, be.cfg.EffectiveNumCtx(be.ModelName), be.cfg.KeepAlive, time.Duration(be.cfg.OllamaTimeout))
}
