package config

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// MCPConfig is the mcp: block of a config.
type MCPConfig struct {
	Servers map[string]MCPServer `yaml:"servers,omitempty"`
}

// MCPServer is one server: a command (stdio) or a URL (streamable HTTP).
type MCPServer struct {
	Command  []string          `yaml:"command,omitempty"`
	Env      map[string]string `yaml:"env,omitempty"`     // values may be ${VAR} from your environment
	URL      string            `yaml:"url,omitempty"`     // streamable HTTP endpoint
	Headers  map[string]string `yaml:"headers,omitempty"` // values may be ${VAR}
	Tools    []string          `yaml:"tools,omitempty"`   // allowlist (empty: all)
	ReadOnly []string          `yaml:"read_only,omitempty"`
	Enabled  *bool             `yaml:"enabled,omitempty"`
	Network  bool              `yaml:"network,omitempty"` // a stdio server may open connections
	Models   []string          `yaml:"models,omitempty"`  // the models its tools are sent to ("*": all)
	Lazy     bool              `yaml:"lazy,omitempty"`    // start at the first prompt, not when Harvey starts
	OAuth    *MCPOAuth         `yaml:"oauth,omitempty"`   // an HTTP server's login (mcp_oauth.go)
	// Timeout is how long a call of its tools may wait for an answer (0:
	// run_timeout; at most an hour).
	Timeout Duration `yaml:"timeout,omitempty"`
	// FromWorkspace: the server comes from a file in the workspace
	// (agents/harvey.yaml, .mcp.json, ...): its ${VAR} are never filled
	// from Harvey's environment, so a repository cannot name a secret of
	// yours and have it sent.
	FromWorkspace bool `yaml:"-"`
}

// MCPOAuth is a server's oauth: block (all optional: with none, a server
// that answers 401 is logged in to with dynamic registration).
type MCPOAuth struct {
	ClientID          string   `yaml:"client_id,omitempty"`
	ClientSecret      string   `yaml:"client_secret,omitempty"`       // ${VAR} from your environment
	ClientMetadataURL string   `yaml:"client_metadata_url,omitempty"` // a client ID metadata document (https)
	Scopes            []string `yaml:"scopes,omitempty"`              // instead of those the server names
	ClientCredentials bool     `yaml:"client_credentials,omitempty"`  // machine to machine: no browser, client_id and client_secret (or private_key)
	PrivateKey        string   `yaml:"private_key,omitempty"`         // a PEM file: client credentials signed with it (private_key_jwt); your own config only
	RedirectPort      int      `yaml:"redirect_port,omitempty"`       // the loopback port (0: any free one)
	// A JWT-bearer grant instead of a login (mcp_oauth_grants.go); your
	// own config only, like private_key.
	WorkloadToken        string         `yaml:"workload_token,omitempty"`         // a file holding this workload's JWT (SEP-1933), read at each authorization
	WorkloadTokenCommand HookArgv       `yaml:"workload_token_command,omitempty"` // or a command printing it
	Enterprise           *MCPEnterprise `yaml:"enterprise,omitempty"`             // your company's identity provider vouches for you (SEP-990)
	// The authorization server you trust with the credentials above
	// (internal/netfence): they go to it, or to endpoints its own metadata
	// names, never to one the MCP server names. Either is enough.
	Issuer                string `yaml:"issuer,omitempty"`                   // its issuer URL
	AuthServerMetadataURL string `yaml:"auth_server_metadata_url,omitempty"` // its metadata (Claude Code's authServerMetadataUrl)
}

// MCPEnterprise is enterprise-managed authorization: the identity
// provider your company logs you in with, and the client Harvey is there.
type MCPEnterprise struct {
	IdPIssuer       string   `yaml:"idp_issuer"`
	IdPClientID     string   `yaml:"idp_client_id"`
	IdPClientSecret string   `yaml:"idp_client_secret,omitempty"` // ${VAR} from your environment
	IDTokenCommand  HookArgv `yaml:"id_token_command,omitempty"`  // prints your ID token (else a login at the provider in the browser)
}

// MarkWorkspace marks every server of m as a workspace's.
func MarkWorkspace(m map[string]MCPServer) {
	for n, s := range m {
		s.FromWorkspace = true
		m[n] = s
	}
}

// NamesVariables reports whether a header or env value names a variable.
func (s MCPServer) NamesVariables() bool {
	for _, m := range []map[string]string{s.Headers, s.Env} {
		for _, v := range m {
			if strings.Contains(v, "$") {
				return true
			}
		}
	}
	return false
}

// OfferedTo reports whether this server's tools are sent to model: to
// every model unless models: narrows them (as Claude Code, Codex, Crush,
// goose and Cursor do); the tool budget keeps a small model's prompt small.
func (s MCPServer) OfferedTo(model string) bool {
	if len(s.Models) == 0 {
		return true
	}
	for _, m := range s.Models {
		if m == "*" || SameModel(m, model) {
			return true
		}
	}
	return false
}

// IsEnabled reports whether the server is on (enabled: unset or true).
func (s MCPServer) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// Target says what a server is, for a question or a list: its URL, or its
// command line.
func (s MCPServer) Target() string {
	if s.URL != "" {
		return s.URL
	}
	return strings.Join(s.Command, " ")
}

// Expanded is m with ${VAR} and $VAR filled from Harvey's own environment
// for a server of the user's own config (it names a secret; it does not
// hold it). A workspace's server gets its values as written: a repository
// never names what of the user's environment is sent.
func (s MCPServer) Expanded(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if s.FromWorkspace {
			out[k] = v
		} else {
			out[k] = os.ExpandEnv(v)
		}
	}
	return out
}

// GrantKind says which grant a server's oauth: block asks for ("" none).
func (o MCPOAuth) GrantKind() string {
	switch {
	case o.Enterprise != nil:
		return "enterprise"
	case o.WorkloadToken != "" || len(o.WorkloadTokenCommand) > 0:
		return "workload"
	}
	return ""
}

// NamesYourCredentials reports whether the block names a file or command
// of yours that proves who you are: never from a workspace.
func (o MCPOAuth) NamesYourCredentials() bool {
	return o.PrivateKey != "" || o.WorkloadToken != "" || len(o.WorkloadTokenCommand) > 0 ||
		(o.Enterprise != nil && len(o.Enterprise.IDTokenCommand) > 0)
}

// HasCredentials reports whether the block gives a credential of yours to
// an authorization server: a client secret, a private key, a workload
// token, an identity provider's login. Such a server needs a pin (Pins).
func (o MCPOAuth) HasCredentials() bool {
	return o.ClientSecret != "" || o.NamesYourCredentials() || o.Enterprise != nil
}

// CredentialKind names the credential the block gives ("" none).
func (o MCPOAuth) CredentialKind() string {
	switch {
	case o.PrivateKey != "":
		return "private_key"
	case o.WorkloadToken != "" || len(o.WorkloadTokenCommand) > 0:
		return "workload_token"
	case o.Enterprise != nil:
		return "your identity provider's login"
	case o.ClientSecret != "":
		return "client_secret"
	}
	return ""
}

// Pins are the URLs the block trusts with its credentials: the pinned
// authorization server (issuer, metadata URL) and an identity provider.
func (o MCPOAuth) Pins() []string {
	var out []string
	for _, u := range []string{o.Issuer, o.AuthServerMetadataURL} {
		if u != "" {
			out = append(out, u)
		}
	}
	if o.Enterprise != nil && o.Enterprise.IdPIssuer != "" {
		out = append(out, o.Enterprise.IdPIssuer)
	}
	return out
}

// MCPNameSep joins a server's name and a tool's name (SERVER__tool).
const MCPNameSep = "__"

// DefaultMaxTools is how many tools a model gets at most (built-in and
// user tools first; MCP tools fill the rest), unless models: says fewer.
const DefaultMaxTools = 24

// ToolNameRE is what providers accept as a tool name (OpenAI's and
// Anthropic's rule; Ollama passes names to templates as they are).
var ToolNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })
