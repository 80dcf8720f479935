// Package events is Harvey's headless output a program can read (--output json|stream-json with -p or
// --run; docs/output.md is the schema). stream-json writes one event per
// line as it happens; json writes one object when the run ends. Nothing but
// JSON reaches stdout in these modes: the answer's text is an event, errors
// are events, the human lines stay on stderr, exit codes are unchanged.
// Every text, argument and summary is redacted as the model's view is.
//
// A Sink receives what a run does — TurnStart, Text (through a Writer,
// as the run's Out), ToolCall, Approval, ToolResult, TurnUsage, Fail — and
// End closes it with the exit code. A nil Sink records nothing. Emit
// writes an event of another kind (a hook's decision). Listen, when set,
// hears each event as stream-json would write it (harvey acp). It imports
// only internal/secrets.
package events

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/secrets"
)

// SchemaVersion is the version of the events and the object.
const SchemaVersion = 1

// Output modes.
const (
	ModeText       = "text"
	ModeJSON       = "json"
	ModeStreamJSON = "stream-json"
)

// Sink receives what a headless run does. A nil sink records nothing.
type Sink struct {
	mu     sync.Mutex
	w      io.Writer
	stream bool // one event per line as it happens (else one object at the end)
	seq    int
	source string // what Out carries now: "assistant" or "command"
	// what the json object reports at the end
	answer  strings.Builder // the last turn's assistant text
	calls   []*callRecord
	usage   usageTotals
	errs    []string
	started time.Time
	Sandbox string          // the sandbox mode, in each turn_start (set before the first)
	round   strings.Builder // the model's text since its last whole message
	// Listen, when set, hears every event as stream-json would write it
	// (harvey acp turns them into the editor's session updates); it runs
	// with the Sink locked and must not call it.
	Listen func(ev map[string]any)
}

// callRecord is one tool call as the json object reports it.
type callRecord struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Recovered bool            `json:"recovered_from_text,omitempty"`
	Approval  string          `json:"approval,omitempty"` // approved (by whom) or refused
	Status    string          `json:"status"`             // ok, refused, failed
	Summary   string          `json:"summary"`
	Output    string          `json:"output"` // what the tool returned, as the model saw it
}

type usageTotals struct {
	PromptTokens int   `json:"prompt_tokens"`
	ReplyTokens  int   `json:"reply_tokens"`
	ElapsedMS    int64 `json:"elapsed_ms"`
	PromptEvalMS int64 `json:"prompt_eval_ms"`
	GenerationMS int64 `json:"generation_ms"`
	Rounds       int   `json:"rounds"`
}

// New is the Sink of a run whose --output is mode, writing to w.
func New(w io.Writer, mode string) *Sink {
	return &Sink{w: w, stream: mode == ModeStreamJSON, source: "assistant", started: time.Now()}
}

// Emit writes an event of a kind the Sink has no method for (a hook's
// decision); its fields are the caller's, redacted by the caller.
func (s *Sink) Emit(typ string, fields map[string]any) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(typ, fields)
}

// emit writes one event (stream-json) with the schema version, a sequence
// number and its type; s.mu is held.
func (s *Sink) emit(typ string, fields map[string]any) {
	if s == nil || (!s.stream && s.Listen == nil) {
		return
	}
	s.seq++
	ev := map[string]any{"v": SchemaVersion, "seq": s.seq, "type": typ}
	for k, v := range fields {
		ev[k] = v
	}
	if s.Listen != nil {
		s.Listen(ev)
	}
	if !s.stream {
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"v": SchemaVersion, "seq": s.seq, "type": "error", "message": "harvey: an event could not be encoded: " + err.Error()})
	}
	s.w.Write(append(b, '\n'))
}

// Text is what a run writes to Out: the model's answer or a command's
// output, as events.
func (s *Sink) Text(p []byte) {
	if len(p) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := secrets.Redact(string(p))
	if s.source == "assistant" {
		s.answer.WriteString(t)
		s.round.WriteString(t)
		s.emit("assistant_text", map[string]any{"text": t})
		return
	}
	s.emit("command_output", map[string]any{"text": t})
}

// TurnStart marks a prompt (or a slash command) of the run.
func (s *Sink) TurnStart(line string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.message()
	s.source = "assistant"
	if strings.HasPrefix(line, "/") || strings.HasPrefix(line, "!") {
		s.source = "command"
		s.emit("command", map[string]any{"command": secrets.Redact(line)})
		return
	}
	s.answer.Reset()
	s.emit("turn_start", map[string]any{"prompt": secrets.Redact(line), "sandbox": s.Sandbox})
}

// ToolCall is a call the model asked for.
func (s *Sink) ToolCall(id, name, rawArgs string, recovered bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	args := json.RawMessage(secrets.Redact(rawArgs))
	if !json.Valid(args) {
		b, _ := json.Marshal(secrets.Redact(rawArgs))
		args = b
	}
	s.calls = append(s.calls, &callRecord{ID: id, Name: name, Arguments: args, Recovered: recovered})
	s.emit("tool_call", map[string]any{"id": id, "name": name, "arguments": args, "recovered_from_text": recovered})
}

// Approval is what the approval service decided about an effect.
func (s *Sink) Approval(tool, action string, approved bool, by string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	word := "refused"
	if approved {
		word = "approved"
	}
	if n := len(s.calls); n > 0 && s.calls[n-1].Name == tool && s.calls[n-1].Status == "" {
		s.calls[n-1].Approval = strings.TrimSpace(word + " " + by)
	}
	s.emit(word, map[string]any{"tool": tool, "action": secrets.Redact(action), "by": by})
}

// ToolResult is how a call ended, with what the tool returned as the
// model saw it (capped, redacted).
func (s *Sink) ToolResult(id, name, status, class, summary, output string, notes []string, d time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	summary, output = secrets.Redact(summary), secrets.Redact(output)
	for i := len(s.calls) - 1; i >= 0; i-- {
		if s.calls[i].ID == id && s.calls[i].Status == "" {
			s.calls[i].Status, s.calls[i].Summary, s.calls[i].Output = status, summary, output
			break
		}
	}
	ev := map[string]any{"id": id, "name": name, "status": status, "class": class, "summary": summary, "output": output, "duration_ms": d.Milliseconds()}
	if len(notes) > 0 {
		red := make([]string, len(notes))
		for i, n := range notes {
			red[i] = secrets.Redact(n)
		}
		ev["notes"] = red
	}
	s.emit("tool_result", ev)
}

// message ends a model round's text: the whole of it as one event, after
// its pieces.
func (s *Sink) message() {
	if t := strings.TrimSpace(s.round.String()); t != "" {
		s.emit("assistant_message", map[string]any{"text": t})
	}
	s.round.Reset()
}

// TurnFigures are a turn's figures from the server (ChatStats's, which the
// model side declares).
type TurnFigures struct {
	PromptTokens, ReplyTokens       int
	Elapsed, PromptEval, Generation time.Duration
	TokensPerSec                    float64
}

// TurnUsage is a turn's figures from the server.
func (s *Sink) TurnUsage(st TurnFigures) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.message()
	s.usage.PromptTokens = st.PromptTokens // the last prompt is the whole context
	s.usage.ReplyTokens += st.ReplyTokens
	s.usage.ElapsedMS += st.Elapsed.Milliseconds()
	s.usage.PromptEvalMS += st.PromptEval.Milliseconds()
	s.usage.GenerationMS += st.Generation.Milliseconds()
	s.usage.Rounds++
	s.emit("usage", map[string]any{"prompt_tokens": st.PromptTokens, "reply_tokens": st.ReplyTokens, "elapsed_ms": st.Elapsed.Milliseconds(),
		"prompt_eval_ms": st.PromptEval.Milliseconds(), "generation_ms": st.Generation.Milliseconds(), "tokens_per_sec": st.TokensPerSec})
}

// Fail is an error of the run, as an event.
func (s *Sink) Fail(msg string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msg = secrets.Redact(msg)
	s.message() // what the model said before the error is still its message
	s.errs = append(s.errs, msg)
	s.emit("error", map[string]any{"message": msg})
}

// End closes the run: the end event, or the one json object.
func (s *Sink) End(code int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	reason := exitReason(code)
	if s.stream {
		s.message()
		s.emit("end", map[string]any{"exit_code": code, "exit_reason": reason, "answer": strings.TrimSpace(s.answer.String()), "elapsed_ms": time.Since(s.started).Milliseconds()})
		return
	}
	calls := s.calls
	if calls == nil {
		calls = []*callRecord{}
	}
	errs := s.errs
	if errs == nil {
		errs = []string{}
	}
	b, _ := json.MarshalIndent(map[string]any{"v": SchemaVersion, "type": "result", "answer": strings.TrimSpace(s.answer.String()), "tool_calls": calls,
		"usage": s.usage, "errors": errs, "exit_code": code, "exit_reason": reason, "elapsed_ms": time.Since(s.started).Milliseconds()}, "", "  ")
	s.w.Write(append(b, '\n'))
}

// exitReason names an exit status (cli.go's usage lists them).
func exitReason(code int) string {
	switch code {
	case 0:
		return "completed"
	case 2:
		return "usage"
	case 3:
		return "not_approved"
	}
	return "error"
}

// Writer is the Out of a run in a JSON mode: what would be printed
// becomes events.
type Writer struct{ S *Sink }

func (w Writer) Write(p []byte) (int, error) {
	w.S.Text(p)
	return len(p), nil
}

// ValidMode checks --output's value.
func ValidMode(m string) error {
	switch m {
	case ModeText, ModeJSON, ModeStreamJSON:
		return nil
	}
	return fmt.Errorf("--output %q: use text, json or stream-json", m)
}
