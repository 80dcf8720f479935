package mcpform

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A form's fields in the server's order: the SDK hands the elicitation
// handler its schema as a map, which keeps no order, so the order is read
// from the request as it arrived (a stdio server's messages through a
// connection that reads them, an HTTP server's response bodies through the
// client's transport) and kept by the request's message and fields.

// Orders is the order of the fields of the elicitation requests seen.
type Orders struct {
	mu sync.Mutex
	m  map[string][]string
}

// note records the field order of one elicitation/create request's params.
func (o *Orders) note(params json.RawMessage) {
	var p struct {
		Message string          `json:"message"`
		Schema  json.RawMessage `json:"requestedSchema"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var sch struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(p.Schema, &sch) != nil {
		return
	}
	order := objectKeys(sch.Properties)
	if len(order) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || len(o.m) > 64 {
		o.m = map[string][]string{}
	}
	o.m[orderKey(p.Message, order)] = order
}

// Of is the order of the fields of the request with this message and
// schema (nil: not seen).
func (o *Orders) Of(message string, schema any) []string {
	sm, _ := ToMap(schema)
	props, _ := sm["properties"].(map[string]any)
	var names []string
	for n := range props {
		names = append(names, n)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[orderKey(message, names)]
}

func orderKey(message string, names []string) string {
	names = slices.Clone(names)
	slices.Sort(names)
	return message + "\x00" + strings.Join(names, "\x00")
}

// objectKeys are a JSON object's keys in the order written.
func objectKeys(obj json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return keys
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// OrderedTransport is a stdio server's transport whose connection notes
// the field order of each elicitation request it reads.
type OrderedTransport struct {
	mcp.Transport
	Orders *Orders
}

func (t OrderedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return orderedConn{Connection: c, Orders: t.Orders}, nil
}

type orderedConn struct {
	mcp.Connection
	Orders *Orders
}

func (c orderedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "elicitation/create" {
		c.Orders.note(r.Params)
	}
	return msg, err
}

// OrderedBodies is an HTTP server's round trip whose response bodies (JSON
// or an event stream) are read for elicitation requests as they pass.
type OrderedBodies struct {
	Next   http.RoundTripper
	Orders *Orders
}

func (t OrderedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.Next.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = &orderScanner{ReadCloser: resp.Body, Orders: t.Orders}
	}
	return resp, err
}

// orderScanner passes a body on unchanged, and notes each elicitation
// request in it (a line of JSON, or an event's data: line).
type orderScanner struct {
	io.ReadCloser
	Orders *Orders
	line   []byte
}

func (s *orderScanner) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	for _, b := range p[:n] {
		if b != '\n' {
			if len(s.line) < 1<<20 {
				s.line = append(s.line, b)
			}
			continue
		}
		s.scan()
	}
	if err == io.EOF {
		s.scan()
	}
	return n, err
}

func (s *orderScanner) scan() {
	defer func() { s.line = s.line[:0] }()
	if !bytes.Contains(s.line, []byte("elicitation/create")) {
		return
	}
	l := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(s.line), []byte("data:")))
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(l, &m) == nil && m.Method == "elicitation/create" {
		s.Orders.note(m.Params)
	}
}
