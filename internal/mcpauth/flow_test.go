package mcpauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/netfence"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// guarded is an MCP server behind the specification's authorization, with
// its own authorization server: protected-resource and authorization-server
// metadata, dynamic registration, an authorization endpoint that approves
// at once, and a token endpoint for codes (PKCE checked), refreshes and
// client credentials (m2m / m2m-secret).
type guarded struct {
	URL    string
	mu     sync.Mutex
	codes  map[string]string
	tokens map[string]bool
	grants map[string]int
}

func newGuarded(t *testing.T) *guarded {
	t.Helper()
	g := &guarded{codes: map[string]string{}, tokens: map[string]bool{}, grants: map[string]int{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are logged in"}}}, nil
	})
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.tokens[tok] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: srv.URL + "/.well-known/oauth-protected-resource/mcp"})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	js := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		js(w, 200, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		js(w, 200, map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
			"registration_endpoint": srv.URL + "/register", "response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic"}, "grant_types_supported": []string{"authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"}})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		js(w, http.StatusCreated, map[string]any{"client_id": "harvey", "redirect_uris": m["redirect_uris"], "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		code := rand.Text()
		g.mu.Lock()
		g.codes[code] = q.Get("code_challenge")
		g.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		g.mu.Lock()
		defer g.mu.Unlock()
		grant := r.Form.Get("grant_type")
		g.grants[grant]++
		switch grant {
		case "authorization_code":
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if ch, ok := g.codes[r.Form.Get("code")]; !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch {
				js(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
		case "client_credentials":
			if id, secret, _ := r.BasicAuth(); id != "m2m" || secret != "m2m-secret" {
				js(w, 401, map[string]any{"error": "invalid_client"})
				return
			}
		case "refresh_token":
		case "urn:ietf:params:oauth:grant-type:jwt-bearer":
			if r.Form.Get("assertion") != "workload.jwt.value" {
				js(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
		default:
			js(w, 400, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		access := "access-" + rand.Text()
		g.tokens[access] = true
		js(w, 200, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "refresh-" + rand.Text()})
	})
	return g
}

// browserUI logs in as a person would: shown the address, it follows it
// (the authorization server redirects to Harvey's loopback listener) and,
// asked for the address, presses Enter once the browser is done, pasting
// nothing (the redirect may reach Harvey just after the browser's page).
type browserUI struct {
	mu      sync.Mutex
	said    []string
	browsed chan struct{} // closed once the browser followed the address
}

func (u *browserUI) Say(_ termtext.Tone, line string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.said = append(u.said, line)
	if addr := strings.TrimSpace(line); strings.HasPrefix(addr, "http") && strings.Contains(addr, "/authorize?") {
		done := make(chan struct{})
		u.browsed = done
		go func() {
			defer close(done)
			if resp, err := http.Get(addr); err == nil {
				resp.Body.Close()
			}
		}()
	}
}
func (u *browserUI) Ask(string) (string, error) {
	u.mu.Lock()
	done := u.browsed
	u.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
	// As a person does: Enter once Harvey says the login arrived.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		u.mu.Lock()
		arrived := strings.Contains(strings.Join(u.said, "\n"), "login arrived")
		u.mu.Unlock()
		if arrived {
			break
		}
	}
	return "", nil
}

// call connects to the guarded server through h and calls its tool.
func call(t *testing.T, g *guarded, h *Handler, fence *netfence.Fence) (string, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp", HTTPClient: fence.Client(func(next http.RoundTripper) http.RoundTripper { return h.ResourceTransport(next) }), OAuthHandler: h}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "harvey", Version: "test"}, nil)
	s, err := c.Connect(ctx, tr, nil)
	if err != nil && h.TakeLogin() {
		s, err = c.Connect(ctx, tr, nil)
	}
	if err != nil {
		return "", err
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// A login as the REPL makes one: dynamic registration, PKCE, the browser's
// redirect to the loopback listener; the token kept (0600) for the next
// session, which needs no login; headless with no token, one line saying
// how to log in; harvey mcp logout forgets it.
func TestLoginKeptAndForgotten(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("HARVEY_NO_BROWSER", "1")
	g := newGuarded(t)
	cfg := config.MCPServer{URL: g.URL + "/mcp"}
	fence := netfence.New(cfg.URL)
	ui := &browserUI{}
	h := New("g", cfg, ui, func() bool { return true }, fence)
	out, err := call(t, g, h, fence)
	if err != nil || out != "you are logged in" || g.grants["authorization_code"] != 1 {
		t.Fatalf("login: %q %v %v\n%s", out, err, g.grants, strings.Join(ui.said, "\n"))
	}
	fence2 := netfence.New(cfg.URL)
	if out, err := call(t, g, New("g", cfg, &browserUI{}, func() bool { return false }, fence2), fence2); err != nil || out != "you are logged in" || g.grants["authorization_code"] != 1 {
		t.Errorf("the next session: %q %v %v", out, err, g.grants)
	}
	if forgot, err := Forget("g", cfg.URL); !forgot || err != nil {
		t.Fatalf("Forget: %v %v", forgot, err)
	}
	fence3 := netfence.New(cfg.URL)
	if _, err := call(t, g, New("g", cfg, &browserUI{}, func() bool { return false }, fence3), fence3); err == nil || !strings.Contains(err.Error(), "harvey mcp login g") {
		t.Errorf("headless without a token: %v", err)
	}
}

// Client credentials from your own config: no login, the secret only to
// the authorization server you pinned.
func TestClientCredentials(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("M2M_SECRET", "m2m-secret")
	g := newGuarded(t)
	cfg := config.MCPServer{URL: g.URL + "/mcp", OAuth: &config.MCPOAuth{ClientCredentials: true, ClientID: "m2m", ClientSecret: "${M2M_SECRET}", Issuer: g.URL}}
	fence := netfence.New(cfg.URL)
	if out, err := call(t, g, New("m", cfg, &browserUI{}, func() bool { return false }, fence), fence); err != nil || out != "you are logged in" || g.grants["client_credentials"] != 1 {
		t.Fatalf("%q %v %v", out, err, g.grants)
	}
	unpinned := cfg
	o := *cfg.OAuth
	o.Issuer = "https://elsewhere.example"
	unpinned.OAuth = &o
	fence2 := netfence.New(cfg.URL)
	if _, err := call(t, g, New("m", unpinned, &browserUI{}, func() bool { return false }, fence2), fence2); err == nil {
		t.Error("the secret went to an authorization server the config does not pin")
	}
	if g.grants["client_credentials"] != 1 {
		t.Errorf("grants: %v", g.grants)
	}
}

// A workload's token (SEP-1933) from a file of your config, read at each
// authorization, sent as a JWT-bearer grant: no login.
func TestWorkloadToken(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	g := newGuarded(t)
	tok := t.TempDir() + "/token"
	os.WriteFile(tok, []byte("workload.jwt.value\n"), 0o600)
	cfg := config.MCPServer{URL: g.URL + "/mcp", OAuth: &config.MCPOAuth{ClientID: "w", WorkloadToken: tok, Issuer: g.URL}}
	fence := netfence.New(cfg.URL)
	if out, err := call(t, g, New("w", cfg, &browserUI{}, func() bool { return false }, fence), fence); err != nil || out != "you are logged in" {
		t.Fatalf("%q %v %v", out, err, g.grants)
	}
	os.WriteFile(tok, []byte("expired\n"), 0o600)
	Forget("w", cfg.URL)
	fence2 := netfence.New(cfg.URL)
	if _, err := call(t, g, New("w", cfg, &browserUI{}, func() bool { return false }, fence2), fence2); err == nil {
		t.Error("a refused grant connected")
	}
}
