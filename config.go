package harvey

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/wspath"
	"gopkg.in/yaml.v3"
)

// ConfigPath is the config file, relative to the workspace.
const ConfigPath = AgentsDir + "/harvey.yaml"

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
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// parseDuration accepts Go durations and plain integer seconds.
func parseDuration(s string) (time.Duration, error) {
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
}

// ModelConfig holds per-model overrides (the models: block).
type ModelConfig struct {
	ToolsEnabled        *bool `yaml:"tools_enabled,omitempty"`
	MaxToolCallsPerTurn int   `yaml:"max_tool_calls_per_turn,omitempty"`
	NumCtx              int   `yaml:"num_ctx,omitempty"`
	MaxTools            int   `yaml:"max_tools,omitempty"` // tools sent to this model, MCP ones counted (default 24)
}

// Route is a named remote endpoint (see routing.go).
type Route struct {
	Name     string `yaml:"name"`
	Provider string `yaml:"provider"`
	URL      string `yaml:"url,omitempty"`
	Model    string `yaml:"model,omitempty"`
	Enabled  bool   `yaml:"enabled"`
}

// DefaultAllowedCommands is the safe-mode allowlist used when none is set.
var DefaultAllowedCommands = []string{"ls", "cat", "head", "tail", "wc", "grep", "find", "stat", "pwd", "echo", "go", "git", "diff", "sort", "uniq"}

// defaultConfig returns the configuration used when no file exists.
func defaultConfig() *Config {
	return &Config{
		NumCtx:          DefaultNumCtx,
		RunTimeout:      Duration(DefaultRunTimeout),
		AllowedCommands: append([]string(nil), DefaultAllowedCommands...),
		Permissions:     map[string][]string{".": {"read", "write", "exec", "delete"}},
	}
}

// ConfigFile is the loaded config plus what Harvey needs to save it safely.
type ConfigFile struct {
	*Config
	doc      *yaml.Node // the parsed document, so a save keeps comments and order
	broken   bool       // the file exists but did not parse: never overwrite it
	Warnings []string

	base     *Config  // the user's own config (trusted)
	ws       *Config  // agents/harvey.yaml alone
	wsKeys   []string // the keys it sets
	data     []byte   // its bytes, for the trust store
	declined bool     // the user declined its gated settings this session
	// Gated are workspace settings waiting for the user's confirmation.
	Gated []gatedSetting
	// extMCP are the servers of the workspace's .mcp.json (and the Cursor
	// and VS Code spellings), extSum their files' hash, for the trust store.
	extMCP map[string]MCPServer
	extSum string
}

// loadConfig reads the user's own config and then agents/harvey.yaml over
// it. A missing file gives the defaults. A file that does not parse gives
// the defaults, a one-line error naming the file and line, and a ConfigFile
// that refuses to save over it. Settings of the workspace file that need
// the user's confirmation (config_trust.go) are left out and listed in
// Gated until AcceptWorkspace.
func loadConfig(ws *Workspace) (*ConfigFile, error) {
	user, uwarn, uerr := loadUserConfig()
	cf := &ConfigFile{Config: user, base: user, Warnings: uwarn}
	defer cf.addWorkspaceMCPFiles(ws)
	data, err := ws.ReadInternal(ConfigPath)
	if errors.Is(err, fs.ErrNotExist) {
		return cf, uerr
	}
	if err != nil {
		cf.broken = true
		return cf, fmt.Errorf("%s: %v (using defaults)", ConfigPath, wspath.ErrText(err))
	}
	wcf := &ConfigFile{Config: defaultConfig()}
	warnings, err := parseConfig(data, wcf)
	cf.Warnings = append(cf.Warnings, warnings...)
	if err != nil {
		cf.broken = true
		return cf, fmt.Errorf("%s: %v (using defaults; the file is left as it is)", ConfigPath, err)
	}
	cf.doc = wcf.doc
	markWorkspace(wcf.Config.MCP.Servers)
	cf.ws, cf.wsKeys, cf.data = wcf.Config, topKeys(wcf.doc), data
	for _, k := range cf.wsKeys {
		if slices.Contains(userOnlyKeys, k) {
			cf.Warnings = append(cf.Warnings, fmt.Sprintf("%s: %s: is read from your own config (%s) only; ignored here", ConfigPath, k, filepath.Join(userConfigDir(), "harvey.yaml")))
		}
	}
	if workspaceConfigTrusted(ws.Root, data) {
		cf.Config = mergeConfig(user, wcf.Config, cf.wsKeys)
	} else {
		// Unconfirmed: plain settings as written, limits the stricter
		// way, senders not at all; what would loosen or send waits.
		cf.Gated = gatedKeys(user, wcf.Config, cf.wsKeys)
		cf.Config = mergeWorkspace(user, wcf.Config, cf.wsKeys)
	}
	cf.Config.clamp()
	return cf, uerr
}

// AcceptWorkspace applies the workspace settings that waited for the
// user's confirmation and remembers the file as confirmed.
func (cf *ConfigFile) AcceptWorkspace(root string) error {
	if len(cf.Gated) == 0 {
		return nil
	}
	cf.Config = mergeConfig(cf.Config, cf.ws, gatedNames(cf.Gated))
	cf.Config.clamp()
	if cf.extMCP != nil && slices.ContainsFunc(cf.Gated, func(g gatedSetting) bool { return g.Key == mcpFilesKey }) {
		cf.Config.MCP.Servers = withServers(cf.Config.MCP.Servers, cf.extMCP)
		if err := trust(root, trustMCPFiles, cf.extSum); err != nil {
			return err
		}
		if cf.data == nil {
			cf.Gated = nil
			return nil
		}
	}
	cf.Gated = nil
	return trustWorkspaceConfig(root, cf.data)
}

// DeclineWorkspace keeps the gated settings out for this session.
func (cf *ConfigFile) DeclineWorkspace() { cf.declined = true }

// parseConfigAs is parseConfig for a file with another name (the user's).
func parseConfigAs(data []byte, cf *ConfigFile, name string) ([]string, error) {
	w, err := parseConfig(data, cf)
	for i := range w {
		w[i] = strings.ReplaceAll(w[i], ConfigPath, name)
	}
	return w, err
}

var yamlLineRE = regexp.MustCompile(`^yaml: (?:unmarshal errors:\s*)?line (\d+): `)

// parseConfig decodes data into cf.Config, collecting warnings for unknown
// keys and values past a ceiling.
func parseConfig(data []byte, cf *ConfigFile) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(err)
	}
	if len(doc.Content) == 0 { // empty file
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the file must be a mapping of keys to values", root.Line)
	}
	c := defaultConfig()
	if err := root.Decode(c); err != nil {
		return nil, yamlError(err)
	}
	warnings := unknownKeys(root, reflect.TypeOf(Config{}), "")
	warnings = append(warnings, c.clamp()...)
	cf.Config = c
	cf.doc = &doc
	return warnings, nil
}

// yamlError reduces a yaml.v3 error to "line N: message".
func yamlError(err error) error {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "\n ", " ")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("line %s: %s", m[1], strings.TrimSpace(msg[len(m[0]):]))
	}
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:")
	msg = strings.TrimPrefix(msg, "yaml: ")
	return errors.New(strings.TrimSpace(msg))
}

// unknownKeys walks a YAML mapping against a struct type and names every key
// the type does not have, so a typo never passes silently.
func unknownKeys(n *yaml.Node, t reflect.Type, prefix string) []string {
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
				out = append(out, fmt.Sprintf("%s:%d: unknown key %q ignored", ConfigPath, k.Line, prefix+k.Value))
				continue
			}
			out = append(out, unknownKeys(v, ft, prefix+k.Value+".")...)
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode && t.Elem().Kind() == reflect.Struct {
			for i := 0; i+1 < len(n.Content); i += 2 {
				out = append(out, unknownKeys(n.Content[i+1], t.Elem(), prefix+n.Content[i].Value+".")...)
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode && t.Elem().Kind() == reflect.Struct {
			for i, item := range n.Content {
				out = append(out, unknownKeys(item, t.Elem(), fmt.Sprintf("%s%d.", prefix, i))...)
			}
		}
	}
	return out
}

// clamp enforces the hard ceilings and sane values, returning a warning for
// each value it refused.
func (c *Config) clamp() []string {
	var w []string
	if c.Tools.MaxOutputBytes < 0 || c.Tools.MaxOutputBytes > DefaultMaxOutputBytes {
		w = append(w, fmt.Sprintf("%s: tools.max_output_bytes %d is past the ceiling %d; using %d", ConfigPath, c.Tools.MaxOutputBytes, DefaultMaxOutputBytes, DefaultMaxOutputBytes))
		c.Tools.MaxOutputBytes = 0
	}
	if c.Tools.MaxToolCallsPerTurn < 0 || c.Tools.MaxToolCallsPerTurn > DefaultMaxToolCalls {
		w = append(w, fmt.Sprintf("%s: tools.max_tool_calls_per_turn %d is past the ceiling %d; using %d", ConfigPath, c.Tools.MaxToolCallsPerTurn, DefaultMaxToolCalls, DefaultMaxToolCalls))
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
			w = append(w, fmt.Sprintf("%s: models.%s.max_tool_calls_per_turn %d is past the ceiling %d; using %d", ConfigPath, n, m.MaxToolCallsPerTurn, DefaultMaxToolCalls, DefaultMaxToolCalls))
			m.MaxToolCallsPerTurn = 0
			c.Models[n] = m
		}
	}
	if c.NumCtx < 0 {
		w = append(w, fmt.Sprintf("%s: num_ctx %d is negative; using %d", ConfigPath, c.NumCtx, DefaultNumCtx))
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

// modelConfig finds the per-model overrides for model, matching "llama3.2"
// against "llama3.2:latest" in either direction.
func (c *Config) modelConfig(model string) ModelConfig {
	if m, ok := c.Models[model]; ok {
		return m
	}
	for name, m := range c.Models {
		if sameModel(name, model) {
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
	if m := c.modelConfig(model).MaxToolCallsPerTurn; m > 0 && m < n {
		n = m
	}
	return n
}

// ToolsEnabled reports whether schema tools are on for model.
func (c *Config) ToolsEnabled(model string) bool {
	if c.Tools.Enabled != nil && !*c.Tools.Enabled {
		return false
	}
	if m := c.modelConfig(model).ToolsEnabled; m != nil {
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
	if m := c.modelConfig(model).NumCtx; m > 0 {
		return m
	}
	if c.NumCtx > 0 {
		return c.NumCtx
	}
	return DefaultNumCtx
}

// Save writes the given top-level keys of the config back to
// agents/harvey.yaml atomically, keeping the rest of the file (comments,
// order, keys Harvey does not manage) as it was. A file that did not parse is
// never overwritten.
func (cf *ConfigFile) Save(ws *Workspace, keys ...string) error {
	if cf.broken {
		return fmt.Errorf("%s has errors, so Harvey will not overwrite it; fix it and restart", ConfigPath)
	}
	if cf.doc == nil {
		cf.doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	root := cf.doc.Content[0]
	full := &yaml.Node{}
	if err := full.Encode(cf.Config); err != nil {
		return err
	}
	for _, key := range keys {
		var val *yaml.Node
		for i := 0; i+1 < len(full.Content); i += 2 {
			if full.Content[i].Value == key {
				val = full.Content[i+1]
			}
		}
		setMapKey(root, key, val)
	}
	var buf bytes.Buffer
	if len(root.Content) == 0 {
		// Nothing set: keep only the file's comments, never a bare "{}".
		for _, c := range []string{cf.doc.HeadComment, root.HeadComment, root.FootComment, cf.doc.FootComment} {
			if c != "" {
				buf.WriteString(c + "\n")
			}
		}
	} else {
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(cf.doc); err != nil {
			return err
		}
		enc.Close()
	}
	if err := ws.WriteInternalAtomic(ConfigPath, buf.Bytes(), 0o600); err != nil {
		return err
	}
	// Harvey wrote it: it is the user's own choice, unless it still holds
	// settings the user declined (saving must not launder them).
	if !cf.declined && len(cf.Gated) == 0 {
		cf.data = buf.Bytes()
		_ = trustWorkspaceConfig(ws.Root, cf.data)
	}
	return nil
}

// setMapKey sets (or, with a nil value, removes) key in a YAML mapping node.
func setMapKey(m *yaml.Node, key string, val *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			if val == nil {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
			} else {
				m.Content[i+1] = val
			}
			return
		}
	}
	if val != nil {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, val)
	}
}
