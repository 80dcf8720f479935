package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/mcpauth"
	"github.com/harvey-agent/harvey/internal/netfence"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oauthServer is an MCP server behind the specification's authorization,
// with its own authorization server, as the hosted servers have them:
// protected-resource metadata named in WWW-Authenticate, authorization-
// server metadata, dynamic registration, an authorization endpoint that
// approves at once and redirects with the code and state, and a token
// endpoint checking PKCE and the resource, issuing tokens that expire after
// ttl with a refresh token.
type oauthServer struct {
	URL       string
	ttl       time.Duration
	mu        sync.Mutex
	codes     map[string]string    // code → PKCE challenge
	tokens    map[string]time.Time // access token → expiry
	refreshes atomic.Int64
	issued    []string         // every token given out (access and refresh)
	jwtKey    crypto.PublicKey // the key client assertions are verified with (private_key_jwt)
	jtis      map[string]bool  // assertions seen: one use each
	// jwtBearer checks a JWT-bearer grant's request (RFC 7523 §2.1): nil
	// takes it; unset, the grant is not taken. grants counts them.
	jwtBearer func(r *http.Request) error
	grants    atomic.Int64
}

func newOAuthServer(t *testing.T, ttl time.Duration) *oauthServer {
	t.Helper()
	o := &oauthServer{ttl: ttl, codes: map[string]string{}, tokens: map[string]time.Time{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", Description: "Says who you are.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are logged in"}}}, nil
		})
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	o.URL = srv.URL
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		exp, ok := o.tokens[tok]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: exp}, nil
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: srv.URL + "/.well-known/oauth-protected-resource/mcp"})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
			"registration_endpoint": srv.URL + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "private_key_jwt"},
			"token_endpoint_auth_signing_alg_values_supported": []string{"ES256", "ES384", "RS256", "EdDSA"},
			"grant_types_supported":                            []string{"authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"}})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		w.WriteHeader(http.StatusCreated)
		js(w, map[string]any{"client_id": "harvey-client", "redirect_uris": m["redirect_uris"], "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("resource") != srv.URL+"/mcp" || q.Get("code_challenge_method") != "S256" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		code := rand.Text()
		o.mu.Lock()
		o.codes[code] = q.Get("code_challenge")
		o.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		o.mu.Lock()
		defer o.mu.Unlock()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			ch, ok := o.codes[r.Form.Get("code")]
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch || r.Form.Get("resource") != srv.URL+"/mcp" {
				w.WriteHeader(http.StatusBadRequest)
				js(w, map[string]any{"error": "invalid_grant"})
				return
			}
			delete(o.codes, r.Form.Get("code"))
		case "refresh_token":
			if !strings.HasPrefix(r.Form.Get("refresh_token"), "refresh-") {
				w.WriteHeader(http.StatusBadRequest)
				js(w, map[string]any{"error": "invalid_grant"})
				return
			}
			o.refreshes.Add(1)
		case "client_credentials":
			if r.Form.Get("client_assertion_type") != "" {
				if err := o.checkAssertion(r.Form, srv.URL); err != nil {
					w.WriteHeader(http.StatusUnauthorized)
					js(w, map[string]any{"error": "invalid_client", "error_description": err.Error()})
					return
				}
				break
			}
			id, secret, ok := r.BasicAuth()
			if !ok {
				id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
			}
			if id != "m2m" || secret != "m2m-secret-value" {
				w.WriteHeader(http.StatusUnauthorized)
				js(w, map[string]any{"error": "invalid_client"})
				return
			}
		case "urn:ietf:params:oauth:grant-type:jwt-bearer":
			o.grants.Add(1)
			var err error
			if o.jwtBearer == nil {
				err = fmt.Errorf("not taken")
			} else {
				err = o.jwtBearer(r)
			}
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				js(w, map[string]any{"error": "invalid_grant", "error_description": err.Error()})
				return
			}
		default:
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		access, refresh := "access-"+rand.Text(), "refresh-"+rand.Text()
		o.tokens[access] = time.Now().Add(o.ttl)
		o.issued = append(o.issued, access, refresh)
		js(w, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(o.ttl.Seconds()), "refresh_token": refresh})
	})
	return o
}

// checkAssertion checks a private_key_jwt token request as an
// authorization server does (RFC 7523 §3): the assertion type, the
// signature by the registered key, iss and sub the client, aud this
// server, unexpired, its jti never seen before; and the resource.
func (o *oauthServer) checkAssertion(f url.Values, issuer string) error {
	if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || f.Get("resource") != issuer+"/mcp" {
		return fmt.Errorf("assertion type or resource: %v", f)
	}
	parts := strings.Split(f.Get("client_assertion"), ".")
	if len(parts) != 3 || o.jwtKey == nil {
		return fmt.Errorf("not a JWS")
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if !verifyJWS(o.jwtKey, []byte(parts[0]+"."+parts[1]), sig) {
		return fmt.Errorf("bad signature")
	}
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Iss, Sub, Jti string
		Aud           any
		Exp, Iat      int64
	}
	json.Unmarshal(body, &c)
	aud := fmt.Sprint(c.Aud)
	now := time.Now().Unix()
	if c.Iss != "m2m-jwt" || c.Sub != "m2m-jwt" || !strings.Contains(aud, issuer) || c.Exp < now || c.Exp > now+600 || c.Jti == "" || o.jtis[c.Jti] {
		return fmt.Errorf("claims: %s", body)
	}
	if o.jtis == nil {
		o.jtis = map[string]bool{}
	}
	o.jtis[c.Jti] = true
	return nil
}

// verifyJWS verifies a JWS signature as RFC 7518 defines each algorithm.
func verifyJWS(pub crypto.PublicKey, input, sig []byte) bool {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		var h []byte
		switch size {
		case 32:
			d := sha256.Sum256(input)
			h = d[:]
		case 48:
			d := sha512.Sum384(input)
			h = d[:]
		default:
			d := sha512.Sum512(input)
			h = d[:]
		}
		return ecdsa.Verify(k, h, new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:]))
	case *rsa.PublicKey:
		d := sha256.Sum256(input)
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig) == nil
	case ed25519.PublicKey:
		return ed25519.Verify(k, input, sig)
	}
	return false
}

// Client credentials signed with your key (private_key_jwt, RFC 7523):
// through the built binary, each key format an authorization server
// takes; a workspace's server may not name a key of yours.
func TestMCPOAuthPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(ec384)
	for _, c := range []struct {
		name  string
		pub   crypto.PublicKey
		block *pem.Block
	}{
		{"ES256, PKCS #8", &ec.PublicKey, pkcs8(t, ec)},
		{"ES384, SEC 1", &ec384.PublicKey, &pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}},
		{"RS256, PKCS #1", &rk.PublicKey, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}},
		{"EdDSA, PKCS #8", ed.Public(), pkcs8(t, ed)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := newOAuthServer(t, time.Minute)
			o.jwtKey = c.pub
			cfg, data, keys := t.TempDir(), t.TempDir(), t.TempDir()
			key := filepath.Join(keys, "client.pem")
			os.WriteFile(key, pem.EncodeToMemory(c.block), 0o600)
			e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    m:\n      url: %s/mcp\n      oauth: {client_credentials: true, client_id: m2m-jwt, private_key: %q, issuer: %s}\n", o.URL, key, o.URL))
			out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data}, "mcp", "list")
			if code != 0 || !strings.Contains(out, "m: running, 1 tool") {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			if len(o.jtis) != 1 {
				t.Errorf("%d assertions accepted", len(o.jtis))
			}
		})
	}
	a := mcpauth.New("planted", config.MCPServer{URL: "http://127.0.0.1:1/mcp", OAuth: &config.MCPOAuth{ClientCredentials: true, ClientID: "x", PrivateKey: "~/.ssh/id_ed25519"}, FromWorkspace: true}, nil, func() bool { return false }, netfence.New("http://127.0.0.1:1/mcp"))
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", nil)
	if err := a.Authorize(context.Background(), req, &http.Response{StatusCode: http.StatusUnauthorized, Body: http.NoBody}); err == nil || !strings.Contains(err.Error(), "your own config") {
		t.Errorf("a workspace's server named a key of yours: %v", err)
	}
}

func pkcs8(t *testing.T, key any) *pem.Block {
	b, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &pem.Block{Type: "PRIVATE KEY", Bytes: b}
}

// Client credentials for a machine-to-machine server (issue 47): from your
// own config, the secret from your environment; headless, no login, and
// the secret never shown.
func TestMCPOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	o := newOAuthServer(t, time.Minute)
	cfg, data := t.TempDir(), t.TempDir()
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    m:\n      url: %s/mcp\n      oauth: {client_credentials: true, client_id: m2m, client_secret: \"${M2M_SECRET}\", issuer: %s}\n", o.URL, o.URL))
	out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data, "M2M_SECRET=m2m-secret-value"}, "mcp", "list")
	if code != 0 || !strings.Contains(out, "m: running, 1 tool") || strings.Contains(out+errOut, "m2m-secret-value") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
}

// harvey mcp login as a person uses it (issue 55): the question is on the
// screen, and the login a browser finishes on this machine is enough: no
// paste and no Enter (stdin stays open and silent).
func TestMCPLoginFinishedByTheBrowser(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	o := newOAuthServer(t, time.Hour)
	cfg, data := t.TempDir(), t.TempDir()
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    g:\n      url: %s/mcp\n      read_only: [whoami]\n", o.URL))
	lp := startLogin(t, bin, []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data}, "g")
	authURL := lp.address(t, o.URL+"/authorize?", "paste the address your browser was sent to")
	resp, err := http.Get(authURL) // the browser: to the server, and on to Harvey's 127.0.0.1 callback
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "you can close this tab") {
		t.Fatalf("the browser's page: %s", body)
	}
	lp.finished(t, "logged in to MCP server g")
}

// loginProcess is harvey mcp login NAME as a person runs it, with no
// browser to open: its stdin open and silent, its screen kept.
type loginProcess struct {
	cmd    *exec.Cmd
	in     io.Closer
	mu     sync.Mutex
	screen strings.Builder
	done   chan error
}

func startLogin(t *testing.T, bin string, env []string, name string) *loginProcess {
	t.Helper()
	lp := &loginProcess{cmd: exec.Command(bin, "mcp", "login", name), done: make(chan error, 1)}
	lp.cmd.Dir = t.TempDir()
	lp.cmd.Env = append(secrets.Environ(os.Environ()), append(env, "NO_COLOR=1", "HARVEY_NO_BROWSER=1")...)
	lp.in, _ = lp.cmd.StdinPipe()
	w := writerFunc(func(p []byte) (int, error) { lp.mu.Lock(); defer lp.mu.Unlock(); return lp.screen.Write(p) })
	lp.cmd.Stdout, lp.cmd.Stderr = w, w
	if err := lp.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lp.in.Close(); lp.cmd.Process.Kill() })
	go func() { lp.done <- lp.cmd.Wait() }()
	return lp
}

func (lp *loginProcess) text() string {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.screen.String()
}

// address waits for the login's address (starting with prefix), shown
// with the words also; a failure on the screen ends the test.
func (lp *loginProcess) address(t *testing.T, prefix, also string) string {
	t.Helper()
	addr := ""
	e2e.WaitFor(t, "the login's address", func() bool {
		s := lp.text()
		if strings.Contains(s, "harvey:") {
			t.Fatalf("harvey mcp login: %s", s)
		}
		if i := strings.Index(s, prefix); i >= 0 && strings.Contains(s, also) {
			addr = strings.Fields(s[i:])[0]
			return true
		}
		return false
	})
	return addr
}

// finished waits for the login to end by itself, saying want.
func (lp *loginProcess) finished(t *testing.T, want string) {
	t.Helper()
	select {
	case err := <-lp.done:
		if err != nil || !strings.Contains(lp.text(), want) {
			t.Fatalf("exit %v:\n%s", err, lp.text())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("harvey mcp login still waits after the browser's login:\n%s", lp.text())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
