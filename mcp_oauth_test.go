package harvey

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
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

// The whole login through a PTY (issue 47): the server answers 401, the
// REPL asks, shows the address, the user pastes the redirect (no browser:
// a Pi over SSH), the call completes; the next session, headless, uses
// the kept token; an expired one is refreshed; logout forgets it, and then
// headless says which command logs in. No token ever reaches the model or
// any output.
func TestMCPOAuthLoginThroughPTY(t *testing.T) {
	t.Parallel()
	bin := buildHarvey(t)
	o := newOAuthServer(t, 3*time.Second)
	cfg, data := t.TempDir(), t.TempDir()
	writeFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    g:\n      url: %s/mcp\n      read_only: [whoami]\n", o.URL))
	env := []string{"NO_COLOR=1", "XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data, "HARVEY_NO_BROWSER=1"}
	f := newFakeOllama(t, "llama3.2:latest")
	f.script(toolReply("llama3.2", fakeCall{id: "w", name: "g__whoami", args: map[string]any{}}), textReply("llama3.2", "Logged in."))
	ws := t.TempDir()
	s := startPTYWith(t, bin, ws, env, 200, "--ollama", f.URL(), "--model", "llama3.2")
	s.expect("MCP server g asks you to log in (OAuth). Log in now? [y/N] ")
	s.send("y\r")
	s.expect("MCP server g: log in at this address:")
	screen := s.expect("paste the address your browser was sent to")
	authURL := ""
	for _, l := range strings.Split(screen, "\n") {
		if i := strings.Index(l, o.URL+"/authorize?"); i >= 0 {
			authURL = strings.TrimSpace(l[i:])
		}
	}
	if authURL == "" {
		t.Fatalf("no address shown:\n%s", screen)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(authURL)
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("the authorization endpoint: %v %v", resp, err)
	}
	s.send(resp.Header.Get("Location") + "\r")
	s.expect("logged in to MCP server g")
	s.expect("harvey> ")
	s.send("who am I?\r")
	s.expect("Logged in.")
	s.expect("harvey> ")
	s.send("/audit\r")
	screen += s.expect("harvey> ") // the audit log, searched for tokens below
	s.send("\x04")
	s.wait()
	if r := toolResults(f.chatRequests())["w"]; !strings.Contains(r, "you are logged in") {
		t.Fatalf("the call: %s", r)
	}
	files, _ := filepath.Glob(filepath.Join(data, "harvey", "mcp-oauth", "g-*.json"))
	if len(files) != 1 {
		t.Fatalf("no token kept: %v", files)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("the token file is %v", fi.Mode().Perm())
	}
	// The next session, headless, after the token expired: refreshed.
	time.Sleep(3500 * time.Millisecond)
	f.script(toolReply("llama3.2", fakeCall{id: "w2", name: "g__whoami", args: map[string]any{}}), textReply("llama3.2", "Still logged in."))
	h := func(args ...string) (string, string, int) { return runHarveyEnv(t, bin, t.TempDir(), "", env, args...) }
	out, errOut, code := h("-p", "who am I now?", "--model", "llama3.2", "--ollama", f.URL(), "--output", "stream-json")
	if code != 0 || !strings.Contains(out, "Still logged in.") || o.refreshes.Load() == 0 {
		t.Fatalf("the kept token, refreshed (%d refreshes): exit %d %s %s", o.refreshes.Load(), code, out, errOut)
	}
	journal := ""
	for _, req := range f.chatRequests() {
		journal += mustJSON(req)
	}
	o.mu.Lock()
	issued := append([]string(nil), o.issued...)
	o.mu.Unlock()
	filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error { // the journal, history, recordings
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			journal += string(b)
		}
		return nil
	})
	for _, tok := range issued {
		if strings.Contains(out+errOut+journal+screen, tok) {
			t.Fatalf("a token reached an output, a file of the workspace or the model")
		}
	}
	// logout forgets it; then headless says how to log in.
	if out, _, code := h("mcp", "logout", "g"); code != 0 || !strings.Contains(out, "forgot the token") {
		t.Fatalf("logout: %d %s", code, out)
	}
	out, errOut, _ = h("mcp", "list")
	if !strings.Contains(out+errOut, "needs you to log in (OAuth): run harvey mcp login g") {
		t.Fatalf("headless without a token: %s %s", out, errOut)
	}
	// harvey mcp login, the address pasted on its stdin.
	cmd := exec.Command(bin, "mcp", "login", "g")
	cmd.Env = append(append(filterCommandEnvironment(os.Environ()), "OLLAMA_HOST="), env...)
	stdin, _ := cmd.StdinPipe()
	stderr, _ := cmd.StderrPipe()
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var said strings.Builder
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
		if i := strings.Index(sc.Text(), o.URL+"/authorize?"); i >= 0 {
			resp, err := noRedirect.Get(strings.TrimSpace(sc.Text()[i:]))
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(stdin, resp.Header.Get("Location")+"\n")
		}
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(said.String(), "logged in to MCP server g") {
		t.Fatalf("harvey mcp login: %v\n%s%s", err, stdout.String(), said.String())
	}
	if out, errOut, code := h("mcp", "list"); code != 0 || !strings.Contains(out, "g: running, 1 tool") {
		t.Fatalf("after harvey mcp login: %d %s %s", code, out, errOut)
	}
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
