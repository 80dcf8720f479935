package mcpclient

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// A session's servers start in the background (issue 75): the prompt is
// not held by a server that is slow to start, and /exit, typed while one
// starts, ends it at once (Close). Nothing is said and nothing is
// registered from the background: the session's next turn (Refresh) or
// /mcp waits for the starts, says what failed and registers the tools, so
// a request's tools never change mid-turn and no line lands in the middle
// of what you type.

// begun is a start under way in the background.
type begun struct {
	s     *Server
	done  chan struct{}
	err   error
	lines []said // what its start had to say (its check, a question declined), said by Await
}

// said is a line for the person, kept.
type said struct {
	tone termtext.Tone
	line string
}

// Begin starts s in the background, after the servers begun before it
// (one at a time, as in the foreground: a start's check is then its own,
// never another server's change); Await finishes the start.
func (m *Manager) Begin(s *Server) {
	b := &begun{s: s, done: make(chan struct{})}
	s.mu.Lock()
	s.state = "starting"
	s.mu.Unlock()
	s.background.Store(true)
	m.bgMu.Lock()
	var prev chan struct{}
	if n := len(m.begun); n > 0 {
		prev = m.begun[n-1].done
	}
	m.begun = append(m.begun, b)
	m.bgMu.Unlock()
	go func() {
		defer close(b.done)
		defer s.background.Store(false)
		if prev != nil {
			<-prev
		}
		b.err = m.Connect(m.life, s)
	}()
}

// Pending reports whether starts Begin made wait for Await.
func (m *Manager) Pending() bool {
	if m == nil {
		return false
	}
	m.bgMu.Lock()
	defer m.bgMu.Unlock()
	return len(m.begun) > 0
}

// StartAll adds the enabled servers and starts each that is not lazy,
// registering its tools; one that fails is said in one line and the
// session goes on. With background (a session's start), a server whose
// tools are known from its last start (cache.go) is offered at once and
// started at its first use, one that failed a short while ago is left
// alone, and a stdio server starts in the background (Begin): only an
// HTTP server, which may ask you to log in, is waited for.
func (m *Manager) StartAll(ctx context.Context, servers map[string]config.MCPServer, background bool) {
	for _, n := range slices.Sorted(maps.Keys(servers)) {
		cfg := servers[n]
		if !cfg.IsEnabled() {
			continue
		}
		s := m.Add(n, cfg)
		if background && m.FromKept(s) {
			if s.Paused() && m.host.Interactive() {
				m.host.Say(termtext.Note, "· MCP server "+n+": "+termtext.OneLine(s.State()))
			} else if !s.Paused() {
				m.host.Register(s, nil)
			}
			continue
		}
		switch {
		case cfg.Lazy:
		case background && cfg.URL == "":
			m.Begin(s)
		default:
			if err := m.Connect(ctx, s); err != nil {
				m.host.Say(termtext.Warn, fmt.Sprintf("warning: MCP server %s: %s", n, termtext.OneLine(err.Error())))
				continue
			}
			m.host.Register(s, nil)
		}
	}
}

// Await waits, until ctx ends, for the servers Begin started: each that
// started has its tools registered, each that failed is said in one line,
// with what its start had to say. It reports whether any start finished
// here (the session then says what its tools offer).
func (m *Manager) Await(ctx context.Context) bool {
	if m == nil {
		return false
	}
	finished := false
	for _, b := range m.begunNow() {
		select {
		case <-b.done:
		case <-ctx.Done():
			return finished
		}
		finished = true
		m.finish(b)
		if b.err != nil {
			m.host.Say(termtext.Warn, fmt.Sprintf("warning: MCP server %s: %s", b.s.name, termtext.OneLine(b.err.Error())))
			continue
		}
		m.host.Register(b.s, nil)
	}
	return finished
}

// endBegun waits for the starts under way, which the session's end has
// cancelled: each ends its server's process before Close checks it. What
// they had to say is said now.
func (m *Manager) endBegun() {
	for _, b := range m.begunNow() {
		<-b.done
		m.finish(b)
	}
}

// begunNow is the starts not finished yet.
func (m *Manager) begunNow() []*begun {
	m.bgMu.Lock()
	defer m.bgMu.Unlock()
	return slices.Clone(m.begun)
}

// finish takes b, which has ended, from the starts under way and says
// what it had to say.
func (m *Manager) finish(b *begun) {
	m.bgMu.Lock()
	m.begun = slices.DeleteFunc(m.begun, func(x *begun) bool { return x == b })
	m.bgMu.Unlock()
	m.sayKept(b)
}

// sayKept says what b's start had to say.
func (m *Manager) sayKept(b *begun) {
	m.bgMu.Lock()
	lines := b.lines
	b.lines = nil
	m.bgMu.Unlock()
	for _, l := range lines {
		m.host.Say(l.tone, l.line)
	}
}

// say is host.Say for what s's start has to say: kept while s starts in
// the background (the line you type is yours), said by Await.
func (m *Manager) say(s *Server, tone termtext.Tone, line string) {
	if s.background.Load() {
		m.bgMu.Lock()
		defer m.bgMu.Unlock()
		for _, b := range m.begun {
			if b.s == s {
				b.lines = append(b.lines, said{tone, line})
				return
			}
		}
	}
	m.host.Say(tone, line)
}
