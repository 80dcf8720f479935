package harvey

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Resuming a conversation: after every turn the history (without the
// system prompt, which is rebuilt from HARVEY.md and the current mode) is
// saved atomically to agents/sessions/last.json; `harvey --continue` picks
// it up. It lives in agents/, out of every tool's reach, and tool results in
// it were already capped and redacted when the model saw them.

const lastSessionPath = SessionsDir + "/last.json"

// pinnedPrefix starts the message that holds /context add text.
const pinnedPrefix = "[pinned context]\n"

type savedSession struct {
	Version int       `json:"version"`
	Model   string    `json:"model,omitempty"`
	History []Message `json:"history"`
}

// saveSession writes the conversation so --continue can pick it up (an
// empty one after /clear, so a cleared conversation does not come back). A
// failure (a read-only workspace) is not worth interrupting the user for.
func (a *Agent) saveSession() {
	if !a.Workspace.HasAgents() || len(a.History) == 0 {
		return
	}
	// Most slash commands leave the history as it was: no write then.
	size := 0
	for _, m := range a.History {
		size += len(m.Content)
	}
	mark := fmt.Sprintf("%d/%d/%s", len(a.History), size, a.ModelName)
	if mark == a.savedMark {
		return
	}
	a.savedMark = mark
	s := savedSession{Version: 1, Model: a.ModelName, History: a.History[1:]}
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	a.Workspace.WriteInternalAtomic(lastSessionPath, b, 0o600)
}

// resumeSession loads the last conversation after the system prompt. It
// returns how many messages came back and the model that was in use.
func (a *Agent) resumeSession() (int, string, error) {
	b, err := a.Workspace.ReadInternal(lastSessionPath)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", errors.New("no earlier conversation to continue in this workspace")
	}
	if err != nil {
		return 0, "", fmt.Errorf("%s: %s", lastSessionPath, errText(err))
	}
	var s savedSession
	if err := json.Unmarshal(b, &s); err != nil || s.Version != 1 {
		return 0, "", fmt.Errorf("%s is not a conversation this Harvey can read; starting fresh", lastSessionPath)
	}
	if len(s.History) == 0 { // cleared with /clear
		return 0, "", errors.New("no earlier conversation to continue in this workspace")
	}
	for _, m := range s.History {
		switch m.Role {
		case "user", "assistant", "tool":
		default:
			return 0, "", fmt.Errorf("%s holds a %q message; starting fresh", lastSessionPath, m.Role)
		}
	}
	a.ClearHistory()
	a.History = append(a.History[:1], s.History...)
	for _, m := range s.History {
		if text, ok := strings.CutPrefix(m.Content, pinnedPrefix); ok && m.Role == "user" {
			a.PinnedContext = text
		}
	}
	return len(s.History), s.Model, nil
}
