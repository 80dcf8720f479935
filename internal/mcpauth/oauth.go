// Package mcpauth is OAuth for HTTP MCP servers, as the specification's authorization section
// defines it, through the Go SDK's handlers (auth.AuthorizationCodeHandler:
// protected-resource and authorization-server metadata, client ID metadata
// documents, pre-registered clients and dynamic registration, PKCE, the
// resource parameter, the state and issuer checks, scopes and step-up;
// extauth's client credentials for machine-to-machine servers). What
// Harvey adds is the glue:
//
//   - the login: the authorization URL opened in a browser where there is
//     one, else printed, with the redirect caught by a listener on
//     127.0.0.1 (one request, then closed) or pasted back by you (a Pi over
//     SSH); it happens in the REPL when a server answers 401 and you say
//     yes, or with harvey mcp login NAME. Headless never logs in: it uses a
//     stored token, and says which command to run when there is none.
//   - the tokens: kept in your data directory (mcp-oauth/, 0600, never in a
//     workspace), refreshed by the oauth2 package shortly before they
//     expire (the refreshed one is saved), forgotten by harvey mcp logout,
//     and known to the redactor, so that one never reaches the model or any
//     output.
//
// Its surface: New is a server's auth.OAuthHandler (Handler), given the
// server's config, a UI that says its lines and asks its questions at the
// terminal, and whether a login may happen now; NeedsLogin is the one-line
// refusal where none may; Of finds a transport's Handler, LoggedIn says
// whether a login happened; Forget is harvey mcp logout. The JWT-bearer
// grants (workload identity, enterprise-managed authorization) and
// private_key_jwt are grants.go and jwt.go. Credential commands run as the
// user's own programs, from the user's own config only.
package mcpauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/netfence"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// oauthRecord is what the token store keeps for one server.
type oauthRecord struct {
	URL          string        `json:"url"`
	ClientID     string        `json:"client_id"`
	ClientSecret string        `json:"client_secret,omitempty"`
	AuthURL      string        `json:"auth_url"`
	TokenURL     string        `json:"token_url"`
	AuthStyle    int           `json:"auth_style"`
	Scopes       []string      `json:"scopes,omitempty"`
	RedirectURL  string        `json:"redirect_url,omitempty"`
	Token        *oauth2.Token `json:"token"`
	// DPoPKey is the key a DPoP-bound token is bound to (PKCS #8, base64),
	// kept beside it so that the next session can present it.
	DPoPKey string `json:"dpop_key,omitempty"`
}

// oauthPath is where a server's tokens are kept: by its name and URL, so
// that a server moved to another URL logs in again.
func oauthPath(name, serverURL string) string {
	data := datadir.Path()
	if data == "" {
		return ""
	}
	return filepath.Join(data, "mcp-oauth", name+"-"+datadir.Key(serverURL)+".json")
}

func loadOAuth(name, serverURL string) *oauthRecord {
	p := oauthPath(name, serverURL)
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var r oauthRecord
	if json.Unmarshal(b, &r) != nil || r.Token == nil || r.URL != serverURL {
		return nil
	}
	secrets.Known(r.Token.AccessToken, r.Token.RefreshToken, r.ClientSecret)
	return &r
}

func (r *oauthRecord) save(name string) error {
	p := oauthPath(name, r.URL)
	if p == "" {
		return errors.New("no data directory to keep the token in")
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (r *oauthRecord) config() *oauth2.Config {
	return &oauth2.Config{ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes, RedirectURL: r.RedirectURL,
		Endpoint: oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: oauth2.AuthStyle(r.AuthStyle)}}
}

// savingSource saves each new token of src (a refresh) and tells the
// redactor about it.
type savingSource struct {
	mu   sync.Mutex
	src  oauth2.TokenSource
	rec  *oauthRecord
	name string
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	t, err := s.src.Token()
	if err != nil {
		return nil, fmt.Errorf("the token could not be refreshed (harvey mcp login %s): %v", s.name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec.Token == nil || t.AccessToken != s.rec.Token.AccessToken {
		secrets.Known(t.AccessToken, t.RefreshToken)
		s.rec.Token = t
		s.rec.save(s.name)
	}
	return t, nil
}

// Handler is a server's auth.OAuthHandler: a stored token first; on a
// 401, the login (where one may happen) or a line saying how to log in.
type Handler struct {
	name, url string
	oauth     config.MCPOAuth
	ui        UI
	loginOK   func() bool // whether a login may happen now
	fence     *netfence.Fence
	hc        *http.Client // fence.AuthClient(), with DPoP's proofs where the server takes them (dpop.go)
	dp        *dpop        // this session's DPoP key and what it learnt; nil: none could be made
	pinnedAS  string       // the authorization server checkPin chose (one the user pinned)
	workspace bool         // the server is a workspace's: it may not name a key of yours
	// Standalone: harvey mcp login, a process of its own: a login the
	// browser finished ends it, with no Enter (a question left waiting
	// dies with the process).
	Standalone bool

	mu       sync.Mutex
	inner    auth.OAuthHandler
	stored   oauth2.TokenSource
	loggedIn atomic.Bool // a login happened (connect tries once more with its token)
	grantErr error       // a JWT-bearer grant refused: said again, not asked again, in this connection
}

// New is server name's OAuth handler. Every request it makes goes
// through fence's AuthClient (internal/netfence), and the credentials of
// the server's oauth: block are registered with the fence, which lets them
// leave only for the authorization server the block pins.
func New(name string, cfg config.MCPServer, ui UI, loginOK func() bool, fence *netfence.Fence) *Handler {
	rec := loadOAuth(name, cfg.URL)
	a := &Handler{name: name, url: cfg.URL, ui: ui, loginOK: loginOK, fence: fence, hc: fence.AuthClient(), workspace: cfg.FromWorkspace, dp: newDPoP()}
	if rec != nil && rec.DPoPKey != "" {
		if d := dpopFromKey(rec.DPoPKey); d != nil {
			a.dp = d
		}
	}
	if a.dp != nil {
		hc := *a.hc
		hc.Transport = authTransport{d: a.dp, base: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport)}
		a.hc = &hc
	}
	if cfg.OAuth != nil {
		a.oauth = *cfg.OAuth
		a.oauth.ClientSecret = cfg.Expanded(map[string]string{"s": cfg.OAuth.ClientSecret})["s"]
		secrets.Known(a.oauth.ClientSecret)
		fence.Credential(a.oauth.ClientSecret)
		if e := cfg.OAuth.Enterprise; e != nil {
			e2 := *e
			e2.IdPClientSecret = cfg.Expanded(map[string]string{"s": e.IdPClientSecret})["s"]
			secrets.Known(e2.IdPClientSecret)
			fence.Credential(e2.IdPClientSecret)
			a.oauth.Enterprise = &e2
		}
		for _, p := range a.oauth.Pins() {
			fence.Pin(p)
		}
	}
	if rec != nil && rec.Token.RefreshToken == "" && rec.TokenURL == "" {
		// An enterprise login's token: no refresh, used while it lasts
		// (then the server's 401 asks for a new one).
		if rec.Token.Expiry.IsZero() || time.Until(rec.Token.Expiry) > time.Minute {
			a.stored = oauth2.StaticTokenSource(rec.Token)
		}
	} else if rec != nil {
		if a.dp != nil && strings.EqualFold(rec.Token.TokenType, "DPoP") {
			a.dp.bound[rec.Token.AccessToken] = true // bound to the key kept with it
		}
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, a.hc)
		a.stored = &savingSource{src: rec.config().TokenSource(ctx, rec.Token), rec: rec, name: name}
	}
	return a
}

func (a *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	a.mu.Lock()
	inner, stored := a.inner, a.stored
	a.mu.Unlock()
	if inner != nil {
		if ts, err := inner.TokenSource(ctx); ts != nil || err != nil {
			return ts, err
		}
	}
	return stored, nil
}

// NeedsLogin is a 401 (or a 403 asking for more scopes) where no login
// may happen (headless).
type NeedsLogin struct {
	Name  string // the server
	Scope bool   // the server asks for more scopes than the login gave
}

func (e NeedsLogin) Error() string {
	if e.Scope {
		return fmt.Sprintf("MCP server %s asks for more permissions than your login gave (insufficient_scope): run harvey mcp login %s, or use it in the REPL", e.Name, e.Name)
	}
	return fmt.Sprintf("MCP server %s needs you to log in (OAuth): run harvey mcp login %s", e.Name, e.Name)
}

func (a *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workspace && a.oauth.NamesYourCredentials() {
		resp.Body.Close()
		return fmt.Errorf("MCP server %s: a workspace's MCP file cannot name a key, token or command of yours (oauth.private_key, workload_token, id_token_command): add the server to your own config", a.name)
	}
	if err := a.checkPin(ctx, req, resp); err != nil {
		resp.Body.Close()
		return err
	}
	if a.oauth.GrantKind() != "" {
		return a.grant(ctx, req, resp)
	}
	if a.oauth.ClientCredentials {
		if a.inner == nil {
			h, err := a.machineHandler()
			if err != nil {
				resp.Body.Close()
				return err
			}
			a.inner = h
		}
		if j, ok := a.inner.(*jwtClientAuth); ok {
			j.issuer = a.pinnedAS
		}
		return a.inner.Authorize(ctx, req, resp)
	}
	if a.inner != nil && resp.StatusCode == http.StatusForbidden {
		return a.inner.Authorize(ctx, req, resp) // step-up: more scopes, the same login
	}
	if !a.loginOK() {
		resp.Body.Close()
		return NeedsLogin{Name: a.name, Scope: resp.StatusCode == http.StatusForbidden}
	}
	h, err := a.loginHandler()
	if err != nil {
		resp.Body.Close()
		return err
	}
	a.inner = h
	// The login has its own time (a person at a browser), not the
	// request's: initialize is tried again after it (connect).
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Minute)
	defer cancel()
	if err := h.Authorize(lctx, req, resp); err != nil {
		return fmt.Errorf("MCP server %s: the login failed: %v", a.name, err)
	}
	a.loggedIn.Store(true)
	a.ui.Say(termtext.Done, fmt.Sprintf("logged in to MCP server %s; the token is kept in %s (harvey mcp logout %s forgets it)", a.name, filepath.Dir(oauthPath(a.name, a.url)), a.name))
	return nil
}

// checkPin holds a server whose oauth: block gives a credential of yours
// (a client secret, a key, a workload or ID token) to an authorization
// server you pinned (oauth.issuer or auth_server_metadata_url): one of
// those the protected resource names must be it, or nothing is sent and
// the line says what to pin. The fence (internal/netfence) holds the same
// for every request, whatever the flow. A server with no credential of
// yours (a browser login, dynamic registration) needs no pin.
func (a *Handler) checkPin(ctx context.Context, req *http.Request, resp *http.Response) error {
	a.pinnedAS = ""
	if !a.oauth.HasCredentials() {
		return nil
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	prm, err := resourceMetadata(ctx, challenges, req.URL.String(), a.hc)
	if err != nil {
		return fmt.Errorf("MCP server %s: %v", a.name, err)
	}
	pins := []string{a.oauth.Issuer, a.oauth.AuthServerMetadataURL}
	for _, as := range prm.AuthorizationServers {
		for _, p := range pins {
			if p != "" && netfence.SameOrigin(as, p) {
				a.pinnedAS = as
				return nil
			}
		}
	}
	named := termtext.Sanitize(strings.Join(prm.AuthorizationServers, ", "))
	if a.oauth.Issuer == "" && a.oauth.AuthServerMetadataURL == "" {
		return fmt.Errorf("MCP server %s: your config gives it a credential (%s), which goes only to an authorization server you pin; the server names %s — if you trust it, add issuer: %s under the server's oauth: in your config",
			a.name, a.oauth.CredentialKind(), named, termtext.Sanitize(prm.AuthorizationServers[0]))
	}
	return fmt.Errorf("MCP server %s names the authorization server %s, not the one your config pins (oauth.issuer or auth_server_metadata_url): refused", a.name, named)
}

// machineHandler authenticates a machine-to-machine client: by a key it
// signs with (private_key_jwt), else by its secret (the SDK's handler).
func (a *Handler) machineHandler() (auth.OAuthHandler, error) {
	if a.oauth.PrivateKey != "" {
		return newJWTClientAuth(a.name, a.oauth.ClientID, a.oauth.PrivateKey, a.hc, a.fence)
	}
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{HTTPClient: a.hc,
		Credentials: &oauthex.ClientCredentials{ClientID: a.oauth.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: a.oauth.ClientSecret}}})
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: client credentials: %v", a.name, err)
	}
	return h, nil
}

// loginHandler is the SDK's authorization code handler for the logins of
// this server: its redirect goes to one loopback port, which each login
// listens on while it waits (a second login, for more scope, too).
func (a *Handler) loginHandler() (*auth.AuthorizationCodeHandler, error) {
	port, redirect, err := a.loopback()
	if err != nil {
		return nil, err
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: a.fetcher(port),
		RequestRefreshToken:      true,
		Client:                   a.hc,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "Harvey", RedirectURIs: []string{redirect}, GrantTypes: []string{"authorization_code", "refresh_token"},
			TokenEndpointAuthMethod: "none"}},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			rec := &oauthRecord{URL: a.url, ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthURL: c.Endpoint.AuthURL, TokenURL: c.Endpoint.TokenURL,
				AuthStyle: int(c.Endpoint.AuthStyle), Scopes: c.Scopes, RedirectURL: c.RedirectURL, Token: t}
			if a.dp != nil && strings.EqualFold(t.TokenType, "DPoP") {
				rec.DPoPKey = a.dp.export()
			}
			secrets.Known(t.AccessToken, t.RefreshToken)
			if err := rec.save(a.name); err != nil {
				a.ui.Say(termtext.Warn, "warning: the token could not be kept, so the next session logs in again: "+err.Error())
			}
			return &savingSource{src: c.TokenSource(ctx, t), rec: rec, name: a.name}, nil
		},
	}
	if len(a.oauth.Scopes) > 0 {
		scopes := a.oauth.Scopes
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	if a.oauth.ClientID != "" {
		cc := &oauthex.ClientCredentials{ClientID: a.oauth.ClientID}
		if a.oauth.ClientSecret != "" {
			cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: a.oauth.ClientSecret}
		}
		cfg.PreregisteredClient = cc
	}
	if a.oauth.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: a.oauth.ClientMetadataURL}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %v", a.name, err)
	}
	return h, nil
}

// loopback chooses the login's loopback port (redirect_port, else a free
// one) and its redirect URL; each login listens on it again (fetcher).
func (a *Handler) loopback() (int, string, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", a.oauth.RedirectPort))
	if err != nil {
		return 0, "", fmt.Errorf("MCP server %s: no loopback port for the login's redirect: %v", a.name, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port, fmt.Sprintf("http://127.0.0.1:%d/callback", port), nil
}

// fetcher shows the authorization URL (and opens a browser where there is
// one), listens on the login's loopback port while it waits (one request),
// and takes the redirect: from the listener, or, where no browser opened,
// from the URL you paste. In harvey mcp login a redirect that reaches the
// listener ends the wait with no Enter; in the REPL, it is said that Enter
// goes on.
func (a *Handler) fetcher(port int) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return nil, fmt.Errorf("no loopback port for the login's redirect: %v", err)
		}
		a.ui.Say(termtext.Prompt, fmt.Sprintf("MCP server %s: log in at this address:", a.name))
		a.ui.Say(termtext.Plain, "  "+termtext.Sanitize(args.URL))
		state := loginState(args.URL)
		var knocked sync.Once
		got := make(chan *auth.AuthorizationResult, 1)
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			q := r.URL.Query()
			if q.Get("state") != state {
				// Any local process can reach the port first: only the
				// answer to this login (its state) is taken.
				http.Error(w, "not this login", http.StatusBadRequest)
				knocked.Do(func() {
					a.ui.Say(termtext.Warn, "warning: something other than this login's redirect reached its callback (no matching state): ignored; still waiting")
				})
				return
			}
			// Taken before the page says so: once the browser shows it,
			// Harvey has the code.
			select {
			case got <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
			default:
			}
			fmt.Fprintln(w, "Harvey has the login; you can close this tab.")
		})}
		go srv.Serve(ln)
		defer func() {
			// The page a redirect is answering is finished first (the code
			// is taken before it is written): closed at once, the browser
			// got no page (EOF) though Harvey had the login.
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				srv.Close()
			}
		}()
		if openBrowser(args.URL) {
			a.ui.Say(termtext.Note, "· waiting for the browser's redirect to 127.0.0.1 (up to 10 minutes; Ctrl-C stops)")
			return waitRedirect(ctx, got)
		}
		return a.pasteOrRedirect(ctx, got, port)
	}
}

// loginState is the state parameter of an authorization URL: the one a
// redirect must carry back.
func loginState(authURL string) string {
	u, err := url.Parse(authURL)
	if err != nil {
		return ""
	}
	return u.Query().Get("state")
}

// waitRedirect waits for the browser's redirect.
func waitRedirect(ctx context.Context, got <-chan *auth.AuthorizationResult) (*auth.AuthorizationResult, error) {
	select {
	case r := <-got:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Minute):
		return nil, errors.New("no redirect within 10 minutes")
	}
}

// pasteOrRedirect asks for the redirect's address (no browser opened here:
// a Pi over SSH), and takes whichever comes first: the paste, or the
// redirect reaching the listener (you opened the address in a browser on
// this machine).
func (a *Handler) pasteOrRedirect(ctx context.Context, got <-chan *auth.AuthorizationResult, port int) (*auth.AuthorizationResult, error) {
	q := "After logging in, paste the address your browser was sent to (http://127.0.0.1:...), or log in in a browser on this machine: "
	if !a.Standalone {
		// The REPL's question cannot be taken back: when the redirect
		// arrives meanwhile, say that Enter goes on.
		arrived, stop, done := make(chan *auth.AuthorizationResult, 1), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			select {
			case r := <-got:
				a.ui.Say(termtext.Note, "\n· the browser's login arrived: press Enter to go on")
				arrived <- r
			case <-stop:
			}
		}()
		ans, err := a.ui.Ask(q)
		close(stop)
		<-done // a redirect it had taken is in arrived now
		select {
		case r := <-arrived: // the redirect reached the listener meanwhile
			return r, nil
		case r := <-got:
			return r, nil
		default:
		}
		if err != nil {
			return nil, errors.New("no login")
		}
		return pastedRedirect(ans, port)
	}
	type answer struct {
		s   string
		err error
	}
	typed := make(chan answer, 1)
	go func() {
		s, err := a.ui.Ask(q)
		typed <- answer{s, err}
	}()
	select {
	case r := <-got:
		a.ui.Say(termtext.Note, "\n· the browser's login arrived")
		return r, nil
	case t := <-typed:
		if t.err != nil {
			return nil, errors.New("no login")
		}
		return pastedRedirect(t.s, port)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pastedRedirect reads the redirect URL you pasted: it must be the
// loopback callback Harvey listens on.
func pastedRedirect(s string, port int) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() != fmt.Sprint(port) || u.Path != "/callback" {
		return nil, fmt.Errorf("that is not the address the login redirects to (http://127.0.0.1:%d/callback?code=...)", port)
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("the server refused the login: %s %s", e, q.Get("error_description"))
	}
	if q.Get("code") == "" {
		return nil, errors.New("the address has no code")
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// openBrowser opens url where there is a desktop to open it on ($BROWSER,
// macOS's open, xdg-open with a display); false: print it only.
func openBrowser(u string) bool {
	var cmd *exec.Cmd
	switch {
	case os.Getenv("HARVEY_NO_BROWSER") != "":
		return false
	case os.Getenv("BROWSER") != "":
		cmd = exec.Command(os.Getenv("BROWSER"), u)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", u)
	case os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "":
		cmd = exec.Command("xdg-open", u)
	default:
		return false
	}
	cmd.Env = secrets.Environ(os.Environ())
	return cmd.Start() == nil
}

// Forget removes a server's stored tokens.
func Forget(name, serverURL string) (bool, error) {
	p := oauthPath(name, serverURL)
	if p == "" {
		return false, nil
	}
	err := os.Remove(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Of is an HTTP transport's OAuth handler (nil: none).
func Of(t mcp.Transport) *Handler {
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		sa, _ := st.OAuthHandler.(*Handler)
		return sa
	}
	return nil
}

// ResourceTransport wraps the MCP server's round tripper: a DPoP-bound
// token of this server's is presented with the DPoP scheme and a proof.
func (a *Handler) ResourceTransport(base http.RoundTripper) http.RoundTripper {
	if a == nil || a.dp == nil {
		return base
	}
	return resourceTransport{d: a.dp, base: base}
}

// LoggedIn reports whether a login happened through this handler (the
// connection is then tried once more, with its token).
func (a *Handler) LoggedIn() bool { return a.loggedIn.Load() }

// TakeLogin is LoggedIn, and forgets the login (one more try per login).
func (a *Handler) TakeLogin() bool { return a.loggedIn.Swap(false) }

// UI is how a login speaks to the person at the terminal.
type UI interface {
	Say(tone termtext.Tone, line string)
	Ask(question string) (string, error)
}
