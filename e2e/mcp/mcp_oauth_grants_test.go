package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/mcpauth"
	"github.com/harvey-agent/harvey/internal/netfence"
)

// The JWT-bearer grants (issue 55, the rest of the conformance suite):
// through the built binary, against an MCP server behind its own
// authorization server and, for the enterprise flow, a company's identity
// provider, each checking the requests as the RFCs define them.

// fakeIdP is an enterprise identity provider: OpenID Connect discovery
// only (no PKCE: it is not asked for a login here), and a token endpoint
// that exchanges the ID token it issued for an ID-JAG (RFC 8693, SEP-990).
type fakeIdP struct {
	URL       string
	idToken   string // the ID token it gave the user
	jag       string // what it exchanges it for
	exchanges atomic.Int64
	bad       atomic.Value // the last exchange it refused, and why
}

func newFakeIdP(t *testing.T, audience, resource string) *fakeIdP {
	t.Helper()
	p := &fakeIdP{idToken: "id-token-" + randomHex(12), jag: "id-jag-" + randomHex(12)}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"}, "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "urn:ietf:params:oauth:grant-type:token-exchange"}})
	})
	// The company's login page approves at once: back to the client with a
	// code bound to its PKCE challenge.
	var challenge atomic.Value
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "harvey-at-idp" || !strings.Contains(q.Get("scope"), "openid") || q.Get("code_challenge_method") != "S256" {
			http.Error(w, "bad login request", http.StatusBadRequest)
			return
		}
		challenge.Store(q.Get("code_challenge"))
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=login-code&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f := r.Form
		if f.Get("grant_type") == "authorization_code" {
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if f.Get("code") != "login-code" || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge.Load() {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"access_token": "idp-access-" + randomHex(10), "token_type": "Bearer", "id_token": p.idToken, "expires_in": 300})
			return
		}
		p.exchanges.Add(1)
		want := map[string]string{"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": p.idToken,
			"subject_token_type": "urn:ietf:params:oauth:token-type:id_token", "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
			"audience": audience, "resource": resource, "client_id": "harvey-at-idp"}
		for k, v := range want {
			if f.Get(k) != v {
				p.bad.Store(fmt.Sprintf("%s = %q, want %q", k, f.Get(k), v))
				w.WriteHeader(http.StatusBadRequest)
				json.NewEncoder(w).Encode(map[string]any{"error": "invalid_request", "error_description": k})
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": p.jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A", "expires_in": 300})
	})
	return p
}

// A workload's own JWT (SEP-1933): read from the file the platform keeps
// it in, sent as the assertion by a public client with the resource; no
// browser, headless; the token never shown.
func TestMCPWorkloadIdentity(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	o := newOAuthServer(t, time.Minute)
	jwt := "eyJ" + randomHex(20) + ".eyJ" + randomHex(20) + "." + randomHex(20)
	o.jwtBearer = func(r *http.Request) error {
		if _, _, basic := r.BasicAuth(); basic || r.Form.Get("assertion") != jwt || r.Form.Get("client_id") != "workload" || r.Form.Get("resource") != o.URL+"/mcp" {
			return fmt.Errorf("assertion, client or resource: %v", r.Form)
		}
		return nil
	}
	cfg, data, plat := t.TempDir(), t.TempDir(), t.TempDir()
	tok := filepath.Join(plat, "token")
	os.WriteFile(tok, []byte(jwt+"\n"), 0o600)
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    m:\n      url: %s/mcp\n      oauth: {client_id: workload, workload_token: %q, issuer: %s}\n", o.URL, tok, o.URL))
	env := []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data}
	out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", env, "mcp", "list")
	if code != 0 || !strings.Contains(out, "m: running, 1 tool") || strings.Contains(out+errOut, jwt) {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	// The platform rotated it: the next authorization reads the new one.
	o.mu.Lock()
	jwt = "eyJ" + randomHex(20) + ".eyJrotated." + randomHex(20)
	o.mu.Unlock()
	os.WriteFile(tok, []byte(jwt), 0o600)
	if out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", env, "mcp", "list"); code != 0 || !strings.Contains(out, "m: running, 1 tool") {
		t.Fatalf("after the rotation: exit %d: %s %s", code, out, errOut)
	}
	// Refused: said once, by its OAuth error code, and not tried again. The
	// server's own prose (error_description) is not passed on: the same
	// error reaches the model when a call meets the 401 (internal/netfence).
	before := o.grants.Load()
	o.mu.Lock()
	o.jwtBearer = func(*http.Request) error { return fmt.Errorf("the workload is not trusted") }
	o.mu.Unlock()
	out, errOut, _ = e2e.RunEnv(t, bin, t.TempDir(), "", env, "mcp", "list")
	if !strings.Contains(out+errOut, "invalid_grant") || strings.Contains(out+errOut, "not trusted") || o.grants.Load()-before != 1 {
		t.Errorf("%d grants asked after a refusal; said: %s %s", o.grants.Load()-before, out, errOut)
	}
}

// Enterprise-managed authorization (SEP-990): the ID token your
// id_token_command prints, exchanged at your identity provider for an
// ID-JAG naming this server, which its authorization server takes with
// the client's secret in the way it says it takes (client_secret_basic).
func TestMCPEnterpriseManagedAuthorization(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	o := newOAuthServer(t, time.Minute)
	idp := newFakeIdP(t, o.URL, o.URL+"/mcp")
	o.jwtBearer = func(r *http.Request) error {
		id, secret, basic := r.BasicAuth()
		if !basic || id != "mcp-client" || secret != "mcp-secret-value" || r.Form.Get("client_secret") != "" {
			return fmt.Errorf("client authentication: basic %v %q", basic, id)
		}
		if r.Form.Get("assertion") != idp.jag || r.Form.Get("resource") != o.URL+"/mcp" {
			return fmt.Errorf("assertion or resource: %v", r.Form)
		}
		return nil
	}
	cfg, data := t.TempDir(), t.TempDir()
	yaml := fmt.Sprintf(`mcp:
  servers:
    m:
      url: %s/mcp
      oauth:
        client_id: mcp-client
        client_secret: "${MCP_SECRET}"
        issuer: %s
        enterprise: {idp_issuer: %q, idp_client_id: harvey-at-idp, id_token_command: "printf %%s %s"}
`, o.URL, o.URL, idp.URL, idp.idToken)
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", yaml)
	env := []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data, "MCP_SECRET=mcp-secret-value"}
	out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", env, "mcp", "list")
	if code != 0 || !strings.Contains(out, "m: running, 1 tool") {
		t.Fatalf("exit %d: %s %s (the identity provider: %v)", code, out, errOut, idp.bad.Load())
	}
	for _, secret := range []string{idp.idToken, idp.jag, "mcp-secret-value"} {
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%s shown", secret)
		}
	}
	if idp.exchanges.Load() != 1 || o.grants.Load() != 1 {
		t.Errorf("%d exchanges, %d grants", idp.exchanges.Load(), o.grants.Load())
	}
	// A command that fails is named, with what it said.
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", strings.Replace(yaml, fmt.Sprintf("printf %%s %s", idp.idToken), "echo not logged in to the company >&2; exit 3", 1))
	out, errOut, _ = e2e.RunEnv(t, bin, t.TempDir(), "", env, "mcp", "list")
	if !strings.Contains(out+errOut, "id_token_command") || !strings.Contains(out+errOut, "not logged in to the company") {
		t.Errorf("a failing id_token_command: %s %s", out, errOut)
	}
}

// Enterprise-managed authorization with no id_token_command: harvey mcp
// login is the login at the company's identity provider, in the browser
// (PKCE, the redirect to Harvey's listener), and then the exchange and the
// grant; the token is kept, so the next run, headless, needs no one.
func TestMCPEnterpriseLogin(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	o := newOAuthServer(t, time.Hour)
	idp := newFakeIdP(t, o.URL, o.URL+"/mcp")
	o.jwtBearer = func(r *http.Request) error {
		if r.Form.Get("assertion") != idp.jag {
			return fmt.Errorf("assertion %q", r.Form.Get("assertion"))
		}
		return nil
	}
	cfg, data := t.TempDir(), t.TempDir()
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    m:\n      url: %s/mcp\n      oauth: {client_id: public-client, issuer: %s, enterprise: {idp_issuer: %q, idp_client_id: harvey-at-idp}}\n", o.URL, o.URL, idp.URL))
	env := []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data}
	if out, errOut, _ := e2e.RunEnv(t, bin, t.TempDir(), "", env, "mcp", "list"); !strings.Contains(out+errOut, "harvey mcp login m") {
		t.Fatalf("headless, before any login: %s %s", out, errOut)
	}
	lp := startLogin(t, bin, env, "m")
	if resp, err := http.Get(lp.address(t, idp.URL+"/authorize?", "")); err != nil { // the browser, on to Harvey's 127.0.0.1 callback
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	lp.finished(t, "logged in to MCP server m through "+idp.URL)
	out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", env, "mcp", "list")
	if code != 0 || !strings.Contains(out, "m: running, 1 tool") || idp.exchanges.Load() != 1 {
		t.Fatalf("the next run, with the kept token: exit %d, %d exchanges: %s %s", code, idp.exchanges.Load(), out, errOut)
	}
}

// What a grant may not do: a workspace's server naming a token or command
// of yours is refused before anything is read or run; the browser login at
// an identity provider happens only where a person can answer; the
// (internal/mcpauth's TestGrantServerMetadata: the metadata must name the
// issuer asked for, client_secret_post.)
func TestMCPGrantBoundaries(t *testing.T) {
	t.Parallel()
	o := newOAuthServer(t, time.Minute)
	ran := filepath.Join(t.TempDir(), "ran")
	resp401 := func() (*http.Request, *http.Response) {
		req, _ := http.NewRequest(http.MethodPost, o.URL+"/mcp", nil)
		resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{"Www-Authenticate": {fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, o.URL)}},
			Body: http.NoBody}
		return req, resp
	}
	for _, oa := range []config.MCPOAuth{
		{ClientID: "x", WorkloadToken: "~/.kube/token"},
		{ClientID: "x", WorkloadTokenCommand: config.HookArgv{"sh", "-c", "touch " + ran}},
		{ClientID: "x", Enterprise: &config.MCPEnterprise{IdPIssuer: o.URL, IdPClientID: "y", IDTokenCommand: config.HookArgv{"sh", "-c", "touch " + ran}}},
	} {
		a := mcpauth.New("planted", config.MCPServer{URL: o.URL + "/mcp", OAuth: &oa, FromWorkspace: true}, nil, func() bool { return true }, netfence.New(o.URL))
		req, resp := resp401()
		if err := a.Authorize(context.Background(), req, resp); err == nil || !strings.Contains(err.Error(), "your own config") {
			t.Errorf("a workspace's server used %+v: %v", oa, err)
		}
	}
	if _, err := os.Stat(ran); err == nil || o.grants.Load() != 0 {
		t.Errorf("a workspace's command ran, or a grant was asked (%d)", o.grants.Load())
	}
	a := mcpauth.New("sso", config.MCPServer{URL: o.URL + "/mcp", OAuth: &config.MCPOAuth{ClientID: "x", Issuer: o.URL, Enterprise: &config.MCPEnterprise{IdPIssuer: o.URL, IdPClientID: "y"}}}, nil,
		func() bool { return false }, netfence.New(o.URL))
	req, resp := resp401()
	if err := a.Authorize(context.Background(), req, resp); err == nil || !strings.Contains(err.Error(), "harvey mcp login sso") {
		t.Errorf("headless, a login at the identity provider: %v", err)
	}

}

func randomHex(n int) string { return strings.ToLower(rand.Text())[:min(n, 26)] }
