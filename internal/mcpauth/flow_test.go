package mcpauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
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
	URL     string
	mu      sync.Mutex
	codes   map[string]string
	tokens  map[string]bool
	grants  map[string]int
	methods []string           // token_endpoint_auth_methods_supported
	keys    []crypto.PublicKey // client assertions (private_key_jwt) signed by one of these are taken
	jwts    []string           // the client assertions and grants it was sent
}

func newGuarded(t *testing.T) *guarded {
	t.Helper()
	g := &guarded{codes: map[string]string{}, tokens: map[string]bool{}, grants: map[string]int{}, methods: []string{"none", "client_secret_basic"}}
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
			"token_endpoint_auth_methods_supported": g.methods, "grant_types_supported": []string{"authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:grant-type:token-exchange"}})
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
			if a := r.Form.Get("client_assertion"); a != "" {
				g.jwts = append(g.jwts, a)
				if !g.signed(a, r.Form.Get("client_id"), srv.URL) || r.Form.Get("resource") != srv.URL+"/mcp" {
					js(w, 401, map[string]any{"error": "invalid_client"})
					return
				}
				break
			}
			if id, secret, _ := r.BasicAuth(); id != "m2m" || secret != "m2m-secret" {
				js(w, 401, map[string]any{"error": "invalid_client"})
				return
			}
		case "refresh_token":
		case "urn:ietf:params:oauth:grant-type:jwt-bearer":
			g.jwts = append(g.jwts, r.Form.Get("assertion"))
			if a := r.Form.Get("assertion"); a != "workload.jwt.value" && a != "idjag.for."+srv.URL+"/mcp" {
				js(w, 400, map[string]any{"error": "invalid_grant", "error_description": "that assertion is not one of mine"})
				return
			}
		case "urn:ietf:params:oauth:grant-type:token-exchange": // as the identity provider: an ID token for an ID-JAG
			if r.Form.Get("subject_token") != "id.token.value" || r.Form.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag" || r.Form.Get("audience") != srv.URL {
				js(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
			js(w, 200, map[string]any{"access_token": "idjag.for." + r.Form.Get("resource"), "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"})
			return
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

// signed reports whether a is a client assertion signed by one of g's
// keys, for clientID, to the authorization server at issuer, in date.
func (g *guarded) signed(a, clientID, issuer string) bool {
	parts := strings.Split(a, ".")
	if len(parts) != 3 {
		return false
	}
	var h struct{ Alg string }
	var c struct {
		Iss, Sub string
		Aud      any
		Exp, Iat int64
		Jti      string
	}
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if json.Unmarshal(hb, &h) != nil || json.Unmarshal(cb, &c) != nil {
		return false
	}
	aud, _ := json.Marshal(c.Aud)
	now := time.Now().Unix()
	if c.Iss != clientID || c.Sub != clientID || !strings.Contains(string(aud), `"`+issuer+`"`) || c.Iat > now+5 || c.Exp < now || c.Jti == "" {
		return false
	}
	input := []byte(parts[0] + "." + parts[1])
	d := sha256.Sum256(input)
	for _, k := range g.keys {
		switch k := k.(type) {
		case *ecdsa.PublicKey:
			size := len(sig) / 2
			if h.Alg == "ES256" && ecdsa.Verify(k, d[:], new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])) {
				return true
			}
		case *rsa.PublicKey:
			if h.Alg == "RS256" && rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig) == nil {
				return true
			}
		case ed25519.PublicKey:
			if h.Alg == "EdDSA" && ed25519.Verify(k, input, sig) {
				return true
			}
		}
	}
	return false
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
