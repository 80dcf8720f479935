package configfile

// The MCP servers of the user's other clients, for harvey mcp import:
// Claude Desktop's and Claude Code's JSON (ParseMCPJSON reads them) and
// Codex's TOML, read as TOML means it or not at all.

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
)

// ImportSource is another client's config file and where its servers are.
type ImportSource struct {
	Client, Path string
	Servers      map[string]config.MCPServer
	Unread       []string // servers whose config could not be read whole (not imported)
}

// ImportSources reads the MCP servers of the user's other clients: Claude
// Desktop, Claude Code (~/.claude.json, top level and per project), Cursor
// (~/.cursor/mcp.json) and Codex (~/.codex/config.toml).
func ImportSources(home string) []ImportSource {
	var out []ImportSource
	read := func(client, p, key string) {
		data, err := os.ReadFile(p)
		if err != nil {
			return
		}
		if s, err := ParseMCPJSON(data, key); err == nil && len(s) > 0 {
			out = append(out, ImportSource{Client: client, Path: p, Servers: s})
		}
	}
	for _, p := range []string{filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"), filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")} {
		read("Claude Desktop", p, "mcpServers")
	}
	claude := filepath.Join(home, ".claude.json")
	read("Claude Code", claude, "mcpServers")
	if data, err := os.ReadFile(claude); err == nil {
		var doc struct {
			Projects map[string]json.RawMessage `json:"projects"`
		}
		if json.Unmarshal(data, &doc) == nil {
			for _, dir := range slices.Sorted(maps.Keys(doc.Projects)) {
				if s, err := ParseMCPJSON(doc.Projects[dir], "mcpServers"); err == nil && len(s) > 0 {
					out = append(out, ImportSource{Client: "Claude Code (" + dir + ")", Path: claude, Servers: s})
				}
			}
		}
	}
	read("Cursor", filepath.Join(home, ".cursor", "mcp.json"), "mcpServers")
	if data, err := os.ReadFile(filepath.Join(home, ".codex", "config.toml")); err == nil {
		s, bad := codexServers(string(data))
		if len(s) > 0 || len(bad) > 0 {
			out = append(out, ImportSource{Client: "Codex", Path: filepath.Join(home, ".codex", "config.toml"), Servers: s, Unread: bad})
		}
	}
	return out
}

// codexServers reads [mcp_servers.NAME] tables from Codex's config.toml:
// command = "...", args = [...], url = "...", env = { K = "V" } or an
// [mcp_servers.NAME.env] table — the part of TOML those tables use, each
// value read whole (basic and literal strings, one-line arrays and inline
// tables, a trailing comment). A server with a value it cannot read that
// way (a multi-line array, say) is not imported at all, and named in bad:
// half a command line is worse than none. Other keys are ignored.
func codexServers(toml string) (servers map[string]config.MCPServer, bad []string) {
	out := map[string]config.MCPServer{}
	broken := map[string]bool{}
	cur, inEnv := "", false
	for _, raw := range strings.Split(toml, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			cur, inEnv = codexTable(line)
			continue
		}
		if cur == "" || broken[cur] {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			broken[cur] = true // a continued multi-line value
			continue
		}
		s := out[cur]
		if err := codexSetting(&s, inEnv, strings.Trim(strings.TrimSpace(k), `"`), strings.TrimSpace(v)); err != nil {
			broken[cur] = true
		}
		out[cur] = s
	}
	for n, s := range out {
		if broken[n] || (len(s.Command) == 0 || s.Command[0] == "") && s.URL == "" {
			delete(out, n)
		}
	}
	for n := range broken {
		bad = append(bad, n)
	}
	sort.Strings(bad)
	return out, bad
}

// codexTable is the server a table header [mcp_servers.NAME] or
// [mcp_servers.NAME.env] opens ("" for any other table), and whether it is
// the env table.
func codexTable(line string) (name string, env bool) {
	t := strings.Trim(line, "[] ")
	rest, ok := strings.CutPrefix(t, "mcp_servers.")
	if !ok {
		return "", false
	}
	name, sub, _ := strings.Cut(rest, ".")
	name = strings.Trim(name, `"`)
	if !ValidServerName(name) || sub != "" && sub != "env" {
		return "", false
	}
	return name, sub == "env"
}

// codexSetting reads one key = value line of a server's table into s.
func codexSetting(s *config.MCPServer, inEnv bool, k, v string) (err error) {
	switch {
	case inEnv:
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k], err = tomlWhole(v, tomlString)
	case k == "command":
		var c string
		c, err = tomlWhole(v, tomlString)
		s.Command = append([]string{c}, s.Command[min(1, len(s.Command)):]...)
	case k == "args":
		var args []string
		args, err = tomlWhole(v, tomlStringArray)
		head := []string{""}
		if len(s.Command) > 0 {
			head = s.Command[:1]
		}
		s.Command = append(head, args...)
	case k == "url":
		s.URL, err = tomlWhole(v, tomlString)
	case k == "env":
		s.Env, err = tomlWhole(v, tomlStringTable)
	}
	return err
}

var errTOML = errors.New("not a value Harvey reads")

// tomlWhole reads v with read, which must use all of it but for blank
// space and a comment.
func tomlWhole[T any](v string, read func(string) (T, string, error)) (T, error) {
	x, rest, err := read(v)
	if rest = strings.TrimSpace(rest); err == nil && rest != "" && !strings.HasPrefix(rest, "#") {
		err = errTOML
	}
	return x, err
}

// tomlString reads a basic ("a\"b") or literal ('a') string at the start
// of v and returns what follows it.
func tomlString(v string) (string, string, error) {
	switch {
	case strings.HasPrefix(v, "'"):
		if end := strings.IndexByte(v[1:], '\''); end >= 0 {
			return v[1 : end+1], v[end+2:], nil
		}
	case strings.HasPrefix(v, `"`):
		for i := 1; i < len(v); i++ {
			if v[i] == '\\' {
				i++
				continue
			}
			if v[i] == '"' {
				var s string
				if json.Unmarshal([]byte(v[:i+1]), &s) != nil {
					return "", "", errTOML
				}
				return s, v[i+1:], nil
			}
		}
	}
	return "", "", errTOML
}

// tomlStringArray reads a one-line array of strings ["a", 'b',].
func tomlStringArray(v string) ([]string, string, error) {
	return tomlList(v, "[", "]", func(item string) (string, string, error) { return tomlString(item) }, func(out *[]string, s string) { *out = append(*out, s) })
}

// tomlStringTable reads a one-line inline table of strings { K = "V" }.
func tomlStringTable(v string) (map[string]string, string, error) {
	m := map[string]string{}
	_, rest, err := tomlList(v, "{", "}", func(item string) (string, string, error) {
		k, after, ok := strings.Cut(item, "=")
		key := strings.TrimSpace(k)
		if !ok || key == "" {
			return "", "", errTOML
		}
		if strings.HasPrefix(key, `"`) || strings.HasPrefix(key, "'") {
			q, r, err := tomlString(key)
			if err != nil || strings.TrimSpace(r) != "" {
				return "", "", errTOML
			}
			key = q
		}
		val, r, err := tomlString(strings.TrimSpace(after))
		m[key] = val
		return key, r, err
	}, func(*[]string, string) {})
	return m, rest, err
}

// tomlList reads open item, item, ... close, on one line.
func tomlList(v, open, close string, item func(string) (string, string, error), add func(*[]string, string)) ([]string, string, error) {
	rest, ok := strings.CutPrefix(v, open)
	if !ok {
		return nil, "", errTOML
	}
	var out []string
	for {
		rest = strings.TrimSpace(rest)
		if after, ok := strings.CutPrefix(rest, close); ok {
			return out, after, nil
		}
		x, r, err := item(rest)
		if err != nil {
			return nil, "", err
		}
		add(&out, x)
		rest = strings.TrimSpace(r)
		if after, ok := strings.CutPrefix(rest, ","); ok {
			rest = after
		} else if !strings.HasPrefix(rest, close) {
			return nil, "", errTOML
		}
	}
}
