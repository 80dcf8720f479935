package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/wspath"
	"gopkg.in/yaml.v3"
)

// File is the loaded config plus what Harvey needs to save it safely.
type File struct {
	*config.Config
	doc      *yaml.Node // the parsed document, so a save keeps comments and order
	broken   bool       // the file exists but did not parse: never overwrite it
	Warnings []string

	base     *config.Config // the user's own config (trusted)
	ws       *config.Config // agents/harvey.yaml alone
	wsKeys   []string       // the keys it sets
	data     []byte         // its bytes, for the trust store
	declined bool           // the user declined its gated settings this session
	// Gated are workspace settings waiting for the user's confirmation.
	Gated []Gated
	// extMCP are the servers of the workspace's .mcp.json (and the Cursor
	// and VS Code spellings), extSum their files' hash, for the trust store.
	extMCP map[string]config.MCPServer
	extSum string
}

// Load reads the user's own config and then agents/harvey.yaml over
// it. A missing file gives the defaults. A file that does not parse gives
// the defaults, a one-line error naming the file and line, and a File
// that refuses to save over it. Settings of the workspace file that need
// the user's confirmation (config_trust.go) are left out and listed in
// Gated until AcceptWorkspace.
//
// A user config that does not load comes first, whatever the workspace's
// (its error wraps ErrUserConfig): the session must not start on it.
func Load(ws *wspath.Tree) (*File, error) {
	user, uwarn, uerr := LoadUser()
	cf := &File{Config: user, base: user, Warnings: uwarn}
	if uerr != nil {
		cf.broken = true // nothing is saved over what the user cannot see loaded
		return cf, uerr
	}
	defer cf.addWorkspaceMCPFiles(ws)
	data, err := ws.ReadInternal(config.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return cf, uerr
	}
	if err != nil {
		cf.broken = true
		return cf, fmt.Errorf("%s: %v (using defaults)", config.Path, wspath.ErrText(err))
	}
	wcf := &File{Config: config.Default()}
	warnings, err := Parse(data, wcf)
	cf.Warnings = append(cf.Warnings, warnings...)
	if err != nil {
		cf.broken = true
		return cf, fmt.Errorf("%s: %v (using defaults; the file is left as it is)", config.Path, err)
	}
	cf.doc = wcf.doc
	config.MarkWorkspace(wcf.Config.MCP.Servers)
	cf.ws, cf.wsKeys, cf.data = wcf.Config, topKeys(wcf.doc), data
	for _, k := range cf.wsKeys {
		if slices.Contains(userOnlyKeys, k) {
			cf.Warnings = append(cf.Warnings, fmt.Sprintf("%s: %s: is read from your own config (%s) only; ignored here", config.Path, k, filepath.Join(UserDir(), "harvey.yaml")))
		}
	}
	if len(wcf.Config.Tools.Define) > 0 {
		cf.Warnings = append(cf.Warnings, fmt.Sprintf("%s: tools.define is read from your own config only; ignored here (a repository's tools are agents/tools/, used once you confirm them)", config.Path))
	}
	if workspaceConfigTrusted(ws.Root, user, data) {
		cf.Config = mergeConfig(user, wcf.Config, cf.wsKeys)
	} else {
		// Unconfirmed: plain settings as written, limits the stricter
		// way, senders not at all; what would loosen or send waits.
		cf.Gated = gatedKeys(user, wcf.Config, cf.wsKeys)
		cf.Config = mergeWorkspace(user, wcf.Config, cf.wsKeys)
	}
	cf.Config.Clamp()
	return cf, uerr
}

// AcceptWorkspace applies the workspace settings that waited for the
// user's confirmation and remembers the file as confirmed.
func (cf *File) AcceptWorkspace(root string) error {
	if len(cf.Gated) == 0 {
		return nil
	}
	cf.Config = mergeConfig(cf.Config, cf.ws, GatedNames(cf.Gated))
	cf.Config.Clamp()
	if cf.extMCP != nil && slices.ContainsFunc(cf.Gated, func(g Gated) bool { return g.Key == MCPFilesKey }) {
		cf.Config.MCP.Servers = WithServers(cf.Config.MCP.Servers, cf.extMCP)
		if err := Trust(root, trustMCPFiles, cf.extSum); err != nil {
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
func (cf *File) DeclineWorkspace() { cf.declined = true }

// ParseAs is parseConfig for a file with another name (the user's).
func ParseAs(data []byte, cf *File, name string) ([]string, error) {
	w, err := Parse(data, cf)
	for i := range w {
		w[i] = strings.ReplaceAll(w[i], config.Path, name)
	}
	return w, err
}

// Parse decodes data into cf.Config, collecting warnings for unknown
// keys and values past a ceiling.
func Parse(data []byte, cf *File) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, config.YAMLError(err)
	}
	if len(doc.Content) == 0 { // empty file
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the file must be a mapping of keys to values", root.Line)
	}
	c := config.Default()
	if err := root.Decode(c); err != nil {
		return nil, config.YAMLError(err)
	}
	warnings := config.UnknownKeys(root, reflect.TypeOf(config.Config{}), "")
	warnings = append(warnings, c.Clamp()...)
	cf.Config = c
	cf.doc = &doc
	return warnings, nil
}

// Save writes the given top-level keys of the config back to
// agents/harvey.yaml atomically, keeping the rest of the file (comments,
// order, keys Harvey does not manage) as it was. A file that did not parse is
// never overwritten.
func (cf *File) Save(ws *wspath.Tree, keys ...string) error {
	if cf.broken {
		return fmt.Errorf("%s has errors, so Harvey will not overwrite it; fix it and restart", config.Path)
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
		SetMapKey(root, key, val)
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
	if err := ws.WriteInternalAtomic(config.Path, buf.Bytes(), 0o600); err != nil {
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

// SetMapKey sets (or, with a nil value, removes) key in a YAML mapping node.
func SetMapKey(m *yaml.Node, key string, val *yaml.Node) {
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

// Workspace is agents/harvey.yaml alone, as written (nil when there is
// none, or it did not parse).
func (cf *File) Workspace() *config.Config { return cf.ws }
