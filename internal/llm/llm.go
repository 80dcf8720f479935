// Package llm is the model side's vocabulary and the rules every backend
// shares: the messages of a conversation (Message, Role), the client a model
// is reached through (LLMClient, WindowedClient, ToolProber), what a client
// can tell about a model (Capability, ChatStats); the bounds of one reply
// (MaxReplyBytes, MaxStreamedCalls); the idle timeout of a reply
// (WatchReply, Progressed: a reply that makes no progress for retry.idle
// ends, a slow but live one never does); and the retry of a model call that
// failed in a way a second try can fix (RetryPolicy, PolicyOf the retry:
// block, Transient, TransientStatus, ConnectionTrouble), the same loop for
// every backend, which never shows a cut stream's text twice. Both clients
// (internal/ollama and the root's anyllm_client.go), the layouts and the tool
// loop speak it. It imports only internal/config.
package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

// Message is one entry of the conversation. Tool calls and results use the
// anyllm wire types directly.
type Message struct {
	Role       Role              `json:"role"`
	Content    string            `json:"content"`
	ToolCalls  []anyllm.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	ToolName   string            `json:"tool_name,omitempty"` // for role "tool" (Ollama wants it)
}

// Role is who a message is from.
type Role string

// The four roles of the chat protocols.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // a tool's result
)

// ChatStats describes one model reply.
type ChatStats struct {
	PromptTokens int
	ReplyTokens  int
	Elapsed      time.Duration
	TokensPerSec float64
	// FirstToken is the time from the request to the first streamed text
	// or call (the wait a user sees).
	FirstToken time.Duration
	// PromptEval and Generation are the server's own timings (Ollama's
	// prompt_eval_duration and eval_duration); zero when the server does
	// not report them (OpenAI-compatible servers).
	PromptEval, Generation time.Duration
}

// Format renders the stats line printed dimly after each turn.
func (s ChatStats) Format() string {
	parts := []string{}
	if s.PromptTokens > 0 || s.ReplyTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d prompt + %d reply tokens", s.PromptTokens, s.ReplyTokens))
	}
	parts = append(parts, s.Elapsed.Round(100*time.Millisecond).String())
	if s.TokensPerSec > 0 {
		parts = append(parts, fmt.Sprintf("%.1f tok/s", s.TokensPerSec))
	}
	return strings.Join(parts, " · ")
}

// Add accumulates the stats of several model calls in one turn.
func (s *ChatStats) Add(o ChatStats) {
	s.PromptTokens = o.PromptTokens // the last prompt is the whole context
	s.ReplyTokens += o.ReplyTokens
	s.Elapsed += o.Elapsed
	if s.Elapsed > 0 && s.ReplyTokens > 0 && o.TokensPerSec > 0 {
		s.TokensPerSec = o.TokensPerSec
	}
}

// LLMClient is a chat backend.
type LLMClient interface {
	// Name describes the backend and model, e.g. "ollama llama3.2".
	Name() string
	// Chat streams a reply to out.
	Chat(ctx context.Context, messages []Message, out io.Writer) (ChatStats, error)
	// ChatWithTools streams text to out and returns the tool calls the model
	// made (with unique IDs). tools may be nil.
	ChatWithTools(ctx context.Context, messages []Message, tools []anyllm.Tool, out io.Writer) (ChatStats, []anyllm.ToolCall, error)
	// Models lists the models the backend offers.
	Models(ctx context.Context) ([]string, error)
	Close() error
}

// WindowedClient is implemented by clients whose server silently cuts a
// prompt to a fixed context window (Ollama's num_ctx): Harvey fits every
// request into ContextWindow tokens. Other servers report overflow as an
// error.
type WindowedClient interface {
	ContextWindow() int
}

// ToolProber is implemented by clients that can tell before a turn whether
// a model supports schema tool calling (Ollama's /api/show).
type ToolProber interface {
	ToolSupport(ctx context.Context, model string) (Capability, error)
}

// Capability is whether a model supports schema tool calling.
type Capability int

const (
	CapUnknown Capability = iota
	CapYes
	CapNo
)

func (c Capability) String() string {
	switch c {
	case CapYes:
		return "yes"
	case CapNo:
		return "no"
	}
	return "unknown"
}

// EstimateTokens guesses the token count of messages (about 4 bytes per
// token for English and code).
func EstimateTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)/4 + 4
		for _, tc := range m.ToolCalls {
			n += (len(tc.Function.Name) + len(tc.Function.Arguments)) / 4
		}
	}
	return n
}

// MaxReplyBytes bounds one streamed reply, text and tool-call arguments
// together (above the 10 MB a write_file may carry); MaxStreamedCalls
// bounds the calls it may carry. Past either, the stream is stopped and
// the turn ends with ErrReplyTooLarge: nothing grows without limit.
const (
	MaxReplyBytes    = 16 << 20
	MaxStreamedCalls = 64
)

var ErrReplyTooLarge = fmt.Errorf("the model's reply is too large (over %d MB, or over %d tool calls); stopped", MaxReplyBytes>>20, MaxStreamedCalls)

// ErrToolsUnsupported means the server refused tools for this model (400
// "... does not support tools"); the caller switches to prose mode.
var ErrToolsUnsupported = errors.New("the model does not support tools")

// ValidCallID accepts the IDs servers send (call_abc123, chatcmpl-tool-...):
// letters, digits, _ and -, at most 64. Anything else is replaced, since the
// ID is echoed into the tool-result delimiter the model reads.
func ValidCallID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
