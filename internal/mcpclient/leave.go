package mcpclient

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect is client.Connect that returns when ctx ends, whatever the SDK
// still waits for: a server that hangs on initialize may hang on the
// cancellation the SDK then sends it too, and the session's end (Close)
// must not wait on it (issue 75). A session that still comes is closed.
func connect(ctx context.Context, client *mcp.Client, t mcp.Transport) (*mcp.ClientSession, error) {
	type result struct {
		s   *mcp.ClientSession
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := client.Connect(ctx, t, nil)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
