// Package fakeopenai is a fake OpenAI-compatible model server (wire.md
// §4: chat completions streamed as SSE, tool-call deltas, models,
// embeddings as floats or base64), quirks and failures scripted per
// reply, for any package's tests, as internal/fakeollama is Ollama's.
package fakeopenai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// Server speaks the OpenAI-compatible wire protocol of wire.md §4 (SSE
// "data:" lines ending with "data: [DONE]") as llama.cpp, vLLM and
// LM Studio do. Each chat request takes the next scripted reply (Script);
// Requests are the chat requests it got.
type Server struct {
	fakeollama.Recorder[Reply]
	srv *httptest.Server
}

// Reply is one scripted answer to a chat request.
type Reply struct {
	Status int           // non-zero: an HTTP error with Body
	Body   string        // error body
	Events []string      // JSON chunks (without "data: ")
	NoDone bool          // no [DONE] line (a cut-off stream)
	Stall  time.Duration // after the first event
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	f := &Server{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the server's base URL.
func (f *Server) URL() string { return f.srv.URL }

// CloseClientConnections drops every connection (a server gone mid-reply).
func (f *Server) CloseClientConnections() { f.srv.CloseClientConnections() }

func (f *Server) handle(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"qwen2.5-coder-7b","object":"model","created":1,"owned_by":"llamacpp"}]}`)
	case "/v1/embeddings":
		// OpenAI's embedding endpoint with the stand-in model (words
		// hashed), each vector as floats or base64 as asked.
		var req struct {
			Model          string `json:"model"`
			Input          any    `json:"input"`
			EncodingFormat string `json:"encoding_format"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		var texts []string
		switch v := req.Input.(type) {
		case string:
			texts = []string{v}
		case []any:
			for _, x := range v {
				s, _ := x.(string)
				texts = append(texts, s)
			}
		}
		var data []map[string]any
		for i := len(texts) - 1; i >= 0; i-- { // out of order, as the index field allows
			vec := fakeollama.BagOfWords(texts[i])
			var emb any = vec
			if req.EncodingFormat == "base64" {
				var buf bytes.Buffer
				binary.Write(&buf, binary.LittleEndian, vec)
				emb = base64.StdEncoding.EncodeToString(buf.Bytes())
			}
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": emb})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data, "usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
	case "/v1/chat/completions":
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		json.Unmarshal(body, &req)
		f.Mu.Lock()
		f.Requests = append(f.Requests, req)
		if len(f.Replies) == 0 {
			f.Mu.Unlock()
			w.WriteHeader(400) // not a failure a retry could fix
			io.WriteString(w, `{"error":{"message":"fake: no scripted reply left","type":"invalid_request_error"}}`)
			return
		}
		rep := f.Replies[0]
		f.Replies = f.Replies[1:]
		f.Mu.Unlock()
		if rep.Status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rep.Status)
			io.WriteString(w, rep.Body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i, e := range rep.Events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			fl.Flush()
			if i == 0 && rep.Stall > 0 {
				select {
				case <-time.After(rep.Stall):
				case <-r.Context().Done():
					return
				}
			}
		}
		if !rep.NoDone {
			io.WriteString(w, "data: [DONE]\n\n")
		}
	default:
		http.NotFound(w, r)
	}
}

// Chunk builds one chat.completion.chunk with a delta and finish reason.
func Chunk(delta map[string]any, finish string) string {
	ch := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		ch["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []any{ch}})
	return string(b)
}

// UsageChunk is the last chunk, with the token counts.
func UsageChunk(prompt, completion int) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, prompt, completion, prompt+completion)
}

// TextDelta is a chunk of reply text.
func TextDelta(s string) string { return Chunk(map[string]any{"content": s}, "") }

// CallDelta is a tool_calls delta; empty fields are left out, as servers do.
func CallDelta(index int, id, name, args string) string {
	fn := map[string]any{"arguments": args}
	if name != "" {
		fn["name"] = name
	}
	tc := map[string]any{"index": index, "function": fn}
	if id != "" {
		tc["id"] = id
		tc["type"] = "function"
	}
	return Chunk(map[string]any{"tool_calls": []any{tc}}, "")
}

// Text is a reply of text, streamed five bytes at a time.
func Text(text string) Reply {
	var ev []string
	for len(text) > 0 {
		n := min(len(text), 5)
		ev = append(ev, TextDelta(text[:n]))
		text = text[n:]
	}
	return Reply{Events: append(ev, Chunk(map[string]any{}, "stop"), UsageChunk(40, 9))}
}
