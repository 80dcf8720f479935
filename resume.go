package harvey

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"strings"

	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/recorder"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// Resuming a conversation: after every turn the history (without the
// system prompt, which is rebuilt from HARVEY.md and the current mode) is
// journaled to agents/sessions/last.jsonl, so `harvey --continue` picks it
// up. The journal is append-only: a turn appends its new messages (one JSON
// line each); only when earlier messages changed (old results elided, a
// summary, /clear) is it rewritten whole, atomically, and it is compacted
// the same way when it grows past a few times the conversation. A line cut
// by a crash is ignored on reading. It lives in agents/, out of every
// tool's reach, and tool results in it were already capped and redacted.
// An older last.json is still read when there is no journal.

const (
	lastSessionPath = recorder.SessionsDir + "/last.json"
	journalPath     = recorder.SessionsDir + "/last.jsonl"
)

// journalLine is one record: a snapshot start ("reset", with the model),
// a message ("add"), or a model change ("model").
type journalLine struct {
	Op    string       `json:"op"`
	Model string       `json:"model,omitempty"`
	Msg   *llm.Message `json:"msg,omitempty"`
}

// journalState is what the journal holds: a fingerprint per message
// written, and the bytes written since the last snapshot.
type journalState struct {
	prints  []uint64
	model   string
	size    int64 // bytes in the journal file
	content int64 // bytes of the conversation it holds
}

// fingerprint identifies a message's content (to find the messages a turn
// changed in place) without encoding it.
func fingerprint(m llm.Message) uint64 {
	h := fnv.New64a()
	for _, s := range []string{string(m.Role), m.Content, m.ToolCallID, m.ToolName} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, c := range m.ToolCalls {
		h.Write([]byte(c.ID + "\x00" + c.Function.Name + "\x00" + c.Function.Arguments + "\x00"))
	}
	return h.Sum64()
}

// pinnedPrefix starts the message that holds /context add text.
const pinnedPrefix = "[pinned context]\n"

type savedSession struct {
	Version int           `json:"version"`
	Model   string        `json:"model,omitempty"`
	History []llm.Message `json:"history"`
}

// saveSession journals the conversation (with the model that answers it)
// so --continue can pick it up (an
// empty one after /clear, so a cleared conversation does not come back). A
// failure (a read-only workspace) is not worth interrupting the user for.
func (cv *conversation) saveSession(model string) {
	if !cv.ws.HasAgents() || len(cv.History) == 0 {
		return
	}
	msgs := cv.History[1:]
	j := &cv.journal
	prints := make([]uint64, len(msgs))
	for i, m := range msgs {
		prints[i] = fingerprint(m)
	}
	same := len(j.prints) <= len(prints) && j.size > 0
	for i := 0; same && i < len(j.prints); i++ {
		same = j.prints[i] == prints[i]
	}
	if same && len(prints) == len(j.prints) && j.model == model {
		return // nothing changed: no write
	}
	if len(prints) == 0 && len(j.prints) == 0 {
		return // no conversation yet in this process: the last one stays
	}
	if !same || j.size > 4*max(j.content, 64<<10) {
		cv.rewriteJournal(model, msgs, prints)
		return
	}
	var b []byte
	if j.model != model {
		b = appendJSONLine(b, journalLine{Op: "model", Model: model})
	}
	for i := len(j.prints); i < len(msgs); i++ {
		b = appendJSONLine(b, journalLine{Op: "add", Msg: &msgs[i]})
	}
	f, err := cv.ws.OpenInternalAppend(journalPath)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		j.size = 0 // unknown state: the next save rewrites it
		return
	}
	f.Sync()
	j.prints, j.model = prints, model
	j.size += int64(len(b))
	j.content += int64(len(b))
}

// rewriteJournal writes the whole conversation as a new journal,
// atomically.
func (cv *conversation) rewriteJournal(model string, msgs []llm.Message, prints []uint64) {
	b := appendJSONLine(nil, journalLine{Op: "reset", Model: model})
	for i := range msgs {
		b = appendJSONLine(b, journalLine{Op: "add", Msg: &msgs[i]})
	}
	if err := cv.ws.WriteInternalAtomic(journalPath, b, 0o600); err != nil {
		cv.journal.size = 0
		return
	}
	cv.journal = journalState{prints: prints, model: model, size: int64(len(b)), content: int64(len(b))}
	cv.ws.RemoveInternal(lastSessionPath) // the older format, superseded
}

func appendJSONLine(b []byte, l journalLine) []byte {
	line, err := json.Marshal(l)
	if err != nil {
		return b
	}
	return append(append(b, line...), '\n')
}

// readJournal replays the journal: the model and the messages of the last
// snapshot and what was appended after it. A last line without its newline
// (cut by a crash) is ignored.
func readJournal(b []byte) (model string, msgs []llm.Message, ok bool) {
	lines := strings.Split(string(b), "\n")
	lines = lines[:len(lines)-1] // the part after the last newline is incomplete or empty
	for _, l := range lines {
		var jl journalLine
		if json.Unmarshal([]byte(l), &jl) != nil {
			return "", nil, false
		}
		switch jl.Op {
		case "reset":
			model, msgs, ok = jl.Model, nil, true
		case "model":
			model = jl.Model
		case "add":
			if jl.Msg == nil {
				return "", nil, false
			}
			msgs = append(msgs, *jl.Msg)
		}
	}
	return model, msgs, ok
}

// resumeSession loads the last conversation after the system prompt. It
// returns how many messages came back and the model that was in use.
func (a *Agent) resumeSession() (int, string, error) {
	var s savedSession
	if b, err := a.Workspace.ReadInternal(journalPath); err == nil {
		model, msgs, ok := readJournal(b)
		if !ok {
			return 0, "", fmt.Errorf("%s is not a conversation this Harvey can read; starting fresh", journalPath)
		}
		s = savedSession{Version: 1, Model: model, History: msgs}
		defer func() {
			// The journal already holds this conversation: later turns append.
			prints := make([]uint64, len(msgs))
			for i, m := range msgs {
				prints[i] = fingerprint(m)
			}
			a.journal = journalState{prints: prints, model: model, size: int64(len(b)), content: int64(len(b))}
		}()
	} else {
		b, err := a.Workspace.ReadInternal(lastSessionPath)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, "", errors.New("no earlier conversation to continue in this workspace")
		}
		if err != nil {
			return 0, "", fmt.Errorf("%s: %s", lastSessionPath, wspath.ErrText(err))
		}
		if err := json.Unmarshal(b, &s); err != nil || s.Version != 1 {
			return 0, "", fmt.Errorf("%s is not a conversation this Harvey can read; starting fresh", lastSessionPath)
		}
	}
	if len(s.History) == 0 { // cleared with /clear
		return 0, "", errors.New("no earlier conversation to continue in this workspace")
	}
	for _, m := range s.History {
		switch m.Role {
		case llm.RoleUser, llm.RoleAssistant, llm.RoleTool:
		default:
			return 0, "", fmt.Errorf("%s holds a %q message; starting fresh", lastSessionPath, m.Role)
		}
	}
	a.ClearHistory()
	a.History = append(a.History[:1], s.History...)
	for _, m := range s.History {
		if text, ok := strings.CutPrefix(m.Content, pinnedPrefix); ok && m.Role == llm.RoleUser {
			a.PinnedContext = text
		}
	}
	return len(s.History), s.Model, nil
}

// lastExchange shows where a resumed conversation stopped: the user's last
// prompt and the answer to it, a few lines each ("" when there is none).
func (cv *conversation) lastExchange() string {
	var you, answer string
	for i := len(cv.History) - 1; i >= 0 && you == ""; i-- {
		m := cv.History[i]
		switch {
		case m.Role == llm.RoleAssistant && answer == "" && strings.TrimSpace(m.Content) != "":
			answer = m.Content
		case m.Role == llm.RoleUser && !strings.HasPrefix(m.Content, "[pinned context]") && !strings.HasPrefix(m.Content, "[tool_result "):
			you = m.Content
		}
	}
	if you == "" {
		return ""
	}
	excerpt := func(s string) string {
		lines := strings.Split(strings.TrimSpace(termtext.Sanitize(s)), "\n")
		more := ""
		if len(lines) > 3 {
			lines, more = lines[:3], " …"
		}
		t := strings.Join(lines, "\n    ")
		if r := []rune(t); len(r) > 300 {
			t, more = string(r[:300]), " …"
		}
		return t + more
	}
	out := "; it ended with:\n  you: " + excerpt(you)
	if answer != "" {
		out += "\n  harvey: " + excerpt(answer)
	}
	return out
}
