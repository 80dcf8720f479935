package ollama

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/termtext"
)

// Embedder is Ollama's batch embedding endpoint (POST /api/embed), for
// the knowledge stores and the workspace index (the one Ollama embedding
// client: internal/rag's embedders are this and any-llm-go's providers).
type Embedder struct {
	base, model string
	hc          *http.Client
}

// NewEmbedder embeds with model at base.
func NewEmbedder(base, model string) *Embedder {
	return &Embedder{base: strings.TrimRight(base, "/"), model: model, hc: &http.Client{Timeout: 5 * time.Minute}}
}

// Name is the embedding model.
func (e *Embedder) Name() string { return e.model }

// Embed is one vector per text, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, _ := json.Marshal(map[string]any{"model": e.model, "input": texts})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/api/embed", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embedding with %s: %v", e.model, err)
	}
	defer resp.Body.Close()
	var out struct {
		Embeddings [][]float32 `json:"embeddings"`
		Error      string      `json:"error"`
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("embedding with %s: %s: the reply was cut off (%v)", e.model, resp.Status, err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		// Not Ollama's JSON: a proxy's or another server's page. Say what
		// answered, not the decoder's words.
		return nil, fmt.Errorf("embedding with %s: %s at %s answered %s, not Ollama's JSON: %q — is --ollama / OLLAMA_HOST an Ollama server?", e.model, resp.Status, e.base, cmp.Or(resp.Header.Get("Content-Type"), "no content type"), termtext.Clip(termtext.Flat(string(raw)), 80))
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("embedding model %s not found; pull it with: ollama pull %s", e.model, e.model)
	}
	if resp.StatusCode >= 400 || out.Error != "" {
		return nil, fmt.Errorf("embedding with %s: %s %s", e.model, resp.Status, out.Error)
	}
	return out.Embeddings, nil
}
