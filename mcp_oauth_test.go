package harvey

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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	issued    []string // every token given out (access and refresh)
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
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic"},
			"grant_types_supported": []string{"authorization_code", "refresh_token", "client_credentials"}})
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
			id, secret, ok := r.BasicAuth()
			if !ok {
				id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
			}
			if id != "m2m" || secret != "m2m-secret-value" {
				w.WriteHeader(http.StatusUnauthorized)
				js(w, map[string]any{"error": "invalid_client"})
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

// Client credentials for a machine-to-machine server (issue 47): from your
// own config, the secret from your environment; headless, no login, and
// the secret never shown.
func TestMCPOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	bin := buildHarvey(t)
	o := newOAuthServer(t, time.Minute)
	cfg, data := t.TempDir(), t.TempDir()
	writeFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    m:\n      url: %s/mcp\n      oauth: {client_credentials: true, client_id: m2m, client_secret: \"${M2M_SECRET}\"}\n", o.URL))
	out, errOut, code := runHarveyEnv(t, bin, t.TempDir(), "", []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data, "M2M_SECRET=m2m-secret-value"}, "mcp", "list")
	if code != 0 || !strings.Contains(out, "m: running, 1 tool") || strings.Contains(out+errOut, "m2m-secret-value") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
}
