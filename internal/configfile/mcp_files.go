package configfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/wspath"
	"gopkg.in/yaml.v3"
)

// MCP servers as people already configure them: a workspace's .mcp.json
// (Claude Code and others), .cursor/mcp.json (Cursor, same shape) and
// .vscode/mcp.json (VS Code, under "servers") are read as workspace
// configuration — the trust rule of agents/harvey.yaml: used after the
// user confirms them once (remembered by the files' content hash), ignored
// headless with one line. `harvey mcp add`, `remove` and `import` write
// the user's own config, keeping its comments.

// MCPFilesKey names the .mcp.json servers among the gated settings.
const MCPFilesKey = "MCP servers"

// workspaceMCPFiles are the files read, and the key their servers sit under.
var workspaceMCPFiles = []struct{ path, key string }{
	{".mcp.json", "mcpServers"}, {".cursor/mcp.json", "mcpServers"}, {".vscode/mcp.json", "servers"},
}

// mcpJSONServer is one server in those files (and in Claude Desktop's,
// Claude Code's and Cursor's own configs).
type mcpJSONServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// Claude Code's OAuth settings of a server.
	OAuth *struct {
		ClientID              string `json:"clientId"`
		CallbackPort          int    `json:"callbackPort"`
		AuthServerMetadataURL string `json:"authServerMetadataUrl"`
	} `json:"oauth"`
}

// toMCPServer converts a JSON entry; ok is false for what Harvey cannot run
// (no command and no URL, or an SSE-only server).
func (j mcpJSONServer) toMCPServer() (config.MCPServer, bool) {
	switch {
	case j.Command != "":
		return config.MCPServer{Command: append([]string{j.Command}, j.Args...), Env: j.Env}, true
	case j.URL != "" && j.Type != "sse":
		s := config.MCPServer{URL: j.URL, Headers: j.Headers}
		if o := j.OAuth; o != nil && (o.ClientID != "" || o.CallbackPort != 0 || o.AuthServerMetadataURL != "") {
			s.OAuth = &config.MCPOAuth{ClientID: o.ClientID, RedirectPort: o.CallbackPort, AuthServerMetadataURL: o.AuthServerMetadataURL}
		}
		return s, true
	}
	return config.MCPServer{}, false
}

// ParseMCPJSON reads the servers under key in a JSON config.
func ParseMCPJSON(data []byte, key string) (map[string]config.MCPServer, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var raw map[string]mcpJSONServer
	if b, ok := doc[key]; ok {
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
	}
	out := map[string]config.MCPServer{}
	for name, j := range raw {
		if s, ok := j.toMCPServer(); ok && ValidServerName(name) {
			out[name] = s
		}
	}
	return out, nil
}

// ValidServerName: a server's name prefixes its tools' names.
func ValidServerName(n string) bool {
	return n != "" && len(n) <= 32 && !strings.Contains(n, config.MCPNameSep) && config.ToolNameRE().MatchString(n)
}

// addWorkspaceMCPFiles reads the workspace's MCP files: confirmed ones add
// their servers (never replacing one of yours, or agents/harvey.yaml's);
// unconfirmed ones wait as a gated setting.
func (cf *File) addWorkspaceMCPFiles(ws *wspath.Tree) {
	h := sha256.New()
	servers := map[string]config.MCPServer{}
	var files []string
	for _, f := range workspaceMCPFiles {
		data, err := ws.OSRoot().ReadFile(f.path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				cf.Warnings = append(cf.Warnings, fmt.Sprintf("%s: %v", f.path, wspath.ErrText(err)))
			}
			continue
		}
		got, err := ParseMCPJSON(data, f.key)
		if err != nil {
			cf.Warnings = append(cf.Warnings, fmt.Sprintf("%s: %v (its servers are not used)", f.path, err))
			continue
		}
		fmt.Fprintf(h, "%s\n%d\n", f.path, len(data))
		h.Write(data)
		config.MarkWorkspace(got)
		for n, s := range got {
			if _, taken := servers[n]; !taken {
				servers[n] = s
				if !slices.Contains(files, f.path) {
					files = append(files, f.path)
				}
			}
		}
	}
	for n := range servers {
		if _, mine := cf.Config.MCP.Servers[n]; mine {
			delete(servers, n)
		}
	}
	if len(servers) == 0 {
		return
	}
	// The confirmation covers the files and what the question shows of
	// them: the servers yours do not shadow, each as it runs.
	fmt.Fprintf(h, "\x00%s", DescribeServers(servers))
	cf.extMCP, cf.extSum = servers, hex.EncodeToString(h.Sum(nil))
	if Trusted(ws.Root, trustMCPFiles, cf.extSum) {
		cf.Config.MCP.Servers = WithServers(cf.Config.MCP.Servers, servers)
		return
	}
	cf.Gated = append(cf.Gated, Gated{Key: MCPFilesKey, Shown: DescribeServers(servers), File: strings.Join(files, ", ")})
}

// DescribeServers says what starting servers does, a server a line.
func DescribeServers(servers map[string]config.MCPServer) string {
	var lines []string
	for _, n := range slices.Sorted(maps.Keys(servers)) {
		lines = append(lines, "MCP server "+n+": "+DescribeServer(servers[n]))
	}
	return strings.Join(lines, "\n      ")
}

// WithServers is a copy of base with add's servers (base's names win).
func WithServers(base, add map[string]config.MCPServer) map[string]config.MCPServer {
	out := map[string]config.MCPServer{}
	for n, s := range add {
		out[n] = s
	}
	for n, s := range base {
		out[n] = s
	}
	return out
}

// EditUser changes the user's own config as a YAML document, keeping
// every other key and comment, and writes it atomically; it returns the
// file's path.
func EditUser(change func(top *yaml.Node) error) (string, error) {
	dir := UserDir()
	if dir == "" {
		return "", errors.New("no config directory (HOME is not set)")
	}
	p := filepath.Join(dir, "harvey.yaml")
	var doc yaml.Node
	if data, err := os.ReadFile(p); err == nil {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return "", fmt.Errorf("%s: %v (fix it first; it was left as it is)", p, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return "", fmt.Errorf("%s is not a mapping", p)
	}
	if err := change(top); err != nil {
		return "", err
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// MapEntry finds key in a mapping node, adding an empty mapping when
// create is set.
func MapEntry(m *yaml.Node, key string, create bool) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	if !create {
		return nil
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// SetServer writes (or replaces) mcp.servers.NAME in the user's config.
func SetServer(name string, s config.MCPServer) (string, error) {
	return EditUser(func(top *yaml.Node) error {
		servers := MapEntry(MapEntry(top, "mcp", true), "servers", true)
		var v yaml.Node
		if err := v.Encode(s); err != nil {
			return err
		}
		for i := 0; i+1 < len(servers.Content); i += 2 {
			if servers.Content[i].Value == name {
				servers.Content[i+1] = &v
				return nil
			}
		}
		servers.Content = append(servers.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, &v)
		return nil
	})
}

// RemoveServer deletes mcp.servers.NAME from the user's config.
func RemoveServer(name string) (string, error) {
	return EditUser(func(top *yaml.Node) error {
		servers := MapEntry(MapEntry(top, "mcp", true), "servers", true)
		for i := 0; i+1 < len(servers.Content); i += 2 {
			if servers.Content[i].Value == name {
				servers.Content = slices.Delete(servers.Content, i, i+2)
				return nil
			}
		}
		return fmt.Errorf("no MCP server %q in your config", name)
	})
}
