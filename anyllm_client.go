package harvey

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/ollama"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/textcalls"
	"github.com/harvey-agent/harvey/internal/wsquery"
	anyllm "github.com/mozilla-ai/any-llm-go"
	"github.com/mozilla-ai/any-llm-go/providers/anthropic"
	"github.com/mozilla-ai/any-llm-go/providers/deepseek"
	"github.com/mozilla-ai/any-llm-go/providers/groq"
	"github.com/mozilla-ai/any-llm-go/providers/llamacpp"
	"github.com/mozilla-ai/any-llm-go/providers/llamafile"
	"github.com/mozilla-ai/any-llm-go/providers/mistral"
	"github.com/mozilla-ai/any-llm-go/providers/openai"
)

// AnyLLMClient wraps an any-llm-go provider for everything but Ollama:
// OpenAI-compatible servers (llama.cpp, llamafile, vLLM, LM Studio) and cloud
// providers, with API keys from their usual environment variables.
type AnyLLMClient struct {
	provider anyllm.Provider
	kind     string
	Model    string
}

// Providers lists the provider names newAnyLLMClient accepts.
var Providers = []string{"openai", "openai-compatible", "llamacpp", "llamafile", "vllm", "lmstudio", "anthropic", "mistral", "gemini", "deepseek", "groq"}

// newAnyLLMClient builds a client for provider at baseURL (may be empty for
// cloud providers). Local servers get no HTTP timeout unless one is set.
func newAnyLLMClient(provider, baseURL, model string, timeout time.Duration) (*AnyLLMClient, error) {
	var opts []anyllm.Option
	local := false
	switch provider {
	case "openai-compatible", "llamacpp", "llamafile", "vllm", "lmstudio":
		local = true
	}
	if baseURL != "" {
		u := strings.TrimRight(baseURL, "/")
		if !strings.Contains(u, "://") {
			u = "http://" + u
		}
		if local && !strings.HasSuffix(u, "/v1") {
			u += "/v1"
		}
		opts = append(opts, anyllm.WithBaseURL(u))
	}
	if local || timeout > 0 {
		opts = append(opts, anyllm.WithHTTPClient(&http.Client{Timeout: timeout}))
	}
	var (
		p   anyllm.Provider
		err error
	)
	switch provider {
	case "openai":
		p, err = openai.New(opts...)
	case "openai-compatible", "vllm", "lmstudio":
		p, err = openai.NewCompatible(openai.CompatibleConfig{Name: provider, DefaultAPIKey: "harvey", DefaultBaseURL: "http://127.0.0.1:8000/v1", Capabilities: anyllm.Capabilities{Completion: true, CompletionStreaming: true, CompletionTools: true, ListModels: true}}, opts...)
	case "llamacpp":
		p, err = llamacpp.New(opts...)
	case "llamafile":
		p, err = llamafile.New(opts...)
	case "anthropic":
		p, err = anthropic.New(opts...)
	case "mistral":
		p, err = mistral.New(opts...)
	case "gemini":
		// Gemini's OpenAI-compatible endpoint: the same tool calling, without
		// the Google SDK (gRPC, OpenCensus, protobuf), whose package
		// initialisation cost every start of Harvey and of its sandbox
		// launcher ~3 ms and the binary ~10 MB.
		key := os.Getenv("GEMINI_API_KEY")
		if key == "" {
			key = os.Getenv("GOOGLE_API_KEY")
		}
		if key != "" {
			opts = append([]anyllm.Option{anyllm.WithAPIKey(key)}, opts...)
		}
		p, err = openai.NewCompatible(openai.CompatibleConfig{Name: "gemini", DefaultBaseURL: "https://generativelanguage.googleapis.com/v1beta/openai/", RequireAPIKey: true,
			Capabilities: anyllm.Capabilities{Completion: true, CompletionStreaming: true, CompletionTools: true, ListModels: true}}, opts...)
	case "deepseek":
		p, err = deepseek.New(opts...)
	case "groq":
		p, err = groq.New(opts...)
	default:
		return nil, fmt.Errorf("unknown provider %q (known: ollama, %s)", provider, strings.Join(Providers, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", provider, err)
	}
	return &AnyLLMClient{provider: p, kind: provider, Model: model}, nil
}

func (c *AnyLLMClient) Name() string { return c.kind + " " + c.Model }
func (c *AnyLLMClient) Close() error { return nil }

// Models lists models when the provider can.
func (c *AnyLLMClient) Models(ctx context.Context) ([]string, error) {
	ml, ok := c.provider.(anyllm.ModelLister)
	if !ok {
		return nil, fmt.Errorf("%s cannot list models", c.kind)
	}
	resp, err := ml.ListModels(ctx)
	if err != nil {
		return nil, explainAnyLLM(c.kind, err)
	}
	var out []string
	for _, m := range resp.Data {
		out = append(out, m.ID)
	}
	return out, nil
}

// Chat streams a plain reply.
func (c *AnyLLMClient) Chat(ctx context.Context, messages []llm.Message, out io.Writer) (llm.ChatStats, error) {
	st, _, err := c.ChatWithTools(ctx, messages, nil, out)
	return st, err
}

// ChatWithTools streams the reply, accumulating OpenAI-style tool call
// deltas (wire.md §4). It always drains the provider's channel, so no
// goroutine outlives the turn, and treats a stream with no finish reason as
// cut off.
func (c *AnyLLMClient) ChatWithTools(ctx context.Context, messages []llm.Message, tools []anyllm.Tool, out io.Writer) (llm.ChatStats, []anyllm.ToolCall, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	params := anyllm.CompletionParams{Model: c.Model, Messages: toAnyLLMMessages(messages), Stream: true, StreamOptions: &anyllm.StreamOptions{IncludeUsage: true}}
	if len(tools) > 0 {
		params.Tools = tools
	}
	chunks, errs := c.provider.CompletionStream(ctx, params)
	st := &anyStream{out: out, start: start, cancel: cancel}
	for chunk := range chunks {
		if st.take(chunk) {
			llm.Progressed(ctx) // the idle timeout counts from here (idle.go)
		}
	}
	stats, acc, werr, finished := st.stats, &st.acc, st.werr, st.finished
	var err error
	select {
	case err = <-errs:
	default:
	}
	stats.Elapsed = time.Since(start)
	if stats.ReplyTokens > 0 && stats.Elapsed > 0 {
		stats.TokensPerSec = float64(stats.ReplyTokens) / stats.Elapsed.Seconds()
	}
	switch {
	case werr != nil:
		return stats, nil, werr
	case ctx.Err() != nil:
		return stats, nil, fmt.Errorf("cancelled: %w", context.Canceled)
	case err != nil:
		return stats, nil, classifyAnyLLM(c.kind, err)
	case !finished && acc.empty():
		return stats, nil, llm.Transient(errors.New("the reply was cut off: the stream ended before it finished"), c.kind+"'s reply was cut off", 0)
	}
	return stats, acc.calls(), nil
}

// anyStream is one streamed reply as its chunks arrive: content to out,
// call deltas accumulated, within the bounds on one reply (past them, or
// when out fails, the stream is cancelled and the rest drained unread).
type anyStream struct {
	out      io.Writer
	start    time.Time
	cancel   func()
	stats    llm.ChatStats
	acc      toolCallAccumulator
	finished bool
	werr     error
}

// take handles one chunk; it reports whether the reply moved on (text,
// reasoning, a call or its end: not an empty chunk).
func (st *anyStream) take(chunk anyllm.ChatCompletionChunk) bool {
	if chunk.Usage != nil {
		st.stats.PromptTokens = chunk.Usage.PromptTokens
		st.stats.ReplyTokens = chunk.Usage.CompletionTokens
	}
	if len(chunk.Choices) == 0 || st.werr != nil {
		return false
	}
	ch := chunk.Choices[0]
	moved := ch.Delta.Content != "" || ch.Delta.Reasoning != nil || len(ch.Delta.ToolCalls) > 0 || ch.FinishReason != ""
	if st.stats.FirstToken == 0 && (ch.Delta.Content != "" || len(ch.Delta.ToolCalls) > 0) {
		st.stats.FirstToken = time.Since(st.start)
	}
	if ch.Delta.Content != "" {
		if _, err := io.WriteString(st.out, ch.Delta.Content); err != nil {
			st.werr = err
			st.cancel()
		}
	}
	for _, tc := range ch.Delta.ToolCalls {
		st.acc.add(tc)
	}
	if st.acc.bytes > llm.MaxReplyBytes || len(st.acc.list) > llm.MaxStreamedCalls {
		st.werr = llm.ErrReplyTooLarge
		st.cancel()
	}
	if ch.FinishReason != "" {
		st.finished = true
	}
	return moved
}

// classifyAnyLLM explains a provider's error and marks what another try
// can fix: a rate limit, a 5xx, a connection refused or dropped. (The
// OpenAI SDK under some providers has tried twice already by then.)
func classifyAnyLLM(kind string, err error) error {
	explained := explainAnyLLM(kind, err)
	switch {
	case errors.Is(err, anyllm.ErrRateLimit):
		return llm.Transient(explained, kind+" rate limited", 0)
	case errors.Is(err, anyllm.ErrAuthentication), errors.Is(err, anyllm.ErrMissingAPIKey), errors.Is(err, anyllm.ErrModelNotFound),
		errors.Is(err, anyllm.ErrContextLength), errors.Is(err, anyllm.ErrInvalidRequest), errors.Is(err, llm.ErrToolsUnsupported),
		errors.Is(explained, llm.ErrToolsUnsupported):
		return explained
	}
	if why, ok := llm.ConnectionTrouble(err); ok {
		return llm.Transient(explained, kind+" "+why, 0)
	}
	for _, code := range []int{500, 502, 503, 504} {
		if strings.Contains(err.Error(), fmt.Sprintf("%d ", code)) || strings.Contains(err.Error(), fmt.Sprintf("status %d", code)) || strings.Contains(err.Error(), fmt.Sprintf("\"%d", code)) {
			if why, ok := llm.TransientStatus(code, err.Error()); ok {
				return llm.Transient(explained, kind+" "+why, 0)
			}
		}
	}
	return explained
}

// explainAnyLLM turns provider errors into one-line messages.
func explainAnyLLM(kind string, err error) error {
	switch {
	case errors.Is(err, anyllm.ErrModelNotFound):
		return fmt.Errorf("%s: model not found: %v", kind, err)
	case errors.Is(err, anyllm.ErrRateLimit):
		return fmt.Errorf("%s: rate limited: %v", kind, err)
	case errors.Is(err, anyllm.ErrContextLength):
		return fmt.Errorf("%s: context too long; use /summarize or /clear: %v", kind, err)
	case errors.Is(err, anyllm.ErrAuthentication), errors.Is(err, anyllm.ErrMissingAPIKey):
		return fmt.Errorf("%s: authentication failed (check the API key variable): %v", kind, err)
	case strings.Contains(strings.ToLower(err.Error()), "does not support tools"):
		return fmt.Errorf("%w (%v)", llm.ErrToolsUnsupported, err)
	case strings.Contains(err.Error(), "connection refused"):
		return fmt.Errorf("%s: cannot reach the server (connection refused)", kind)
	}
	return fmt.Errorf("%s: %v", kind, err)
}

// toAnyLLMMessages maps history to anyllm messages, keeping tool call IDs.
func toAnyLLMMessages(msgs []llm.Message) []anyllm.Message {
	out := make([]anyllm.Message, 0, len(msgs))
	for _, m := range msgs {
		am := anyllm.Message{Role: string(m.Role), Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		if m.Role == llm.RoleTool {
			am.Name = m.ToolName
		}
		out = append(out, am)
	}
	return out
}

// toolCallAccumulator reassembles streamed tool calls: a new call starts when
// a delta brings a new ID, or (for servers that send no IDs) a name after a
// complete call; otherwise argument fragments append to the current call. A
// repeated identical name is ignored (old llama.cpp), and the first delta's
// argument text is kept (llama.cpp may put "{" there).
type toolCallAccumulator struct {
	list  []anyllm.ToolCall
	bytes int // names and arguments received (bounded by llm.MaxReplyBytes)
}

func (a *toolCallAccumulator) empty() bool { return len(a.list) == 0 }

func (a *toolCallAccumulator) add(tc anyllm.ToolCall) {
	n := len(a.list)
	var cur *anyllm.ToolCall
	if n > 0 {
		cur = &a.list[n-1]
	}
	start := false
	switch {
	case cur == nil:
		start = true
	case tc.ID != "" && tc.ID != cur.ID:
		start = true
	case tc.ID == "" && tc.Function.Name != "" && tc.Function.Name != cur.Function.Name && cur.Function.Name != "" && json.Valid([]byte(cur.Function.Arguments)):
		start = true
	case tc.ID == "" && tc.Function.Name != "" && tc.Function.Name == cur.Function.Name && json.Valid([]byte(cur.Function.Arguments)) && tc.Function.Arguments != "" && strings.HasPrefix(strings.TrimSpace(tc.Function.Arguments), "{"):
		start = true // a second call to the same tool
	}
	a.bytes += len(tc.Function.Name) + len(tc.Function.Arguments)
	if start {
		a.list = append(a.list, anyllm.ToolCall{ID: tc.ID, Type: "function", Function: anyllm.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		return
	}
	if cur.Function.Name == "" {
		cur.Function.Name = tc.Function.Name
	}
	cur.Function.Arguments += tc.Function.Arguments
}

// calls returns the finished calls with unique IDs and "{}" for empty args.
func (a *toolCallAccumulator) calls() []anyllm.ToolCall {
	seen := map[string]bool{}
	out := make([]anyllm.ToolCall, 0, len(a.list))
	for _, tc := range a.list {
		if !llm.ValidCallID(tc.ID) || seen[tc.ID] {
			tc.ID = textcalls.NewCallID()
		}
		seen[tc.ID] = true
		if strings.TrimSpace(tc.Function.Arguments) == "" {
			tc.Function.Arguments = "{}"
		}
		tc.Type = "function"
		out = append(out, tc)
	}
	return out
}

// newEmbedder is the embedder for model run by provider ("" or ollama:
// Ollama's batch endpoint at ollamaURL; any other: its any-llm-go provider,
// when that provider offers embeddings, at baseURL or its default).
func newEmbedder(provider, baseURL, ollamaURL, model string) (wsquery.Embedder, error) {
	if provider == "" || provider == "ollama" {
		return ollama.NewEmbedder(cmp.Or(baseURL, ollamaURL), model), nil
	}
	c, err := newAnyLLMClient(provider, baseURL, model, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	ep, ok := c.provider.(anyllm.EmbeddingProvider)
	if !ok {
		return nil, fmt.Errorf("%s offers no embeddings through any-llm-go; embed with Ollama (leave provider: out) or another provider", provider)
	}
	return &anyllmEmbedder{p: ep, model: model, provider: provider}, nil
}

// anyllmEmbedder embeds through an any-llm-go provider (OpenAI's
// /v1/embeddings and the servers that speak it, Mistral, Gemini...).
type anyllmEmbedder struct {
	p               anyllm.EmbeddingProvider
	model, provider string
}

func (e *anyllmEmbedder) Name() string { return e.model }

func (e *anyllmEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	resp, err := e.p.Embedding(ctx, anyllm.EmbeddingParams{Model: e.model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("embedding with %s (%s): %s", e.model, e.provider, termtext.OneLine(explainAnyLLM(e.provider, err).Error()))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			return nil, fmt.Errorf("embedding with %s (%s): the answer's vectors do not match the %d texts", e.model, e.provider, len(texts))
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	for _, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embedding with %s (%s): the answer has %d vectors for %d texts", e.model, e.provider, len(resp.Data), len(texts))
		}
	}
	return out, nil
}
