// Test support: a fake Ollama that speaks Ollama's real wire protocol
// (shared/notes/wire.md) and scripts what llama3.2 and mistral do, for the
// tests of ollama.go and everything above it.
package harvey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/configfile"
)

// fakeOllama speaks Ollama's wire protocol (wire.md): NDJSON streaming on
// /api/chat, /api/show, /api/tags and /api/version. Each chat request takes
// the next scripted reply; request bodies are recorded for assertions.
type fakeOllama struct {
	fakeScript[fakeReply]
	t        *testing.T
	srv      *httptest.Server
	models   []string
	caps     map[string][]string // model → capabilities (nil: field absent)
	template map[string]string

	ctxLen      map[string]int   // model → context_length in /api/show (default 131072)
	autoSummary string           // when set, answer summary requests with it (not from the script)
	keepLast    bool             // keep only the last request (long sessions)
	summaries   int              // summary requests answered
	apiDelay    time.Duration    // every answer waits this long (a busy or slow machine; set under mu)
	warms       []map[string]any // warm requests (num_predict 1): answered apart from the script
	warmDelay   time.Duration    // a warm request takes this long (prompt evaluation on a Pi)
	loaded      map[string]bool  // models a chat request has loaded (/api/ps)
	noPS        bool             // a server with no /api/ps (not Ollama, or an older one): 404
	// respond, when set, answers a chat request instead of the script (a
	// scripted model that decides by what it is asked).
	respond   func(req map[string]any) fakeReply
	bodies    [][]byte  // the chat requests as sent (the order of their keys kept)
	start     sync.Once // the server starts at the first URL()
	downUntil time.Time // until then, connections are refused or dropped (a restart)
	embedded  []string  // every text /api/embed was asked to embed (under mu)
}

// fakeReply is one scripted /api/chat answer.
type fakeReply struct {
	status     int           // non-zero: reply with this HTTP status and errBody
	errMsg     string        // error text for status replies
	retryAfter string        // the Retry-After header of a status reply
	then       func()        // called once the reply is written
	lines      []string      // NDJSON lines (already JSON)
	noDone     bool          // drop the final done line (a cut-off stream)
	stall      time.Duration // after the first line, wait this long (or until the client hangs up)
	first      time.Duration // before the first line: prompt evaluation on a slow machine
	gap        time.Duration // between lines: a slow model's token rate
}

func newFakeOllama(t *testing.T, models ...string) *fakeOllama {
	f := &fakeOllama{t: t, models: models, caps: map[string][]string{}, template: map[string]string{}}
	for _, m := range models {
		f.caps[m] = []string{"completion", "tools"}
	}
	// Started by the first URL(): what a test sets on the fake before
	// then (caps, respond, templates) happens before every request, also
	// one from the built binary, which the race detector cannot see.
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOllama) URL() string {
	f.start.Do(f.srv.Start)
	return f.srv.URL
}

// fakeScript is what the fake servers share: replies scripted in order, and
// every chat request body recorded for assertions.
type fakeScript[R any] struct {
	mu       sync.Mutex
	replies  []R
	requests []map[string]any
}

func (f *fakeScript[R]) script(r ...R) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, r...)
}

func (f *fakeScript[R]) chatRequests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.requests...)
}

func ts() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// contentLine is a streamed content chunk.
func contentLine(model, text string) string {
	b, _ := json.Marshal(map[string]any{"model": model, "created_at": ts(), "message": map[string]any{"role": "assistant", "content": text}, "done": false})
	return string(b)
}

// callLine is a chunk carrying one whole tool call (Ollama ≥ 0.4.6). id may
// be empty (servers before 0.12.10).
func callLine(model, id, name string, args map[string]any) string {
	call := map[string]any{"function": map[string]any{"index": 0, "name": name, "arguments": args}}
	if id != "" {
		call["id"] = id
	}
	b, _ := json.Marshal(map[string]any{"model": model, "created_at": ts(), "message": map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call}}, "done": false})
	return string(b)
}

// doneLine ends a stream with stats.
func doneLine(model string) string {
	b, _ := json.Marshal(map[string]any{"model": model, "created_at": ts(), "message": map[string]any{"role": "assistant", "content": ""},
		"done": true, "done_reason": "stop", "total_duration": 1204518333, "load_duration": 20811250,
		"prompt_eval_count": 57, "prompt_eval_duration": 310233000, "eval_count": 11, "eval_duration": 862104000})
	return string(b)
}

// textReply streams text in a few chunks and ends.
func textReply(model, text string) fakeReply {
	var lines []string
	for len(text) > 0 {
		n := min(len(text), 7)
		lines = append(lines, contentLine(model, text[:n]))
		text = text[n:]
	}
	return fakeReply{lines: append(lines, doneLine(model))}
}

// toolReply streams tool calls as llama3.2 does: each in its own chunk.
func toolReply(model string, calls ...fakeCall) fakeReply {
	var lines []string
	for _, c := range calls {
		lines = append(lines, callLine(model, c.id, c.name, c.args))
	}
	return fakeReply{lines: append(lines, doneLine(model))}
}

type fakeCall struct {
	id   string
	name string
	args map[string]any
}

func (f *fakeOllama) handle(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	delay, down := f.apiDelay, time.Now().Before(f.downUntil)
	f.mu.Unlock()
	if down {
		// Restarting: a kept-alive connection is dropped.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	switch r.URL.Path {
	case "/api/embed":
		// Ollama's batch embedding endpoint, with a stand-in model:
		// words hashed into 64 dimensions (texts that share words are
		// near); other models are not installed.
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Model != "nomic-embed-text" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"model %q not found, try pulling it first"}`, req.Model)
			return
		}
		var vecs [][]float32
		for _, t := range req.Input {
			vecs = append(vecs, bagOfWords(t))
		}
		f.mu.Lock()
		f.embedded = append(f.embedded, req.Input...)
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vecs})
	case "/api/version":
		io.WriteString(w, `{"version":"0.15.4"}`)
	case "/api/ps":
		if f.noPS {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		var ms []map[string]any
		for m := range f.loaded {
			ms = append(ms, map[string]any{"name": m, "model": m, "expires_at": "2026-11-24T23:59:00Z"})
		}
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"models": ms})
	case "/api/tags":
		var ms []map[string]any
		for _, m := range f.models {
			// What the Ollama library's builds report.
			size, family, params, quant := int64(2019393189), "llama", "3.2B", "Q4_K_M"
			if strings.HasPrefix(m, "mistral") {
				size, params, quant = 4113301824, "7.2B", "Q4_0"
			}
			ms = append(ms, map[string]any{"name": m, "model": m, "modified_at": "2025-05-04T17:37:44.706015396-07:00", "size": size, "digest": "a80c4f17",
				"details": map[string]any{"format": "gguf", "family": family, "families": []string{family}, "parameter_size": params, "quantization_level": quant}})
		}
		json.NewEncoder(w).Encode(map[string]any{"models": ms})
	case "/api/show":
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		name, _ := req["model"].(string)
		found := false
		for _, m := range f.models {
			if m == name || strings.TrimSuffix(m, ":latest") == name {
				found, name = true, m
			}
		}
		if !found {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"model '%s' not found"}`, name)
			return
		}
		n := 131072
		if v, ok := f.ctxLen[name]; ok {
			n = v
		}
		resp := map[string]any{"template": f.template[name], "model_info": map[string]any{"general.architecture": "llama", "llama.context_length": n}}
		if caps := f.caps[name]; caps != nil {
			resp["capabilities"] = caps
		}
		json.NewEncoder(w).Encode(resp)
	case "/api/chat":
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"bad json"}`)
			return
		}
		f.mu.Lock()
		if f.loaded == nil {
			f.loaded = map[string]bool{}
		}
		model, _ := req["model"].(string)
		f.loaded[model] = true
		if opts, _ := req["options"].(map[string]any); opts != nil && opts["num_predict"] == float64(1) {
			// A warm request: evaluated, one token, discarded; not scripted.
			f.warms = append(f.warms, req)
			wait := f.warmDelay
			f.mu.Unlock()
			select {
			case <-time.After(wait):
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, `{"model":%q,"created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"."},"done":true,"done_reason":"length","prompt_eval_count":900,"eval_count":1}`+"\n", model)
			return
		}
		if f.keepLast {
			f.requests, f.bodies = f.requests[:0], f.bodies[:0]
		}
		f.requests = append(f.requests, req)
		f.bodies = append(f.bodies, body)
		if msgs := messagesOf(req); f.autoSummary != "" && len(msgs) > 0 && strings.HasPrefix(fmt.Sprint(msgs[len(msgs)-1]["content"]), "Summarize this conversation") {
			f.summaries++
			f.mu.Unlock()
			model, _ := req["model"].(string)
			for _, l := range textReply(model, f.autoSummary).lines {
				io.WriteString(w, l+"\n")
			}
			return
		}
		if f.respond != nil {
			f.replies = append([]fakeReply{f.respond(req)}, f.replies...)
		}
		if len(f.replies) == 0 {
			f.mu.Unlock()
			w.WriteHeader(400) // not a failure a retry could fix
			io.WriteString(w, `{"error":"fake: no scripted reply left"}`)
			return
		}
		rep := f.replies[0]
		f.replies = f.replies[1:]
		f.mu.Unlock()
		if rep.status != 0 {
			if rep.retryAfter != "" {
				w.Header().Set("Retry-After", rep.retryAfter)
			}
			w.WriteHeader(rep.status)
			if rep.errMsg != "" {
				json.NewEncoder(w).Encode(map[string]string{"error": rep.errMsg})
			}
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		fl, _ := w.(http.Flusher)
		lines := rep.lines
		if rep.noDone && len(lines) > 0 {
			lines = lines[:len(lines)-1]
		}
		for i, l := range lines {
			wait := rep.gap
			if i == 0 {
				wait = rep.first
			}
			if wait > 0 {
				select {
				case <-time.After(wait):
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, l+"\n")
			if fl != nil {
				fl.Flush()
			}
			if i == 0 && rep.stall > 0 {
				select {
				case <-time.After(rep.stall):
				case <-r.Context().Done():
					return
				}
			}
		}
		if rep.then != nil {
			rep.then()
		}
	default:
		http.NotFound(w, r)
	}
}

// messagesOf returns the messages of a recorded chat request.
func messagesOf(req map[string]any) []map[string]any {
	raw, _ := req["messages"].([]any)
	var out []map[string]any
	for _, m := range raw {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// toolNamesOf returns the tool names sent in a chat request.
func toolNamesOf(req map[string]any) []string {
	raw, _ := req["tools"].([]any)
	var out []string
	for _, t := range raw {
		fn, _ := t.(map[string]any)["function"].(map[string]any)
		name, _ := fn["name"].(string)
		out = append(out, name)
	}
	return out
}

// testAgent builds an agent on a temp workspace with the fake as backend.
type testEnv struct {
	a      *Agent
	ws     *Workspace
	dir    string
	out    *bytes.Buffer
	errOut *bytes.Buffer
}

func newTestEnv(t *testing.T, f *fakeOllama, model string) *testEnv {
	t.Helper()
	dir := t.TempDir()
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	cf, err := configfile.Load(ws.Tree)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	a := newAgent(ws, cf, newLineReader(strings.NewReader("")), out, errOut)
	a.approvals.auto = true
	if f != nil {
		a.OllamaURL = f.URL()
		if err := a.UseModel(t.Context(), model); err != nil {
			t.Fatal(err)
		}
	}
	return &testEnv{a: a, ws: ws, dir: dir, out: out, errOut: errOut}
}

// ownAddress moves the (not yet started) server to an address of its own,
// 127.0.0.3, so that while downFor has it closed no other test's server
// takes its port.
func (f *fakeOllama) ownAddress() {
	if ln, err := net.Listen("tcp4", "127.0.0.3:0"); err == nil {
		f.srv.Listener.Close()
		f.srv.Listener = ln
	}
}

// downFor makes the server refuse connections for d (Ollama restarting),
// then answer again on the same address (see ownAddress).
func (f *fakeOllama) downFor(d time.Duration) {
	addr := f.srv.Listener.Addr().String()
	f.mu.Lock()
	f.downUntil = time.Now().Add(d)
	f.mu.Unlock()
	f.srv.Listener.Close()
	time.AfterFunc(d, func() {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return
		}
		srv := &http.Server{Handler: http.HandlerFunc(f.handle)}
		go srv.Serve(ln)
		f.t.Cleanup(func() { srv.Close() })
	})
}

// lateFakeOllama is a fake with model that answers reply, refusing
// connections for its first down (a server that starts after Harvey), and
// its URL.
func lateFakeOllama(t *testing.T, model, reply string, down time.Duration) (*fakeOllama, string) {
	f := newFakeOllama(t, model+":latest")
	f.ownAddress()
	url := f.URL()
	f.script(textReply(model, reply))
	f.downFor(down)
	return f, url
}

// refusingURL is the URL of a loopback port nobody listens on (a server
// that never comes).
func refusingURL(t *testing.T) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// bagOfWords is the fake embedding model: each word of four letters or
// more hashed into one of 64 dimensions.
func bagOfWords(t string) []float32 {
	v := make([]float32, 64)
	for _, w := range strings.Fields(strings.ToLower(t)) {
		w = strings.Trim(w, ".,;:()#?!\"'`")
		if len(w) < 4 {
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%64]++
	}
	return v
}

// embedTexts is what /api/embed was asked to embed so far.
func (f *fakeOllama) embedTexts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.embedded)
}
