package ollama

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/textcalls"
	anyllm "github.com/mozilla-ai/any-llm-go"
	"github.com/ollama/ollama/api"
)

// Client talks to Ollama through its official Go client, not through
// any-llm-go's Ollama provider, which (v0.8.0) fixes num_ctx at 32000, sends
// tool results as user messages, drops schema detail, renames tool calls per
// chunk and ends cut-off streams without an error (wire.md). Messages are
// mapped to and from the anyllm types at this boundary.
type Client struct {
	BaseURL   string
	Model     string
	NumCtx    int
	KeepAlive *api.Duration
	// UserAgent names Harvey and its version in every request.
	UserAgent string
	api       *api.Client
	http      *http.Client

	mu        sync.Mutex
	templates map[string]string // chat templates seen by llm.Capability
}

// chat streams /api/chat with the official request and response types and
// the official client's error semantics, but reads the NDJSON stream with a
// buffer that grows with the longest line. api.Client allocates a fixed
// 8 MB line buffer for every request, which over a long session of tool
// rounds more than doubled Harvey's peak memory (BENCHMARKS.md). Requests
// to ollama.com, which the official client signs, still go through it.
//
// The tools go as the servers sent their schemas ($ref, allOf, if/then,
// additionalProperties and all): the official type keeps only a few
// keywords of each. Only the official client's path (ollama.com) gets
// them through that type.
func (c *Client) chat(ctx context.Context, req *ollamaRequest, fn api.ChatResponseFunc) error {
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Hostname() == "ollama.com" || os.Getenv("OLLAMA_AUTH") != "" {
		r := *req.ChatRequest
		if len(req.Tools) > 0 {
			t, err := ToTools(req.Tools)
			if err != nil {
				return err
			}
			r.Tools = t
		}
		return c.api.Chat(ctx, &r, fn)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.JoinPath("/api/chat").String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/x-ndjson")
	hreq.Header.Set("User-Agent", c.UserAgent)
	resp, err := c.http.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= http.StatusBadRequest {
		if ra := llm.RetryAfter(resp.Header.Get("Retry-After")); ra > 0 {
			return c.statusError(resp, ra)
		}
	}
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	var line []byte
	for {
		part, rerr := br.ReadSlice('\n')
		line = append(line, part...)
		if errors.Is(rerr, bufio.ErrBufferFull) {
			if len(line) > maxStreamLine {
				return fmt.Errorf("Ollama sent a line over %d MB", maxStreamLine>>20)
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if err := streamLine(resp, line, fn); err != nil {
				return err
			}
		}
		line = line[:0]
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// statusError reads an error status's body as the stream would, keeping
// the server's Retry-After.
func (c *Client) statusError(resp *http.Response, after time.Duration) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	err := streamLine(resp, body, func(api.ChatResponse) error { return nil })
	if err == nil {
		err = api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status}
	}
	return &llm.StatusWithRetryAfter{Err: err, After: after}
}

// maxStreamLine bounds one NDJSON line, as the official client does.
const maxStreamLine = 8 << 20

// streamLine handles one NDJSON line like api.Client's stream: an error
// object or an HTTP error status becomes an error (api.StatusError for the
// latter), anything else is a ChatResponse.
func streamLine(resp *http.Response, line []byte, fn api.ChatResponseFunc) error {
	var e struct {
		Error string `json:"error,omitempty"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		if resp.StatusCode >= http.StatusBadRequest {
			return api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: string(bytes.TrimSpace(line))}
		}
		return errors.New(string(bytes.TrimSpace(line)))
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: e.Error}
	}
	if e.Error != "" {
		return errors.New(e.Error)
	}
	var r api.ChatResponse
	if err := json.Unmarshal(line, &r); err != nil {
		return err
	}
	return fn(r)
}

// NormalizeURL accepts "host:port", "http://host:port" or "https://...".
func NormalizeURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return config.DefaultOllamaURL, nil
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("bad Ollama URL %q: use http://HOST:PORT", s)
	}
	if u.Port() == "" && u.Scheme == "http" {
		u.Host = net.JoinHostPort(u.Hostname(), "11434")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// New returns a client for baseURL (host:port, or an http or https URL)
// and model; numCtx is the window every request sends, keepAlive how long
// Ollama keeps the model loaded ("": DefaultKeepAlive; "-1": for ever).
// timeout 0 means none (CPU inference on a Raspberry Pi can take minutes).
func New(baseURL, model string, numCtx int, keepAlive string, timeout time.Duration) (*Client, error) {
	norm, err := NormalizeURL(baseURL)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(norm)
	hc := &http.Client{Timeout: timeout}
	c := &Client{BaseURL: norm, Model: model, NumCtx: numCtx, UserAgent: "harvey", api: api.NewClient(u, hc), http: hc}
	c.KeepAlive = &api.Duration{Duration: DefaultKeepAlive}
	if keepAlive != "" {
		d, err := config.ParseDuration(keepAlive)
		if keepAlive == "-1" {
			d, err = -1, nil
		}
		if err != nil {
			return nil, fmt.Errorf("keep_alive: %v", err)
		}
		c.KeepAlive = &api.Duration{Duration: d}
	}
	return c, nil
}

func (c *Client) Name() string { return "ollama " + c.Model }
func (c *Client) Close() error { return nil }

// Reachable checks the server with /api/version.
func (c *Client) Reachable(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := c.api.Version(ctx)
	if err != nil {
		return "", c.explain(err)
	}
	return v, nil
}

// Models lists installed models (names include the tag).
func (c *Client) Models(ctx context.Context) ([]string, error) {
	resp, err := c.api.List(ctx)
	if err != nil {
		return nil, c.explain(err)
	}
	out := make([]string, 0, len(resp.Models))
	for _, m := range resp.Models {
		out = append(out, m.Name)
	}
	return out, nil
}

// ModelInfo is what the model menu shows of an installed model.
type ModelInfo struct {
	Name   string
	Size   int64  // bytes on disk
	Params string // "3.2B"
	Quant  string // "Q4_K_M"
	Tools  llm.Capability
}

// ModelInfos lists the installed models with their size and parameters
// (one /api/tags) and whether each calls tools (one /api/show each, asked
// together; an answer that does not come in time leaves it unknown).
func (c *Client) ModelInfos(ctx context.Context) ([]ModelInfo, error) {
	resp, err := c.api.List(ctx)
	if err != nil {
		return nil, c.explain(err)
	}
	out := make([]ModelInfo, len(resp.Models))
	var wg sync.WaitGroup
	for i, m := range resp.Models {
		out[i] = ModelInfo{Name: m.Name, Size: m.Size, Params: m.Details.ParameterSize, Quant: m.Details.QuantizationLevel}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cp, _, err := c.Capability(ctx, m.Name); err == nil {
				out[i].Tools = cp
			}
		}()
	}
	wg.Wait()
	return out, nil
}

// Describe is one menu line's details: "3.2B Q4_K_M, 2.0 GB, calls tools".
func (m ModelInfo) Describe() string {
	var parts []string
	if p := strings.TrimSpace(m.Params + " " + m.Quant); p != "" {
		parts = append(parts, p)
	}
	if m.Size > 0 {
		parts = append(parts, fmt.Sprintf("%.1f GB", float64(m.Size)/1e9)) // as ollama list shows it
	}
	switch m.Tools {
	case llm.CapYes:
		parts = append(parts, "calls tools")
	case llm.CapNo:
		parts = append(parts, "no tool calling (answers only; /run suggestions)")
	}
	return strings.Join(parts, ", ")
}

// Capability detects tool support from /api/show: capabilities contains
// "tools" → yes; capabilities present without it → no; no capabilities field
// (server < 0.6.4) → yes if the template mentions .Tools, else unknown.
// ContextWindow is the num_ctx this client sends (WindowedClient).
func (c *Client) ContextWindow() int { return c.NumCtx }

// ToolSupport asks /api/show whether model supports tools (ToolProber).
func (c *Client) ToolSupport(ctx context.Context, model string) (llm.Capability, error) {
	cp, _, err := c.Capability(ctx, model)
	return cp, err
}

func (c *Client) Capability(ctx context.Context, model string) (llm.Capability, int, error) {
	resp, err := c.api.Show(ctx, &api.ShowRequest{Model: model})
	if err != nil {
		return llm.CapUnknown, 0, c.explain(err)
	}
	c.mu.Lock()
	if c.templates == nil {
		c.templates = map[string]string{}
	}
	c.templates[model] = resp.Template
	c.mu.Unlock()
	ctxLen := 0
	for k, v := range resp.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			if f, ok := v.(float64); ok {
				ctxLen = int(f)
			}
		}
	}
	if len(resp.Capabilities) > 0 {
		for _, cp := range resp.Capabilities {
			if strings.EqualFold(string(cp), "tools") {
				return llm.CapYes, ctxLen, nil
			}
		}
		return llm.CapNo, ctxLen, nil
	}
	if strings.Contains(resp.Template, ".Tools") {
		return llm.CapYes, ctxLen, nil
	}
	return llm.CapUnknown, ctxLen, nil
}

// PromptTemplate is the chat template /api/show gave for model (after
// Capability asked), for choosing a prompt layout (TemplateProvider).
func (c *Client) PromptTemplate(model string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.templates[model]
}

// Chat streams a plain reply.
func (c *Client) Chat(ctx context.Context, messages []llm.Message, out io.Writer) (llm.ChatStats, error) {
	st, _, err := c.ChatWithTools(ctx, messages, nil, out)
	return st, err
}

// ChatWithTools streams content to out as it arrives and collects tool
// calls, each of which Ollama sends whole. Every call gets a unique ID. The
// stream must end with done:true; anything else is an error.
func (c *Client) ChatWithTools(ctx context.Context, messages []llm.Message, tools []anyllm.Tool, out io.Writer) (llm.ChatStats, []anyllm.ToolCall, error) {
	start := time.Now()
	req := &api.ChatRequest{
		Model:     c.Model,
		Messages:  ToMessages(messages),
		Options:   map[string]any{"num_ctx": c.NumCtx},
		KeepAlive: c.KeepAlive,
	}
	stream := true
	req.Stream = &stream
	st := &ollamaStream{out: out, start: start, seen: map[string]bool{}}
	err := c.chat(ctx, &ollamaRequest{ChatRequest: req, Tools: tools}, func(r api.ChatResponse) error {
		if r.Message.Content != "" || r.Message.Thinking != "" || len(r.Message.ToolCalls) > 0 || r.Done {
			llm.Progressed(ctx) // the idle timeout counts from here (idle.go); an empty chunk is not progress
		}
		return st.take(r)
	})
	st.stats.Elapsed = time.Since(start)
	switch {
	case ctx.Err() != nil:
		return st.stats, nil, fmt.Errorf("cancelled: %w", ctx.Err())
	case st.writeErr != nil:
		return st.stats, nil, st.writeErr
	case err != nil:
		return st.stats, nil, c.classify(err)
	case !st.done && !st.gotAny:
		return st.stats, nil, llm.Transient(fmt.Errorf("Ollama at %s closed the connection without a reply (check `ollama serve` logs)", c.BaseURL), "Ollama closed the connection without a reply", 0)
	case !st.done:
		return st.stats, nil, llm.Transient(errors.New("the reply was cut off: the stream from Ollama ended before it finished"), "Ollama's reply was cut off", 0)
	}
	return st.stats, st.calls, nil
}

// classify explains a failed call and marks what another try can fix (a
// restart, a load, a busy or rate-limited server, a dropped stream).
func (c *Client) classify(err error) error {
	explained := c.explain(err)
	var se api.StatusError
	if errors.As(err, &se) {
		why, ok := llm.TransientStatus(se.StatusCode, se.ErrorMessage)
		if !ok || errors.Is(explained, llm.ErrToolsUnsupported) {
			return explained
		}
		var ra *llm.StatusWithRetryAfter
		after := time.Duration(0)
		if errors.As(err, &ra) {
			after = ra.After
		}
		return llm.Transient(explained, "Ollama "+why, after)
	}
	if why, ok := llm.ConnectionTrouble(err); ok {
		return llm.Transient(explained, "Ollama "+why, 0)
	}
	if low := strings.ToLower(err.Error()); slices.ContainsFunc(llm.LoadingWords, func(w string) bool { return strings.Contains(low, w) }) {
		return llm.Transient(explained, "Ollama is loading the model", 0)
	}
	return explained
}

// ollamaStream is one streamed reply as it arrives: the content goes to
// out, the calls (each sent whole) are collected with unique IDs, within
// the bounds on one reply.
type ollamaStream struct {
	out       io.Writer
	start     time.Time
	stats     llm.ChatStats
	calls     []anyllm.ToolCall
	seen      map[string]bool // the call IDs given
	done      bool
	gotAny    bool
	writeErr  error
	callBytes int
}

func (st *ollamaStream) take(r api.ChatResponse) error {
	st.gotAny = true
	if st.stats.FirstToken == 0 && (r.Message.Content != "" || len(r.Message.ToolCalls) > 0) {
		st.stats.FirstToken = time.Since(st.start)
	}
	if r.Message.Content != "" {
		if _, err := io.WriteString(st.out, r.Message.Content); err != nil {
			st.writeErr = err
			return err
		}
	}
	for _, tc := range r.Message.ToolCalls {
		st.addCall(tc)
	}
	if st.callBytes > llm.MaxReplyBytes || len(st.calls) > llm.MaxStreamedCalls {
		st.writeErr = llm.ErrReplyTooLarge
		return llm.ErrReplyTooLarge
	}
	if r.Done {
		st.finish(r)
	}
	return nil
}

// addCall collects a call, with its own ID unless it has none or a taken one.
func (st *ollamaStream) addCall(tc api.ToolCall) {
	id := tc.ID
	if !llm.ValidCallID(id) || st.seen[id] {
		id = textcalls.NewCallID()
	}
	st.seen[id] = true
	args, _ := json.Marshal(tc.Function.Arguments)
	if string(args) == "null" {
		args = []byte("{}")
	}
	st.calls = append(st.calls, anyllm.ToolCall{ID: id, Type: "function", Function: anyllm.FunctionCall{Name: tc.Function.Name, Arguments: string(args)}})
	st.callBytes += len(args)
}

// finish reads the done line: the server's counters, and whether the
// model was cut off.
func (st *ollamaStream) finish(r api.ChatResponse) {
	st.done = true
	st.stats.PromptTokens = r.PromptEvalCount
	st.stats.ReplyTokens = r.EvalCount
	if r.EvalDuration > 0 {
		st.stats.TokensPerSec = float64(r.EvalCount) / r.EvalDuration.Seconds()
	}
	st.stats.PromptEval, st.stats.Generation = r.PromptEvalDuration, r.EvalDuration
	if r.DoneReason == "length" && len(st.calls) == 0 {
		fmt.Fprint(st.out, "\n[reply cut off: the model hit its length or context limit]")
	}
}

// RefusedError is a server that refused the connection (not started yet,
// or restarting), said in words; errors.Is finds ECONNREFUSED in it.
type RefusedError struct{ Msg string }

func (e RefusedError) Error() string { return e.Msg }
func (e RefusedError) Unwrap() error { return syscall.ECONNREFUSED }

// explain turns client errors into one-line messages that say what to do.
func (c *Client) explain(err error) error {
	if err == nil {
		return nil
	}
	var se api.StatusError
	if errors.As(err, &se) {
		return c.explainStatus(se)
	}
	var ue *url.Error
	if errors.As(err, &ue) || errors.Is(err, syscall.ECONNREFUSED) {
		if errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused") {
			return RefusedError{fmt.Sprintf("cannot reach Ollama at %s: start it with `ollama serve`, or point Harvey elsewhere with --ollama URL", c.BaseURL)}
		}
		if ue != nil && ue.Timeout() {
			return fmt.Errorf("Ollama at %s did not answer in time (ollama_timeout)", c.BaseURL)
		}
		return fmt.Errorf("cannot reach Ollama at %s: %v", c.BaseURL, ue.Err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the reply was cut off: the connection to Ollama dropped mid-stream")
	}
	return fmt.Errorf("Ollama: %v", err)
}

// explainStatus is explain for an error status Ollama answered with.
func (c *Client) explainStatus(se api.StatusError) error {
	msg := se.ErrorMessage
	low := strings.ToLower(msg)
	switch {
	case se.StatusCode == http.StatusNotFound:
		hint := fmt.Sprintf("model %q not found", c.Model)
		if models, lerr := c.Models(context.Background()); lerr == nil {
			if len(models) > 0 {
				hint += " (installed: " + strings.Join(models, ", ") + ")"
			} else {
				hint += " (no models installed)"
			}
		}
		return fmt.Errorf("%s; pull it with: ollama pull %s", hint, c.Model)
	case strings.Contains(low, "does not support tools"):
		return fmt.Errorf("%w (%s)", llm.ErrToolsUnsupported, msg)
	case se.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("rate limited by the server: %s", msg)
	case strings.Contains(low, "context") && (strings.Contains(low, "length") || strings.Contains(low, "too long") || strings.Contains(low, "exceed")):
		return fmt.Errorf("context too long: %s; use /summarize or /clear, or raise num_ctx", msg)
	case se.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("Ollama refused the request (401): %s", msg)
	}
	if msg == "" {
		msg = se.Status
	}
	return fmt.Errorf("Ollama error (%d): %s", se.StatusCode, msg)
}

// ToMessages maps history to Ollama's native messages: tool results as
// role "tool" with tool_name and tool_call_id, assistant calls with their IDs
// and arguments as a JSON object.
func ToMessages(msgs []llm.Message) []api.Message {
	out := make([]api.Message, 0, len(msgs))
	for _, m := range msgs {
		am := api.Message{Role: string(m.Role), Content: m.Content}
		if m.Role == llm.RoleTool {
			am.ToolName = m.ToolName
			am.ToolCallID = m.ToolCallID
		}
		for i, tc := range m.ToolCalls {
			args := api.NewToolCallFunctionArguments()
			var raw map[string]any
			if json.Unmarshal([]byte(tc.Function.Arguments), &raw) == nil {
				for _, k := range slices.Sorted(maps.Keys(raw)) {
					args.Set(k, raw[k])
				}
			}
			am.ToolCalls = append(am.ToolCalls, api.ToolCall{ID: tc.ID, Function: api.ToolCallFunction{Index: i, Name: tc.Function.Name, Arguments: args}})
		}
		out = append(out, am)
	}
	return out
}

// ollamaRequest is a chat request with its tools' schemas whole (chat).
type ollamaRequest struct {
	*api.ChatRequest
	Tools []anyllm.Tool `json:"tools,omitempty"`
}

// ToTools converts schemas through JSON so enum, items and nested
// properties survive.
func ToTools(tools []anyllm.Tool) (api.Tools, error) {
	b, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	var out api.Tools
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("tool schema: %v", err)
	}
	return out, nil
}

// DefaultKeepAlive is how long Ollama keeps the model loaded after a
// request when the config does not say (Ollama's own default, 5 minutes,
// unloads it while the user reads and thinks).
const DefaultKeepAlive = 30 * time.Minute

// Warmer is the warm start of a conversation that will begin with
// messages and tools: a request that evaluates them and generates one
// token, built now (before any goroutine runs, from a copy of the
// messages), and the function that sends it and discards the answer.
func (c *Client) Warmer(messages []llm.Message, tools []anyllm.Tool) func(ctx context.Context) error {
	req := c.warmRequest(messages, tools)
	return func(ctx context.Context) error {
		return c.chat(ctx, req, func(api.ChatResponse) error { return nil })
	}
}

// warmRequest is the request that evaluates messages and generates one
// token.
func (c *Client) warmRequest(messages []llm.Message, tools []anyllm.Tool) *ollamaRequest {
	stream := false
	req := &api.ChatRequest{Model: c.Model, Messages: ToMessages(messages), Stream: &stream, KeepAlive: c.KeepAlive,
		Options: map[string]any{"num_ctx": c.NumCtx, "num_predict": 1}}
	return &ollamaRequest{ChatRequest: req, Tools: tools}
}

// Loaded reports whether Ollama holds the model in memory, and until when.
func (c *Client) Loaded(ctx context.Context) (bool, time.Time, error) {
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
