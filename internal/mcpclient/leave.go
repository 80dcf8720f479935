package mcpclient

import (
	"context"
	"os/exec"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect is client.Connect that returns when ctx ends, whatever the SDK
// still waits for: a server that hangs on initialize may hang on the
// cancellation the SDK then sends it too, and the session's end (Close)
// must not wait on it (issue 75). A stdio server is ended then, with
// everything it started, before connect returns (abort), so the check
// that follows sees what it did; a session that still comes is closed.
func connect(ctx context.Context, client *mcp.Client, t mcp.Transport, abort func()) (*mcp.ClientSession, error) {
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
	}
	late := func() {
		if r := <-done; r.s != nil {
			r.s.Close()
		}
	}
	if abort == nil { // an HTTP server: nothing of it runs here
		go late()
		return nil, ctx.Err()
	}
	abort()
	select {
	case r := <-done: // the SDK closes what it started once the server is gone
		if r.s != nil {
			r.s.Close()
		}
	case <-time.After(2 * time.Second):
		go late()
	}
	return nil, ctx.Err()
}

// stoppable is a stdio server's transport that can be ended while the SDK
// still starts it: Stop ends its program (through runner, with all it
// started) once it has started, or as soon as it starts.
type stoppable struct {
	mcp.Transport
	cmd     *exec.Cmd
	sp      *sandbox.Spec
	mu      sync.Mutex
	started bool
	stopped bool
}

// Connect starts the program (the SDK calls it).
func (t *stoppable) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started = err == nil
	if t.started && t.stopped {
		_ = runner.StopCommand(t.cmd, t.sp)
	}
	return c, err
}

// Stop ends the program and everything it started.
func (t *stoppable) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.started {
		_ = runner.StopCommand(t.cmd, t.sp)
	}
}
