package hooks

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// The transcript a hook reads (transcript_path in every hook's input): the
// conversation so far in Claude Code's JSONL shape, one object a message
// (user text, assistant text and tool_use blocks, tool_result blocks),
// redacted as everything the model reads is. It is written only when there
// are hooks, appended before each hook runs, in Harvey's data directory
// (0600; a workspace's hook reads it through its sandbox, never writes
// it), and removed when the session ends.

// hookTranscript is the session's transcript file and what it holds.
type hookTranscript struct {
	mu      sync.Mutex
	root    string
	version string // Harvey's, in each line
	path    string
	n       int                            // messages in the conversation as the last caller gave it
	conv    func(from int) []transcriptMsg // its messages from one on, converted when a hook runs
	written int                            // messages already in the file
	parent  string                         // the last message's uuid
}

// transcriptMsg is one message of the conversation as the transcript
// needs it (the session's Message, converted by transcriptOf).
type transcriptMsg struct {
	role, text, callID string // role: user, assistant or tool
	calls              []transcriptCall
}

type transcriptCall struct {
	id, name string
	args     map[string]any
}

// SetConversation gives the transcript the conversation as it is now (the
// executor before a round's calls, the agent between turns): its length,
// and what converts its messages from one on.
func (r *Runner) SetConversation(n int, conv func(from int) []transcriptMsg) {
	if r == nil {
		return
	}
	r.transcript.mu.Lock()
	defer r.transcript.mu.Unlock()
	r.transcript.n, r.transcript.conv = n, conv
}

// transcriptPath writes what the transcript lacks and returns its path
// ("" when it cannot be written).
func (r *Runner) transcriptPath() string {
	t := &r.transcript
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.path == "" {
		dir := datadir.Path()
		if dir == "" {
			return ""
		}
		dir = filepath.Join(dir, "transcripts")
		if os.MkdirAll(dir, 0o700) != nil {
			return ""
		}
		t.path = filepath.Join(dir, hookSession+".jsonl")
		t.root, t.version = r.root, r.version
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if t.n < t.written { // cleared or summarised: written anew
		flags |= os.O_TRUNC
		t.written, t.parent = 0, ""
	}
	f, err := os.OpenFile(t.path, flags, 0o600)
	if err != nil {
		return ""
	}
	defer f.Close()
	if t.conv != nil && t.n > t.written {
		enc := json.NewEncoder(f)
		for _, m := range t.conv(t.written) {
			if line := t.line(m); line != nil {
				enc.Encode(line)
			}
		}
	}
	t.written = t.n
	return t.path
}

// line is one message as Claude Code writes it (nil: not written, the
// system prompt).
func (t *hookTranscript) line(m transcriptMsg) map[string]any {
	var typ string
	var content any
	switch m.role {
	case "user":
		typ, content = "user", secrets.Redact(m.text)
	case "tool":
		typ, content = "user", []any{map[string]any{"type": "tool_result", "tool_use_id": m.callID, "content": secrets.Redact(m.text)}}
	case "assistant":
		typ = "assistant"
		var blocks []any
		if m.text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": secrets.Redact(m.text)})
		}
		for _, c := range m.calls {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.id, "name": claudeName(c.name), "input": claudeInput(c.name, c.args, t.root)})
		}
		content = blocks
	default:
		return nil
	}
	id := rand.Text()
	line := map[string]any{"type": typ, "uuid": id, "parentUuid": nil, "sessionId": hookSession, "cwd": t.root,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "isSidechain": false, "userType": "external", "version": "harvey-" + t.version,
		"message": map[string]any{"role": map[string]string{"user": "user", "assistant": "assistant"}[typ], "content": content}}
	if t.parent != "" {
		line["parentUuid"] = t.parent
	}
	t.parent = id
	return line
}

// RemoveTranscript removes the session's transcript (at exit).
func (r *Runner) RemoveTranscript() {
	if r == nil {
		return
	}
	r.transcript.mu.Lock()
	defer r.transcript.mu.Unlock()
	if r.transcript.path != "" {
		os.Remove(r.transcript.path)
	}
}

// TranscriptOf is the conversation msgs as SetConversation takes it:
// converted from one message on, when a hook runs.
func TranscriptOf(msgs []llm.Message) func(from int) []transcriptMsg {
	return func(from int) []transcriptMsg {
		var out []transcriptMsg
		for _, m := range msgs[min(from, len(msgs)):] {
			tm := transcriptMsg{role: string(m.Role), text: m.Content, callID: m.ToolCallID}
			for _, c := range m.ToolCalls {
				var args map[string]any
				json.Unmarshal([]byte(c.Function.Arguments), &args)
				tm.calls = append(tm.calls, transcriptCall{id: c.ID, name: c.Function.Name, args: args})
			}
			out = append(out, tm)
		}
		return out
	}
}
