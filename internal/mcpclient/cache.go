package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP that costs nothing until used. What a server offered when it last
// started — for the same config, in the same workspace — is kept in the
// user's data directory (DATA/mcp/KEY.json, 0600): the next session
// offers those tools at once and starts the server at its first call (or
// first prompt), so a turn that calls none of its tools starts nothing. Once
// started, a server's live list replaces the kept one (and the model gets
// the new one from the next turn). A server that failed to start is not
// tried again for FailedPause, unless /mcp restart asks: the failure was
// said when it happened; meanwhile /mcp shows it. A change to the server's
// config, and a new version of Harvey, start afresh.

// FailedPause is how long a server that failed to start is left alone.
const FailedPause = 10 * time.Minute

// kept is what a server offered, or how it failed, when it last started.
type kept struct {
	Tools   []*mcp.Tool   `json:"tools,omitempty"`
	Prompts []*mcp.Prompt `json:"prompts,omitempty"`
	Failed  string        `json:"failed,omitempty"`
	At      time.Time     `json:"at"`
}

// keptPath is where what s offered in the workspace root is kept ("": no
// data directory).
func (m *Manager) keptPath(s *Server) string {
	data := datadir.Path()
	if data == "" {
		return ""
	}
	b, _ := json.Marshal(struct {
		Root, Name, Version string
		Cfg                 config.MCPServer
	}{m.root, s.name, m.opts.Version, s.cfg})
	sum := sha256.Sum256(b)
	return filepath.Join(data, "mcp", hex.EncodeToString(sum[:12])+".json")
}

func (m *Manager) loadKept(s *Server) (kept, bool) {
	var k kept
	p := m.keptPath(s)
	if p == "" {
		return k, false
	}
	b, err := os.ReadFile(p)
	if err != nil || json.Unmarshal(b, &k) != nil {
		return kept{}, false
	}
	return k, true
}

// keep writes k for s, atomically; a failure to write costs only the
// next session's start.
func (m *Manager) keep(s *Server, k kept) {
	p := m.keptPath(s)
	if p == "" {
		return
	}
	b, err := json.Marshal(k)
	if err != nil || os.MkdirAll(filepath.Dir(p), 0o700) != nil {
		return
	}
	tmp := p + fmt.Sprintf(".%d.tmp", os.Getpid())
	if os.WriteFile(tmp, b, 0o600) == nil && os.Rename(tmp, p) != nil {
		os.Remove(tmp)
	}
}

// FromKept prepares s from what it offered when it last started: its tools
// and prompts, offered at once, the server started at its first use; or,
// when it failed to start less than FailedPause ago, left failed (the
// reason kept). It reports whether s needs no start now.
func (m *Manager) FromKept(s *Server) bool {
	k, ok := m.loadKept(s)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case k.Failed != "" && time.Since(k.At) < FailedPause:
		s.state = fmt.Sprintf("failed: %s (at %s; tried again from %s, or now with /mcp restart %s)", k.Failed, k.At.Format("15:04"), k.At.Add(FailedPause).Format("15:04"), s.name)
		s.pause = true
		return true
	case k.Failed == "" && len(k.Tools)+len(k.Prompts) > 0:
		s.tools, s.prompts = k.Tools, k.Prompts
		s.state = "not started yet (its tools as it last listed them; it starts at its first call)"
		s.fromKept = true
		return true
	}
	return false
}

// Paused reports whether s failed to start a short while ago and is left
// alone until FailedPause has passed.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pause
}

// ensureStarted starts a server whose tools came from what was kept, at
// its first use.
func (m *Manager) ensureStarted(ctx context.Context, s *Server) error {
	s.mu.Lock()
	waiting := s.fromKept && s.session == nil
	s.mu.Unlock()
	if !waiting {
		return nil
	}
	return m.Connect(ctx, s)
}

// started keeps what s offered now it has started, and marks its list
// changed where it differs from the one the session offered (Refresh then
// offers the new one between turns). s.mu is held.
func (m *Manager) started(s *Server, before []*mcp.Tool) {
	if s.fromKept && !reflect.DeepEqual(toolJSON(before), toolJSON(s.tools)) {
		s.offered = before
		s.changed.Store(true)
	}
	s.fromKept, s.pause = false, false
	m.keep(s, kept{Tools: s.tools, Prompts: s.prompts, At: time.Now()})
}

// failedToStart keeps why s did not start. s.mu is held.
func (m *Manager) failedToStart(s *Server, err error) {
	m.keep(s, kept{Failed: err.Error(), At: time.Now()})
}

// toolJSON is tools as sent: what the model sees of them.
func toolJSON(tools []*mcp.Tool) string {
	b, _ := json.Marshal(tools)
	return string(b)
}
