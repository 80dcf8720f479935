package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultMaxOutputBytes is the cap on any tool output given to the model. It
// is also the hard ceiling: config may only lower it.
const DefaultMaxOutputBytes = 65536

// Path is the config file, relative to the workspace: in wspath.AgentsDir
// (named here, not imported: the path gate is no dependency of the
// settings; wspath's TestConfigPathInAgents keeps the two one).
const Path = "agents/harvey.yaml"

// Hard ceilings: config may tighten these limits, never loosen them.
const (
	DefaultMaxToolCalls = 10
	DefaultRunTimeout   = 5 * time.Minute
	DefaultNumCtx       = 8192
	DefaultOllamaURL    = "http://127.0.0.1:11434"
)

// Duration is a time.Duration that YAML accepts as "5m", "90s", "1m30s" or a
// plain number of seconds.
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// ParseDuration accepts Go durations and plain integer seconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: use a number of seconds or a value like \"90s\" or \"5m\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// Config is Harvey's configuration, from agents/harvey.yaml.
type Config struct {
	Model           string                 `yaml:"model,omitempty"`
	OllamaURL       string                 `yaml:"ollama_url,omitempty"`
	NumCtx          int                    `yaml:"num_ctx,omitempty"`
	KeepAlive       string                 `yaml:"keep_alive,omitempty"`
	SafeMode        bool                   `yaml:"safe_mode"`
	AllowedCommands []string               `yaml:"allowed_commands,omitempty"`
	Permissions     map[string][]string    `yaml:"permissions,omitempty"`
	RunTimeout      Duration               `yaml:"run_timeout,omitempty"`
	OllamaTimeout   Duration               `yaml:"ollama_timeout,omitempty"`
	AutoRecord      bool                   `yaml:"auto_record,omitempty"`
	Tools           ToolsConfig            `yaml:"tools,omitempty"`
	Models          map[string]ModelConfig `yaml:"models,omitempty"`
	Routes          []Route                `yaml:"routes,omitempty"`
	Retry           RetryConfig            `yaml:"retry,omitempty"`
	// RAG is read from the user's own config only: a store is a file of
	// the user's, and what it holds goes into every prompt.
	RAG RagConfig `yaml:"rag,omitempty"`
	MCP MCPConfig `yaml:"mcp,omitempty"`
	// Hooks run before and after tool calls (hooks.go); a workspace's are
	// used once you confirm them.
	Hooks []HookConfig `yaml:"hooks,omitempty"`
	// Sandbox is read from the user's own config only: a workspace
	// cannot widen what its commands may touch.
	Sandbox SandboxPolicy `yaml:"sandbox,omitempty"`
	// KeepRecordings is how many automatic session recordings a workspace
	// keeps (default 50); from the user's own config only, so a cloned
	// repository cannot have the user's recordings deleted.
	KeepRecordings int `yaml:"keep_recordings,omitempty"`
	// Delegate is the delegate tool's sub-agent; from the user's own
	// config only: what it may call beyond reading is the user's word.
	Delegate DelegateConfig `yaml:"delegate,omitempty"`
	// LSP is the language servers whose errors follow an edit; from the
	// user's own config only (a server is a program Harvey starts).
	LSP LSPConfig `yaml:"lsp,omitempty"`
}

// LSPConfig is the lsp: block: the language servers whose errors a
// write or an edit of a file of their language returns.
type LSPConfig struct {
	// Off turns diagnostics after an edit off.
	Off bool `yaml:"off,omitempty"`
	// Servers name another server for a language (go, python,
	// typescript, rust, c) as an argv; an empty list turns that one off.
	Servers map[string][]string `yaml:"servers,omitempty"`
	// Wait bounds how long an edit waits for a warm server's errors
	// (default 3s; a server's first use waits up to five times that).
	Wait Duration `yaml:"wait,omitempty"`
}

// DelegateConfig is the delegate: block: the sub-agent the delegate tool
// and /delegate run.
type DelegateConfig struct {
	// Route runs the sub-agent on a route (a bigger model elsewhere); "":
	// the session's model.
	Route string `yaml:"route,omitempty"`
	// Tools it may call (default: every tool that changes nothing); a tool
	// that writes or runs still asks, as it would for the main model.
	Tools     []string `yaml:"tools,omitempty"`
	MaxRounds int      `yaml:"max_rounds,omitempty"` // rounds of calls (default 8)
	MaxTokens int      `yaml:"max_tokens,omitempty"` // prompt tokens of all its requests (default 32000)
	// AnswerBytes caps the answer the main conversation gets (default 2000).
	AnswerBytes int `yaml:"answer_bytes,omitempty"`
}

// RagConfig is the rag: block. The old single-store form (db_path and
// embedding_model directly under rag:) is read as a store named default.
type RagConfig struct {
	Enabled        bool            `yaml:"enabled,omitempty"`
	Active         string          `yaml:"active,omitempty"`
	Stores         []RagStoreEntry `yaml:"stores,omitempty"`
	DBPath         string          `yaml:"db_path,omitempty"`         // the old form
	EmbeddingModel string          `yaml:"embedding_model,omitempty"` // the old form
	// Workspace embeds the workspace index's chunks too, so find_code fuses
	// both rankings (empty: the lexical index alone).
	Workspace RagWorkspace `yaml:"workspace,omitempty"`
}

// RagWorkspace is how the workspace index is embedded: the model and who
// runs it, as a store's are.
type RagWorkspace struct {
	EmbeddingModel string `yaml:"embedding_model,omitempty"`
	Provider       string `yaml:"provider,omitempty"`
	BaseURL        string `yaml:"base_url,omitempty"`
	// Where the index stops (index_bounds.go): at most MaxFiles files and
	// MaxBytes bytes (0: 20,000 and 256 MB); IndexHome lets a workspace
	// that is the home directory or / be indexed.
	MaxFiles  int  `yaml:"max_files,omitempty"`
	MaxBytes  int  `yaml:"max_bytes,omitempty"`
	IndexHome bool `yaml:"index_home,omitempty"`
}

// RagStoreEntry is one store.
type RagStoreEntry struct {
	Name           string            `yaml:"name"`
	DBPath         string            `yaml:"db_path"`
	EmbeddingModel string            `yaml:"embedding_model"`
	ModelMap       map[string]string `yaml:"model_map,omitempty"` // generation model → embedding model, for a store not yet created
	Provider       string            `yaml:"provider,omitempty"`  // who embeds: ollama (the default) or an any-llm-go provider that offers embeddings
	BaseURL        string            `yaml:"base_url,omitempty"`  // that provider's address, when not its default
}

// RetryConfig is the retry: block: how a model call that failed in a way a
// second try can fix is tried again (retry.go).
type RetryConfig struct {
	Attempts int      `yaml:"attempts,omitempty"` // tries after the first (0: the default; -1: none)
	MaxWait  Duration `yaml:"max_wait,omitempty"` // the longest wait between two tries
	Idle     IdleTime `yaml:"idle,omitempty"`     // how long a reply may make no progress (idle.go)
}

// ToolsConfig is the tools: block of the design.
type ToolsConfig struct {
	Enabled                   *bool    `yaml:"enabled,omitempty"`
	FallbackToNaturalLanguage *bool    `yaml:"fallback_to_natural_language,omitempty"`
	MaxToolCallsPerTurn       int      `yaml:"max_tool_calls_per_turn,omitempty"`
	MaxOutputBytes            int      `yaml:"max_output_bytes,omitempty"`
	AllowedTools              []string `yaml:"allowed_tools,omitempty"`
	// MaxParallel is how many calls of one reply that need no approval
	// run at once (0: twice the cores, at least 4; 1: one at a time).
	MaxParallel int `yaml:"max_parallel,omitempty"`
	// Define are tools written inline, NAME: the keys of a tool file's
	// front matter and description: (internal/usertools.ParseInline). Read
	// from your own config only: a repository's tools are agents/tools/.
	Define map[string]yaml.Node `yaml:"define,omitempty"`
}

// ModelConfig holds per-model overrides (the models: block).
type ModelConfig struct {
	ToolsEnabled        *bool `yaml:"tools_enabled,omitempty"`
	MaxToolCallsPerTurn int   `yaml:"max_tool_calls_per_turn,omitempty"`
	NumCtx              int   `yaml:"num_ctx,omitempty"`
	MaxTools            int   `yaml:"max_tools,omitempty"` // tools sent to this model, MCP ones counted (default 24)
}

// Route is a named remote endpoint (see config.go).
type Route struct {
	Name     string `yaml:"name"`
	Provider string `yaml:"provider"`
	URL      string `yaml:"url,omitempty"`
	Model    string `yaml:"model,omitempty"`
	Enabled  bool   `yaml:"enabled"`
}

// DefaultAllowedCommands is the safe-mode allowlist used when none is set.
var DefaultAllowedCommands = []string{"ls", "cat", "head", "tail", "wc", "grep", "find", "stat", "pwd", "echo", "go", "git", "diff", "sort", "uniq"}

// Default returns the configuration used when no file exists.
func Default() *Config {
	return &Config{
		NumCtx:          DefaultNumCtx,
		RunTimeout:      Duration(DefaultRunTimeout),
		AllowedCommands: append([]string(nil), DefaultAllowedCommands...),
		Permissions:     map[string][]string{".": {"read", "write", "exec", "delete"}},
	}
}

// YAMLLineRE finds the line yaml.v3 names in an error.
var YAMLLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: (?:unmarshal errors:\s*)?line (\d+): `) })

// YAMLError reduces a yaml.v3 error to "line N: message".
func YAMLError(err error) error {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "\n ", " ")
	if m := YAMLLineRE().FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("line %s: %s", m[1], strings.TrimSpace(msg[len(m[0]):]))
	}
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:")
	msg = strings.TrimPrefix(msg, "yaml: ")
	return errors.New(strings.TrimSpace(msg))
}

// UnknownKeys walks a YAML mapping against a struct type and names every key
// the type does not have, so a typo never passes silently.
func UnknownKeys(n *yaml.Node, t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				out = append(out, fmt.Sprintf("%s:%d: unknown key %q ignored", Path, k.Line, prefix+k.Value))
				continue
			}
			out = append(out, UnknownKeys(v, ft, prefix+k.Value+".")...)
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode && t.Elem().Kind() == reflect.Struct {
			for i := 0; i+1 < len(n.Content); i += 2 {
				out = append(out, UnknownKeys(n.Content[i+1], t.Elem(), prefix+n.Content[i].Value+".")...)
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode && t.Elem().Kind() == reflect.Struct {
			for i, item := range n.Content {
				out = append(out, UnknownKeys(item, t.Elem(), fmt.Sprintf("%s%d.", prefix, i))...)
			}
		}
	}
	return out
}

// Clamp enforces the hard ceilings and sane values, returning a warning for
// each value it refused.
func (c *Config) Clamp() []string {
	var w []string
	if c.Tools.MaxParallel < 0 || c.Tools.MaxParallel > 64 {
		w = append(w, fmt.Sprintf("%s: tools.max_parallel %d is not 0 to 64; using the default", Path, c.Tools.MaxParallel))
		c.Tools.MaxParallel = 0
	}
	if c.Tools.MaxOutputBytes < 0 || c.Tools.MaxOutputBytes > DefaultMaxOutputBytes {
		w = append(w, fmt.Sprintf("%s: tools.max_output_bytes %d is past the ceiling %d; using %d", Path, c.Tools.MaxOutputBytes, DefaultMaxOutputBytes, DefaultMaxOutputBytes))
		c.Tools.MaxOutputBytes = 0
	}
	if c.Tools.MaxToolCallsPerTurn < 0 || c.Tools.MaxToolCallsPerTurn > DefaultMaxToolCalls {
		w = append(w, fmt.Sprintf("%s: tools.max_tool_calls_per_turn %d is past the ceiling %d; using %d", Path, c.Tools.MaxToolCallsPerTurn, DefaultMaxToolCalls, DefaultMaxToolCalls))
		c.Tools.MaxToolCallsPerTurn = 0
	}
	names := make([]string, 0, len(c.Models))
	for n := range c.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := c.Models[n]
		if m.MaxToolCallsPerTurn < 0 || m.MaxToolCallsPerTurn > DefaultMaxToolCalls {
			w = append(w, fmt.Sprintf("%s: models.%s.max_tool_calls_per_turn %d is past the ceiling %d; using %d", Path, n, m.MaxToolCallsPerTurn, DefaultMaxToolCalls, DefaultMaxToolCalls))
			m.MaxToolCallsPerTurn = 0
			c.Models[n] = m
		}
	}
	if c.NumCtx < 0 {
		w = append(w, fmt.Sprintf("%s: num_ctx %d is negative; using %d", Path, c.NumCtx, DefaultNumCtx))
		c.NumCtx = DefaultNumCtx
	}
	if c.NumCtx == 0 {
		c.NumCtx = DefaultNumCtx
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = Duration(DefaultRunTimeout)
	}
	return w
}

// MaxOutputBytes is the effective tool output cap.
func (c *Config) MaxOutputBytes() int {
	if c.Tools.MaxOutputBytes > 0 && c.Tools.MaxOutputBytes <= DefaultMaxOutputBytes {
		return c.Tools.MaxOutputBytes
	}
	return DefaultMaxOutputBytes
}

// ModelFor finds the per-model overrides for model, matching "llama3.2"
// against "llama3.2:latest" in either direction.
func (c *Config) ModelFor(model string) ModelConfig {
	if m, ok := c.Models[model]; ok {
		return m
	}
	for name, m := range c.Models {
		if SameModel(name, model) {
			return m
		}
	}
	return ModelConfig{}
}

// MaxToolCalls is the effective per-turn tool round limit for model.
func (c *Config) MaxToolCalls(model string) int {
	n := DefaultMaxToolCalls
	if c.Tools.MaxToolCallsPerTurn > 0 {
		n = c.Tools.MaxToolCallsPerTurn
	}
	if m := c.ModelFor(model).MaxToolCallsPerTurn; m > 0 && m < n {
		n = m
	}
	return n
}

// ToolsEnabled reports whether schema tools are on for model.
func (c *Config) ToolsEnabled(model string) bool {
	if c.Tools.Enabled != nil && !*c.Tools.Enabled {
		return false
	}
	if m := c.ModelFor(model).ToolsEnabled; m != nil {
		return *m
	}
	return true
}

// FallbackEnabled reports whether prose (natural-language) tool mode is on.
func (c *Config) FallbackEnabled() bool {
	return c.Tools.FallbackToNaturalLanguage == nil || *c.Tools.FallbackToNaturalLanguage
}

// EffectiveNumCtx is the context window sent to Ollama for model.
func (c *Config) EffectiveNumCtx(model string) int {
	if m := c.ModelFor(model).NumCtx; m > 0 {
		return m
	}
	if c.NumCtx > 0 {
		return c.NumCtx
	}
	return DefaultNumCtx
}

// SameModel matches "llama3.2" with "llama3.2:latest".
func SameModel(a, b string) bool {
	if a == b {
		return true
	}
	trim := func(s string) string { return strings.TrimSuffix(s, ":latest") }
	return trim(a) == trim(b)
}
