package harvey

import "github.com/harvey-agent/harvey/internal/llm"

// The model side's vocabulary is internal/llm's (the messages of a
// conversation, the client a model is reached through, what a client can
// tell about a model, and the retry and idle rules every backend shares);
// the agent names it as before.
type (
	Message        = llm.Message
	Role           = llm.Role
	ChatStats      = llm.ChatStats
	LLMClient      = llm.LLMClient
	WindowedClient = llm.WindowedClient
	ToolProber     = llm.ToolProber
	Capability     = llm.Capability
)

// The four roles of the chat protocols, and what a client knows of a
// model's tool support.
const (
	RoleSystem    = llm.RoleSystem
	RoleUser      = llm.RoleUser
	RoleAssistant = llm.RoleAssistant
	RoleTool      = llm.RoleTool

	CapUnknown = llm.CapUnknown
	CapYes     = llm.CapYes
	CapNo      = llm.CapNo
)

// ErrToolsUnsupported is a model's refusal of schema tools.
var ErrToolsUnsupported = llm.ErrToolsUnsupported
