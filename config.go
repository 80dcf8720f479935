package harvey

import (
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
)

// The configuration's schema is internal/config's: every part of Harvey
// reads these types, so they live below all of them. What stays here is
// the session's config file: loading it (the user's own, then the
// workspace's over it, with what needs the user's confirmation held back),
// and saving it without losing its comments.

// ConfigPath is the config file, relative to the workspace.
const ConfigPath = config.Path

// The schema's types, as the agent names them.
type (
	Config        = config.Config
	Duration      = config.Duration
	RagConfig     = config.RagConfig
	RagWorkspace  = config.RagWorkspace
	RagStoreEntry = config.RagStoreEntry
	RetryConfig   = config.RetryConfig
	ToolsConfig   = config.ToolsConfig
	ModelConfig   = config.ModelConfig
	Route         = config.Route
	HookConfig    = config.HookConfig
	HookWhen      = config.HookWhen
	HookArgv      = config.HookArgv
	MCPConfig     = config.MCPConfig
	MCPServer     = config.MCPServer
	MCPOAuth      = config.MCPOAuth
	MCPEnterprise = config.MCPEnterprise
	SandboxPolicy = config.SandboxPolicy
	IdleTime      = config.IdleTime
)

// The hard ceilings and defaults (config may tighten them, never loosen).
const (
	DefaultMaxToolCalls   = config.DefaultMaxToolCalls
	DefaultRunTimeout     = config.DefaultRunTimeout
	DefaultNumCtx         = config.DefaultNumCtx
	DefaultOllamaURL      = config.DefaultOllamaURL
	DefaultMaxOutputBytes = config.DefaultMaxOutputBytes
	DefaultEmbeddingModel = config.DefaultEmbeddingModel
	DefaultReplyIdle      = config.DefaultReplyIdle
)

// ConfigFile is the session's configuration file (internal/configfile):
// the user's own config and the workspace's over it, what waits for
// confirmation, and the saving that keeps comments.
type ConfigFile = configfile.File

// DefaultAllowedCommands is the safe-mode allowlist used when none is set.
var DefaultAllowedCommands = config.DefaultAllowedCommands
