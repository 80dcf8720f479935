// Package fakeollama is a fake Ollama for tests, as net/http/httptest is
// a fake server: it speaks Ollama's real wire protocol (shared/notes/wire.md:
// NDJSON streaming on /api/chat, /api/show, /api/tags, /api/ps,
// /api/version, /api/embed) and plays what llama3.2 and mistral do, their
// quirks included, from a script of replies (TextReply, ToolReply, or a
// Reply's lines, status, stalls and delays), recording every request for
// assertions. Any package's tests may import it; nothing else does.
//
// Contract: New makes a server that starts at its first URL; Script
// queues replies, ChatRequests returns what was asked; a chat request with
// no reply left is answered 400. Fields a test sets (Caps, Template,
// CtxLen, Respond, ...) are set before the first URL, or under Mu.
package fakeollama

import (
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
)

// Server speaks Ollama's wire protocol (wire.md): NDJSON streaming on
// /api/chat, /api/show, /api/tags and /api/version. Each chat request takes
// the next scripted reply; request bodies are recorded for assertions.
type Server struct {
	Recorder[Reply]
	T        *testing.T
	Srv      *httptest.Server
	Models   []string
	Caps     map[string][]string // model → capabilities (nil: field absent)
	Template map[string]string

	CtxLen      map[string]int   // model → context_length in /api/show (default 131072)
	AutoSummary string           // when set, answer summary requests with it (not from the script)
	KeepLast    bool             // keep only the last request (long sessions)
	Summaries   int              // summary requests answered
	APIDelay    time.Duration    // every answer waits this long (a busy or slow machine; set under mu)
	Warms       []map[string]any // warm requests (num_predict 1): answered apart from the script
	WarmDelay   time.Duration    // a warm request takes this long (prompt evaluation on a Pi)
	Loaded      map[string]bool  // models a chat request has loaded (/api/ps)
	NoPS        bool             // a server with no /api/ps (not Ollama, or an older one): 404
	// Respond, when set, answers a chat request instead of the script (a
	// scripted model that decides by what it is asked).
	Respond   func(req map[string]any) Reply
	Bodies    [][]byte  // the chat requests as sent (the order of their keys kept)
	start     sync.Once // the server starts at the first URL()
	DownUntil time.Time // until then, connections are refused or dropped (a restart)
	Embedded  []string  // every text /api/embed was asked to embed (under mu)
}

// Reply is one scripted /api/chat answer.
type Reply struct {
	Status     int           // non-zero: reply with this HTTP status and errBody
	ErrMsg     string        // error text for status replies
	RetryAfter string        // the Retry-After header of a status reply
	Then       func()        // called once the reply is written
	Lines      []string      // NDJSON lines (already JSON)
	NoDone     bool          // drop the final done line (a cut-off stream)
	Stall      time.Duration // after the first line, wait this long (or until the client hangs up)
	First      time.Duration // before the first line: prompt evaluation on a slow machine
	Gap        time.Duration // between lines: a slow model's token rate
}

func New(t *testing.T, models ...string) *Server {
	f := &Server{T: t, Models: models, Caps: map[string][]string{}, Template: map[string]string{}}
	for _, m := range models {
		f.Caps[m] = []string{"completion", "tools"}
	}
	// Started by the first URL(): what a test sets on the fake before
	// then (caps, respond, templates) happens before every request, also
	// one from the built binary, which the race detector cannot see.
	f.Srv = httptest.NewUnstartedServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.Srv.Close)
	return f
}

func (f *Server) URL() string {
	f.start.Do(f.Srv.Start)
	return f.Srv.URL
}

// Recorder is what the fake servers share: replies scripted in order, and
// every chat request body recorded for assertions.
type Recorder[R any] struct {
	Mu       sync.Mutex
	Replies  []R
	Requests []map[string]any
}

func (f *Recorder[R]) Script(r ...R) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Replies = append(f.Replies, r...)
}

func (f *Recorder[R]) ChatRequests() []map[string]any {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]map[string]any(nil), f.Requests...)
}

func ts() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// ContentLine is a streamed content chunk.
func ContentLine(model, text string) string {
	b, _ := json.Marshal(map[string]any{"model": model, "created_at": ts(), "message": map[string]any{"role": "assistant", "content": text}, "done": false})
	return string(b)
}

// CallLine is a chunk carrying one whole tool call (Ollama ≥ 0.4.6). id may
// be empty (servers before 0.12.10).
func CallLine(model, id, name string, args map[string]any) string {
	call := map[string]any{"function": map[string]any{"index": 0, "name": name, "arguments": args}}
	if id != "" {
		call["id"] = id
	}
	b, _ := json.Marshal(map[string]any{"model": model, "created_at": ts(), "message": map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call}}, "done": false})
	return string(b)
}

// DoneLine ends a stream with stats.
func DoneLine(model string) string {
	b, _ := json.Marshal(map[string]any{"model": model, "created_at": ts(), "message": map[string]any{"role": "assistant", "content": ""},
		"done": true, "done_reason": "stop", "total_duration": 1204518333, "load_duration": 20811250,
		"prompt_eval_count": 57, "prompt_eval_duration": 310233000, "eval_count": 11, "eval_duration": 862104000})
	return string(b)
}

// TextReply streams text in a few chunks and ends.
func TextReply(model, text string) Reply {
	var lines []string
	for len(text) > 0 {
		n := min(len(text), 7)
		lines = append(lines, ContentLine(model, text[:n]))
		text = text[n:]
	}
	return Reply{Lines: append(lines, DoneLine(model))}
}

// ToolReply streams tool calls as llama3.2 does: each in its own chunk.
func ToolReply(model string, calls ...Call) Reply {
	var lines []string
	for _, c := range calls {
		lines = append(lines, CallLine(model, c.ID, c.Name, c.Args))
	}
	return Reply{Lines: append(lines, DoneLine(model))}
}

type Call struct {
	ID   string
	Name string
	Args map[string]any
}

// ServeHTTP answers as Ollama does: for a server of a test's own (a
// helper process has no testing.T for New).
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.handle(w, r) }

func (f *Server) handle(w http.ResponseWriter, r *http.Request) {
	f.Mu.Lock()
	delay, down := f.APIDelay, time.Now().Before(f.DownUntil)
	f.Mu.Unlock()
	if down {
		// Restarting: a kept-alive connection is dropped.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	if !wait(r, delay) {
		return
	}
	switch r.URL.Path {
	case "/api/embed":
		f.embed(w, r)
	case "/api/version":
		io.WriteString(w, `{"version":"0.15.4"}`)
	case "/api/ps":
		f.ps(w, r)
	case "/api/tags":
		f.tags(w)
	case "/api/show":
		f.show(w, r)
	case "/api/chat":
		f.chat(w, r)
	default:
		http.NotFound(w, r)
	}
}

// wait waits d, or until the client hangs up (false).
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// embed is Ollama's batch embedding endpoint, with a stand-in model:
// words hashed into 64 dimensions (texts that share words are near); other
// models are not installed.
func (f *Server) embed(w http.ResponseWriter, r *http.Request) {
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
		vecs = append(vecs, BagOfWords(t))
	}
	f.Mu.Lock()
	f.Embedded = append(f.Embedded, req.Input...)
	f.Mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vecs})
}

// ps lists the models a chat request has loaded.
func (f *Server) ps(w http.ResponseWriter, r *http.Request) {
	if f.NoPS {
		http.NotFound(w, r)
		return
	}
	f.Mu.Lock()
	var ms []map[string]any
	for m := range f.Loaded {
		ms = append(ms, map[string]any{"name": m, "model": m, "expires_at": "2026-11-24T23:59:00Z"})
	}
	f.Mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"models": ms})
}

// tags lists the models, as the Ollama library's builds report them.
func (f *Server) tags(w http.ResponseWriter) {
	var ms []map[string]any
	for _, m := range f.Models {
		size, family, params, quant := int64(2019393189), "llama", "3.2B", "Q4_K_M"
		if strings.HasPrefix(m, "mistral") {
			size, params, quant = 4113301824, "7.2B", "Q4_0"
		}
		ms = append(ms, map[string]any{"name": m, "model": m, "modified_at": "2025-05-04T17:37:44.706015396-07:00", "size": size, "digest": "a80c4f17",
			"details": map[string]any{"format": "gguf", "family": family, "families": []string{family}, "parameter_size": params, "quantization_level": quant}})
	}
	json.NewEncoder(w).Encode(map[string]any{"models": ms})
}

// show describes a model: its template, context length and capabilities.
func (f *Server) show(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	name, _ := req["model"].(string)
	found := false
	for _, m := range f.Models {
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
	if v, ok := f.CtxLen[name]; ok {
		n = v
	}
	resp := map[string]any{"template": f.Template[name], "model_info": map[string]any{"general.architecture": "llama", "llama.context_length": n}}
	if caps := f.Caps[name]; caps != nil {
		resp["capabilities"] = caps
	}
	json.NewEncoder(w).Encode(resp)
}

// chat answers a chat request: a warm request apart, a summary request
// from AutoSummary, else the next scripted reply (Respond's first).
func (f *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":"bad json"}`)
		return
	}
	f.Mu.Lock()
	if f.Loaded == nil {
		f.Loaded = map[string]bool{}
	}
	model, _ := req["model"].(string)
	f.Loaded[model] = true
	if opts, _ := req["options"].(map[string]any); opts != nil && opts["num_predict"] == float64(1) {
		// A warm request: evaluated, one token, discarded; not scripted.
		f.Warms = append(f.Warms, req)
		d := f.WarmDelay
		f.Mu.Unlock()
		if wait(r, d) {
			fmt.Fprintf(w, `{"model":%q,"created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"."},"done":true,"done_reason":"length","prompt_eval_count":900,"eval_count":1}`+"\n", model)
		}
		return
	}
	if f.KeepLast {
		f.Requests, f.Bodies = f.Requests[:0], f.Bodies[:0]
	}
	f.Requests = append(f.Requests, req)
	f.Bodies = append(f.Bodies, body)
	if msgs := MessagesOf(req); f.AutoSummary != "" && len(msgs) > 0 && strings.HasPrefix(fmt.Sprint(msgs[len(msgs)-1]["content"]), "Summarize this conversation") {
		f.Summaries++
		f.Mu.Unlock()
		for _, l := range TextReply(model, f.AutoSummary).Lines {
			io.WriteString(w, l+"\n")
		}
		return
	}
	if f.Respond != nil {
		f.Replies = append([]Reply{f.Respond(req)}, f.Replies...)
	}
	if len(f.Replies) == 0 {
		f.Mu.Unlock()
		w.WriteHeader(400) // not a failure a retry could fix
		io.WriteString(w, `{"error":"fake: no scripted reply left"}`)
		return
	}
	rep := f.Replies[0]
	f.Replies = f.Replies[1:]
	f.Mu.Unlock()
	rep.write(w, r)
}

// write sends the reply: an HTTP error, or its lines streamed as NDJSON
// with its delays.
func (rep Reply) write(w http.ResponseWriter, r *http.Request) {
	if rep.Status != 0 {
		if rep.RetryAfter != "" {
			w.Header().Set("Retry-After", rep.RetryAfter)
		}
		w.WriteHeader(rep.Status)
		if rep.ErrMsg != "" {
			json.NewEncoder(w).Encode(map[string]string{"error": rep.ErrMsg})
		}
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	fl, _ := w.(http.Flusher)
	lines := rep.Lines
	if rep.NoDone && len(lines) > 0 {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		d := rep.Gap
		if i == 0 {
			d = rep.First
		}
		if !wait(r, d) {
			return
		}
		io.WriteString(w, l+"\n")
		if fl != nil {
			fl.Flush()
		}
		if i == 0 && !wait(r, rep.Stall) {
			return
		}
	}
	if rep.Then != nil {
		rep.Then()
	}
}

// MessagesOf returns the messages of a recorded chat request.
func MessagesOf(req map[string]any) []map[string]any {
	raw, _ := req["messages"].([]any)
	var out []map[string]any
	for _, m := range raw {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// ToolNamesOf returns the tool names sent in a chat request.
func ToolNamesOf(req map[string]any) []string {
	raw, _ := req["tools"].([]any)
	var out []string
	for _, t := range raw {
		fn, _ := t.(map[string]any)["function"].(map[string]any)
		name, _ := fn["name"].(string)
		out = append(out, name)
	}
	return out
}

// OwnAddress moves the (not yet started) server to an address of its own,
// 127.0.0.3, so that while downFor has it closed no other test's server
// takes its port.
func (f *Server) OwnAddress() {
	if ln, err := net.Listen("tcp4", "127.0.0.3:0"); err == nil {
		f.Srv.Listener.Close()
		f.Srv.Listener = ln
	}
}

// DownFor makes the server refuse connections for d (Ollama restarting),
// then answer again on the same address (see ownAddress).
func (f *Server) DownFor(d time.Duration) {
	addr := f.Srv.Listener.Addr().String()
	f.Mu.Lock()
	f.DownUntil = time.Now().Add(d)
	f.Mu.Unlock()
	f.Srv.Listener.Close()
	time.AfterFunc(d, func() {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return
		}
		srv := &http.Server{Handler: http.HandlerFunc(f.handle)}
		go srv.Serve(ln)
		f.T.Cleanup(func() { srv.Close() })
	})
}

// Late is a fake with model that answers reply, refusing
// connections for its first down (a server that starts after Harvey), and
// its URL.
func Late(t *testing.T, model, reply string, down time.Duration) (*Server, string) {
	f := New(t, model+":latest")
	f.OwnAddress()
	url := f.URL()
	f.Script(TextReply(model, reply))
	f.DownFor(down)
	return f, url
}

// RefusingURL is the URL of a loopback port nobody listens on (a server
// that never comes).
func RefusingURL(t *testing.T) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// BagOfWords is the fake embedding model: each word of four letters or
// more hashed into one of 64 dimensions.
func BagOfWords(t string) []float32 {
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

// WarmCount is how many warm requests (num_predict 1) came so far.
func (f *Server) WarmCount() int {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return len(f.Warms)
}

// EmbedTexts is what /api/embed was asked to embed so far.
func (f *Server) EmbedTexts() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.Embedded)
}

// ToolResults maps tool_call ids to the tool messages of the last request
// (Ollama's tool messages carry tool_name; ids are matched by order).
func ToolResults(reqs []map[string]any) map[string]string {
	out := map[string]string{}
	for _, req := range reqs {
		msgs := MessagesOf(req)
		var ids []string
		for _, m := range msgs {
			switch m["role"] {
			case "assistant":
				ids = ids[:0]
				calls, _ := m["tool_calls"].([]any)
				for _, c := range calls {
					cm, _ := c.(map[string]any)
					id, _ := cm["id"].(string)
					ids = append(ids, id)
				}
			case "tool":
				if len(ids) > 0 {
					out[ids[0]], _ = m["content"].(string)
					ids = ids[1:]
				}
			}
		}
	}
	return out
}
