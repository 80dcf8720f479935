package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// conn is JSON-RPC 2.0 over a server's stdio in LSP's framing
// (Content-Length headers): requests Harvey sends, the server's requests
// answered (configuration: nothing set; the rest: null), and
// publishDiagnostics kept per document, the latest of each.
type conn struct {
	w   io.Writer
	wmu sync.Mutex

	mu      sync.Mutex
	next    int64
	pending map[int64]chan reply
	docs    map[string]*published // URI → the latest diagnostics
	seq     int                   // publishes so far
	notify  chan struct{}         // closed and replaced at each publish
	done    chan struct{}         // closed when the server's output ends
	err     error
}

type reply struct {
	result json.RawMessage
	err    error
}

// published is one document's latest diagnostics.
type published struct {
	seq        int
	version    int
	hasVersion bool
	diags      []Diagnostic
}

// Diagnostic is LSP's, as far as Harvey reads it.
type Diagnostic struct {
	Range struct {
		Start struct {
			Line      int `json:"line"`
			Character int `json:"character"`
		} `json:"start"`
	} `json:"range"`
	Severity int    `json:"severity"` // 1 error, 2 warning, 3 information, 4 hint
	Message  string `json:"message"`
	Source   string `json:"source"`
}

// maxFrame bounds one message from a server (a diagnostics list of a huge
// file is far less).
const maxFrame = 16 << 20

func newConn(r io.Reader, w io.Writer) *conn {
	c := &conn{w: w, pending: map[int64]chan reply{}, docs: map[string]*published{}, notify: make(chan struct{}), done: make(chan struct{})}
	go c.read(bufio.NewReaderSize(r, 64<<10))
	return c
}

// message is any JSON-RPC message.
type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (c *conn) read(r *bufio.Reader) {
	var err error
	for {
		var body []byte
		if body, err = readFrame(r); err != nil {
			break
		}
		var m message
		if json.Unmarshal(body, &m) != nil {
			continue
		}
		c.dispatch(m)
	}
	c.mu.Lock()
	c.err = err
	for id, ch := range c.pending {
		ch <- reply{err: fmt.Errorf("the server ended (%v)", err)}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

// readFrame reads one Content-Length framed body.
func readFrame(r *bufio.Reader) ([]byte, error) {
	n := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			if n, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return nil, fmt.Errorf("a bad Content-Length: %q", v)
			}
		}
	}
	if n < 0 || n > maxFrame {
		return nil, fmt.Errorf("a frame of %d bytes", n)
	}
	body := make([]byte, n)
	_, err := io.ReadFull(r, body)
	return body, err
}

func (c *conn) dispatch(m message) {
	switch {
	case m.ID != nil && m.Method != "":
		c.answer(*m.ID, m.Method, m.Params)
	case m.ID != nil:
		id, err := strconv.ParseInt(string(*m.ID), 10, 64)
		if err != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch == nil {
			return
		}
		if m.Error != nil {
			ch <- reply{err: errors.New(m.Error.Message)}
		} else {
			ch <- reply{result: m.Result}
		}
	case m.Method == "textDocument/publishDiagnostics":
		var p struct {
			URI         string       `json:"uri"`
			Version     *int         `json:"version"`
			Diagnostics []Diagnostic `json:"diagnostics"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		c.mu.Lock()
		c.seq++
		d := &published{seq: c.seq, diags: p.Diagnostics}
		if p.Version != nil {
			d.version, d.hasVersion = *p.Version, true
		}
		c.docs[p.URI] = d
		close(c.notify)
		c.notify = make(chan struct{})
		c.mu.Unlock()
	}
}

// answer is Harvey's answer to a server's request: no settings of its own
// for each item configuration asks about, null for the rest (progress
// tokens, capability registrations).
func (c *conn) answer(id json.RawMessage, method string, params json.RawMessage) {
	var result any
	if method == "workspace/configuration" {
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		json.Unmarshal(params, &p)
		result = make([]any, len(p.Items))
	}
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (c *conn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n", len(b)); err != nil {
		return err
	}
	_, err = c.w.Write(b)
	return err
}

// call sends a request and waits for its answer or ctx's end.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan reply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (c *conn) notifyServer(method string, params any) error {
	return c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// state is the publishes so far and the channel the next one closes.
func (c *conn) state() (int, chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq, c.notify
}

// doc is a document's latest diagnostics (nil: none published).
func (c *conn) doc(uri string) *published {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.docs[uri]
}

// since are the documents published after seq, with their diagnostics.
func (c *conn) since(seq int) map[string]*published {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*published{}
	for u, d := range c.docs {
		if d.seq > seq {
			out[u] = d
		}
	}
	return out
}
