package configfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/wspath"
	"gopkg.in/yaml.v3"
)

// Trust. The user's own config ($XDG_CONFIG_HOME/harvey/harvey.yaml, by
// default ~/.config/harvey/harvey.yaml) is trusted. A workspace's
// agents/harvey.yaml may come from a cloned repository: the settings in it
// that send data somewhere (ollama_url, routes) or loosen a limit the user's
// config sets (safe_mode off, more allowed_commands, wider permissions, a
// longer run_timeout) are used only once the user has confirmed that file,
// once per workspace; headless they are ignored with a one-line warning.
// A file Harvey wrote itself (/route, /safemode, /permissions) counts as
// confirmed. The confirmation is remembered outside the workspace, in
// trusted.json beside the user's config, as the file's SHA-256: any change
// made by someone else asks again.

// UserDir is where the user's own config and the trust store live.
func UserDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "harvey")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "harvey")
	}
	return ""
}

// Gated is a workspace setting waiting for the user's confirmation.
type Gated struct {
	Key   string // top-level key
	Shown string // what it would do, for the question
	File  string // the file that asks for it ("": agents/harvey.yaml)
}

// file is the workspace file that asks for the setting.
func (g Gated) Source() string {
	if g.File == "" {
		return config.Path
	}
	return g.File
}

// trustStore is trusted.json: workspace path → SHA-256 of the confirmed
// agents/harvey.yaml.
type trustStore struct {
	Workspaces map[string]trustEntry `json:"workspaces"`
}

type trustEntry struct {
	ConfigSHA256 string `json:"config_sha256"`
	ToolsSHA256  string `json:"tools_sha256,omitempty"` // agents/tools/ as confirmed
	// MCPFilesSHA256 is .mcp.json (and the Cursor and VS Code files) as confirmed.
	MCPFilesSHA256 string `json:"mcp_files_sha256,omitempty"`
	// SkillsSHA256 is the workspace's skills (.claude/skills/, agents/skills/) as confirmed.
	SkillsSHA256 string    `json:"skills_sha256,omitempty"`
	At           time.Time `json:"at"`
}

func trustPath() string {
	if d := UserDir(); d != "" {
		return filepath.Join(d, "trusted.json")
	}
	return ""
}

func loadTrust() trustStore {
	ts := trustStore{Workspaces: map[string]trustEntry{}}
	p := trustPath()
	if p == "" {
		return ts
	}
	if b, err := os.ReadFile(p); err == nil {
		_ = json.Unmarshal(b, &ts)
	}
	if ts.Workspaces == nil {
		ts.Workspaces = map[string]trustEntry{}
	}
	return ts
}

// What the trust store remembers per workspace, each as the SHA-256 of
// what the user confirmed: agents/harvey.yaml, agents/tools/, the
// .mcp.json files and the workspace's skills.
type TrustKind int

const (
	trustConfig TrustKind = iota
	TrustTools
	trustMCPFiles
	TrustSkills
)

// sum is the entry's field for kind.
func (e *trustEntry) sum(kind TrustKind) *string {
	switch kind {
	case TrustTools:
		return &e.ToolsSHA256
	case trustMCPFiles:
		return &e.MCPFilesSHA256
	case TrustSkills:
		return &e.SkillsSHA256
	}
	return &e.ConfigSHA256
}

// Trust remembers sum as what the user confirmed of kind in root.
func Trust(root string, kind TrustKind, sum string) error {
	return updateTrust(root, func(e *trustEntry) { *e.sum(kind) = sum })
}

// Trusted reports whether the user confirmed exactly sum of kind in root.
func Trusted(root string, kind TrustKind, sum string) bool {
	e, ok := loadTrust().Workspaces[root]
	return ok && *e.sum(kind) == sum
}

// trustWorkspaceConfig remembers data as the confirmed config of root,
// with what it does over the user's own config as it is on disk now
// (ConfigSum).
func trustWorkspaceConfig(root string, data []byte) error {
	user, _, _ := LoadUser()
	return Trust(root, trustConfig, ConfigSum(user, data))
}

// ConfigSum is what a confirmation of agents/harvey.yaml covers: the file,
// and what its settings do over the user's own config now — the question's
// lines (issue 75). A change to either asks again: a server of the file
// that your config shadowed runs only once you were asked about it.
func ConfigSum(user *config.Config, data []byte) string {
	wcf := &File{Config: config.Default()}
	var shown string
	if _, err := Parse(data, wcf); err == nil {
		shown = GatedSummary(gatedKeys(user, wcf.Config, topKeys(wcf.doc)))
	}
	return datadir.SHA256Hex(append(append(slices.Clone(data), 0), shown...))
}

// updateTrust changes root's entry in trusted.json (written atomically).
func updateTrust(root string, change func(*trustEntry)) error {
	p := trustPath()
	if p == "" {
		return errors.New("no user config directory (HOME is not set)")
	}
	ts := loadTrust()
	e := ts.Workspaces[root]
	change(&e)
	e.At = time.Now().UTC()
	ts.Workspaces[root] = e
	b, err := json.MarshalIndent(ts, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func workspaceConfigTrusted(root string, user *config.Config, data []byte) bool {
	return Trusted(root, trustConfig, ConfigSum(user, data))
}

// ErrUserConfig marks the user's own config as present but unreadable or
// unparsable. A session does not start on it: the defaults would drop the
// user's hooks, permissions, safe mode and sandbox settings without a word
// (a typo would turn a hook that blocks rm -rf off). Start refuses; a
// command that only reads or edits the file may go on.
var ErrUserConfig = errors.New("Harvey does not start on a config it cannot read, since your hooks, permissions and sandbox settings in it would be lost; fix it, or move it away to start on the defaults")

// LoadUser reads the user's own config (trusted). A missing file is
// the defaults; one that cannot be read or parsed is the defaults and an
// error that wraps ErrUserConfig.
func LoadUser() (*config.Config, []string, error) {
	base := config.Default()
	d := UserDir()
	if d == "" {
		return base, nil, nil
	}
	p := filepath.Join(d, "harvey.yaml")
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return base, nil, nil
	}
	if err != nil {
		return base, nil, fmt.Errorf("%s: %v: %w", p, err, ErrUserConfig)
	}
	cf := &File{Config: config.Default()}
	warnings, err := ParseAs(data, cf, p)
	if err != nil {
		return base, warnings, fmt.Errorf("%s: %v: %w", p, err, ErrUserConfig)
	}
	return cf.Config, warnings, nil
}

// topKeys lists the top-level keys a YAML document sets.
func topKeys(doc *yaml.Node) []string {
	if doc == nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	var keys []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		keys = append(keys, m.Content[i].Value)
	}
	return keys
}

// GatedNames lists the keys of gated settings.
func GatedNames(g []Gated) []string {
	var out []string
	for _, s := range g {
		out = append(out, s.Key)
	}
	return out
}

// SaveUserModel sets model: in the user's own config (creating it), keeping
// every other key and comment as it was. It returns the file's path.
func SaveUserModel(model string) (string, error) {
	return EditUser(func(top *yaml.Node) error {
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value == "model" {
				top.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: model}
				return nil
			}
		}
		top.Content = append(top.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "model"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: model})
		return nil
	})
}

// UserToolsSum is the SHA-256 of agents/tools/: each tool file's name and
// content, in name order ("" when there is none).
func UserToolsSum(ws *wspath.Tree) string {
	entries, err := ws.ListInternal(wspath.UserToolsDir)
	if err != nil || len(entries) == 0 {
		return ""
	}
	h := sha256.New()
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	for _, n := range names {
		data, _ := ws.ReadInternal(wspath.UserToolsDir + "/" + n)
		fmt.Fprintf(h, "%d:%s\n%d:", len(n), n, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}
