package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// A config read from YAML: durations and retry.idle with their line when
// wrong, written back as Go durations; a yaml.v3 error reduced to its line.
func TestYAMLValues(t *testing.T) {
	var c struct {
		T Duration `yaml:"t"`
		I IdleTime `yaml:"i"`
	}
	if err := yaml.Unmarshal([]byte("t: 90\ni: off\n"), &c); err != nil || time.Duration(c.T) != 90*time.Second || c.I != "off" {
		t.Fatalf("%+v %v", c, err)
	}
	if out, _ := yaml.Marshal(c); !strings.Contains(string(out), "t: 1m30s") {
		t.Errorf("written as %s", out)
	}
	for _, bad := range []string{"t: soon\n", "\ni: -3\n"} {
		if err := yaml.Unmarshal([]byte(bad), &c); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for in, want := range map[string]time.Duration{"": DefaultReplyIdle, "OFF": 0, "no": 0, "2m": 2 * time.Minute} {
		if d, err := ParseIdle(in); err != nil || d != want {
			t.Errorf("ParseIdle(%q) = %v %v", in, d, err)
		}
	}
	var v map[string]any
	err := yaml.Unmarshal([]byte("a: 1\nb: [\n"), &v)
	if got := YAMLError(err).Error(); !strings.HasPrefix(got, "line ") {
		t.Errorf("YAMLError: %q (from %v)", got, err)
	}
	if got := YAMLError(errors.New("yaml: something odd")).Error(); got != "something odd" {
		t.Errorf("YAMLError without a line: %q", got)
	}
}

// Tools on and off: the whole switch, then a model's own; the prose
// fallback on unless turned off.
func TestToolsEnabled(t *testing.T) {
	no, yes := false, true
	c := Default()
	if !c.ToolsEnabled("llama3.2") || !c.FallbackEnabled() {
		t.Fatal("the defaults")
	}
	c.Models = map[string]ModelConfig{"tiny": {ToolsEnabled: &no}}
	if c.ToolsEnabled("tiny") || !c.ToolsEnabled("llama3.2") {
		t.Error("a model's own switch")
	}
	c.Tools.Enabled, c.Tools.FallbackToNaturalLanguage = &no, &no
	c.Models["big"] = ModelConfig{ToolsEnabled: &yes}
	if c.ToolsEnabled("big") || c.FallbackEnabled() {
		t.Error("tools off for every model")
	}
}

// A hook's condition, and the words a hook is shown and confirmed in.
func TestHookWords(t *testing.T) {
	for _, c := range []struct {
		w     HookWhen
		v     string
		holds bool
		says  string
	}{
		{HookWhen{}, "x", true, "is given"},
		{HookWhen{Equals: "a"}, "a", true, `equals "a"`},
		{HookWhen{Equals: "a"}, "b", false, `equals "a"`},
		{HookWhen{Contains: "rm"}, "rm -rf", true, `contains "rm"`},
		{HookWhen{Matches: "^go "}, "go test", true, `matches "^go "`},
		{HookWhen{Matches: "("}, "x", false, `matches "("`},
	} {
		if c.w.Holds(c.v) != c.holds || c.w.Describe() != c.says {
			t.Errorf("%+v on %q: %v %q", c.w, c.v, c.w.Holds(c.v), c.w.Describe())
		}
	}
}

// An MCP server in a line, its switch, and what its oauth: block gives and
// trusts.
func TestMCPServerWords(t *testing.T) {
	off := false
	if s := (MCPServer{Command: []string{"npx", "-y", "s"}}); s.Target() != "npx -y s" || !s.IsEnabled() {
		t.Errorf("%+v", s)
	}
	if s := (MCPServer{URL: "https://x/mcp", Enabled: &off}); s.Target() != "https://x/mcp" || s.IsEnabled() {
		t.Errorf("%+v", s)
	}
	for _, c := range []struct {
		o                  MCPOAuth
		grant, credential  string
		yours, credentials bool
		pins               int
	}{
		{MCPOAuth{}, "", "", false, false, 0},
		{MCPOAuth{ClientID: "c", ClientSecret: "s", Issuer: "https://as"}, "", "client_secret", false, true, 1},
		{MCPOAuth{ClientID: "c", PrivateKey: "/k", AuthServerMetadataURL: "https://as/.well-known"}, "", "private_key", true, true, 1},
		{MCPOAuth{ClientID: "c", WorkloadToken: "/t"}, "workload", "workload_token", true, true, 0},
		{MCPOAuth{ClientID: "c", Enterprise: &MCPEnterprise{IdPIssuer: "https://idp", IDTokenCommand: HookArgv{"x"}}, Issuer: "https://as"}, "enterprise", "your identity provider's login", true, true, 2},
	} {
		o := c.o
		if o.GrantKind() != c.grant || o.CredentialKind() != c.credential || o.NamesYourCredentials() != c.yours || o.HasCredentials() != c.credentials || len(o.Pins()) != c.pins {
			t.Errorf("%+v: %q %q %v %v %v", o, o.GrantKind(), o.CredentialKind(), o.NamesYourCredentials(), o.HasCredentials(), o.Pins())
		}
	}
}

// The old rag: form is a store named default; a store's embedding model
// for a generation model.
func TestRagStores(t *testing.T) {
	r := RagConfig{DBPath: "/k.db", EmbeddingModel: "e"}
	if s, ok := r.Store(""); !ok || s.Name != "default" || s.DBPath != "/k.db" || s.EmbeddingModelFor("x") != "e" {
		t.Errorf("%+v %v", s, ok)
	}
	if _, ok := r.Store("other"); ok {
		t.Error("a store that is not there")
	}
	s := RagStoreEntry{ModelMap: map[string]string{"llama3.2": "mxbai"}}
	if s.EmbeddingModelFor("llama3.2") != "mxbai" || s.EmbeddingModelFor("mistral") != DefaultEmbeddingModel {
		t.Error("the model map")
	}
}
