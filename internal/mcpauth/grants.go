package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// JWT-bearer grants (RFC 7523 §2.1): a server whose token is got by
// presenting a JWT someone else signed, with no browser at the MCP
// server's authorization server.
//
//   - Workload identity (SEP-1933, oauth.workload_token or
//     workload_token_command): the JWT your platform gives this machine (a
//     Kubernetes service account's projected token, a CI job's OIDC token),
//     read again at each authorization, since platforms rotate it.
//   - Enterprise-managed authorization (SEP-990, oauth.enterprise): your
//     company's identity provider vouches for you. Your ID token (from
//     id_token_command, or an OpenID Connect login at the provider in the
//     browser) is exchanged there for an identity assertion grant (ID-JAG,
//     RFC 8693 token exchange, the SDK's oauthex.ExchangeToken), which the
//     MCP server's authorization server takes for an access token.
//
// The protocol is the SDK's and the oauth2 package's: discovery (the
// protected resource's metadata, the authorization server's), the token
// exchange, and the token request. What is Harvey's: the client
// authentication the authorization server says it takes (client_secret_basic
// unless it lists only client_secret_post; none for a public client), the
// resource parameter (RFC 8707), the scopes the server names, and an error
// said once and never retried with another grant. A workspace's MCP file can
// name none of the commands or files these read: each would make Harvey
// prove who you are to a server the repository picked.

const grantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// grantAuth is the auth.OAuthHandler of a server whose token comes from a
// JWT-bearer grant.
type grantAuth struct {
	a  *Handler
	ts oauth2.TokenSource
}

func (g *grantAuth) TokenSource(context.Context) (oauth2.TokenSource, error) { return g.ts, nil }

func (g *grantAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	a := g.a
	challenges, prm, err := protectedResource(ctx, req, resp, a.hc)
	if err != nil {
		return fmt.Errorf("MCP server %s: %v", a.name, err)
	}
	asm, err := a.authServerOf(ctx, prm)
	if err != nil {
		return fmt.Errorf("MCP server %s: its authorization server: %v", a.name, err)
	}
	if gt := asm.GrantTypesSupported; len(gt) > 0 && !slices.Contains(gt, grantJWTBearer) {
		return fmt.Errorf("MCP server %s: its authorization server does not take the JWT-bearer grant (it takes %s)", a.name, strings.Join(gt, ", "))
	}
	scopes := a.oauth.Scopes
	if len(scopes) == 0 {
		if scopes = challengeScopes(challenges); len(scopes) == 0 {
			scopes = prm.ScopesSupported
		}
	}
	var assertion string
	if a.oauth.Enterprise != nil {
		assertion, err = g.identityGrant(ctx, asm.Issuer, prm.Resource, scopes)
	} else {
		assertion, err = workloadJWT(ctx, a.oauth)
	}
	if err != nil {
		return fmt.Errorf("MCP server %s: %v", a.name, err)
	}
	a.fence.Credential(assertion) // it proves who you are: to the pinned server only
	t, err := jwtBearerToken(ctx, a.hc, asm, a.oauth.ClientID, a.oauth.ClientSecret, assertion, scopes, prm.Resource)
	if err != nil {
		return fmt.Errorf("MCP server %s: the JWT-bearer grant (%s): %v", a.name, a.oauth.GrantKind(), err)
	}
	g.ts = oauth2.StaticTokenSource(t)
	return nil
}

// authServerOf is the metadata of the authorization server the user
// pinned for this server (checkPin chose it among those the protected
// resource names): from the pinned metadata URL, else discovered from the
// issuer, else its default endpoints where it publishes none.
func (a *Handler) authServerOf(ctx context.Context, prm *oauthex.ProtectedResourceMetadata) (*oauthex.AuthServerMeta, error) {
	issuer := a.pinnedAS
	if issuer == "" {
		issuer = prm.AuthorizationServers[0]
	}
	if a.oauth.AuthServerMetadataURL != "" {
		return metadataAt(ctx, a.oauth.AuthServerMetadataURL, a.hc)
	}
	asm, err := grantServerMeta(ctx, issuer, a.hc)
	if err != nil {
		return nil, err
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: strings.TrimRight(issuer, "/") + "/token"}
	}
	return asm, nil
}

// metadataAt reads an authorization server's metadata from the URL the
// user's config pins (Claude Code's authServerMetadataUrl).
func metadataAt(ctx context.Context, u string, hc *http.Client) (*oauthex.AuthServerMeta, error) {
	asm, status, err := fetchMetadata(ctx, u, hc)
	switch {
	case err != nil && status == 0:
		return nil, err
	case status != http.StatusOK || err != nil:
		return nil, fmt.Errorf("%s answered %d, not its metadata", u, status)
	case !secrets.CredentialURL(asm.TokenEndpoint):
		return nil, fmt.Errorf("its token endpoint %q is neither https nor a loopback address", asm.TokenEndpoint)
	}
	return asm, nil
}

// fetchMetadata GETs authorization-server metadata at u (JSON, at most
// 1 MB): the status, and the metadata where it decodes. A failed request
// is status 0 with its error.
func fetchMetadata(ctx context.Context, u string, hc *http.Client) (*oauthex.AuthServerMeta, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, resp.StatusCode, err
	}
	var asm oauthex.AuthServerMeta
	if err := json.Unmarshal(b, &asm); err != nil {
		return nil, resp.StatusCode, fmt.Errorf("%s is not JSON metadata", u)
	}
	return &asm, resp.StatusCode, nil
}

// grantServerMeta is an authorization server's metadata (RFC 8414, or
// OpenID Connect discovery) at the places the MCP specification lists,
// for a grant at its token endpoint. The SDK's reader checks what a
// browser login needs (PKCE), which a token exchange or a JWT-bearer grant
// does not use, so this one checks the rest as it does: the issuer is the
// one asked for, and the token endpoint is https (or a loopback address).
// nil, nil: no metadata at any of them.
func grantServerMeta(ctx context.Context, issuer string, hc *http.Client) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the issuer %q is not a URL", issuer)
	}
	p := strings.Trim(u.Path, "/")
	paths := []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}
	if p != "" {
		paths = []string{"/.well-known/oauth-authorization-server/" + p, "/.well-known/openid-configuration/" + p, "/" + p + "/.well-known/openid-configuration"}
	}
	for _, path := range paths {
		m := *u
		m.Path, m.RawQuery, m.Fragment = path, "", ""
		if !secrets.CredentialURL(m.String()) {
			return nil, fmt.Errorf("%s is neither https nor a loopback address", m.String())
		}
		asm, status, err := fetchMetadata(ctx, m.String(), hc)
		switch {
		case status == 0:
			return nil, err
		case status >= 400 && status < 500:
			continue
		case status != http.StatusOK:
			return nil, fmt.Errorf("%s answered %d", m.String(), status)
		case err != nil:
			return nil, err
		case strings.TrimRight(asm.Issuer, "/") != strings.TrimRight(issuer, "/"):
			return nil, fmt.Errorf("the metadata at %s names the issuer %q, not %q (RFC 8414 §3.3)", m.String(), asm.Issuer, issuer)
		case !secrets.CredentialURL(asm.TokenEndpoint):
			return nil, fmt.Errorf("its token endpoint %q is neither https nor a loopback address", asm.TokenEndpoint)
		}
		return asm, nil
	}
	return nil, nil
}

// jwtBearerToken asks the token endpoint for an access token for the
// assertion, authenticating the client as the server says it takes.
func jwtBearerToken(ctx context.Context, hc *http.Client, asm *oauthex.AuthServerMeta, clientID, secret, assertion string, scopes []string, resource string) (*oauth2.Token, error) {
	style := oauth2.AuthStyleInParams // a public client: its ID in the body
	if methods := asm.TokenEndpointAuthMethodsSupported; secret != "" && (len(methods) == 0 || slices.Contains(methods, "client_secret_basic")) {
		style = oauth2.AuthStyleInHeader // RFC 8414's default, and the one every server must take
	}
	cfg := &oauth2.Config{ClientID: clientID, ClientSecret: secret, Endpoint: oauth2.Endpoint{TokenURL: asm.TokenEndpoint, AuthStyle: style}}
	opts := []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("grant_type", grantJWTBearer), oauth2.SetAuthURLParam("assertion", assertion)}
	if len(scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, " ")))
	}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	t, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), "", opts...)
	if err != nil {
		return nil, grantError(err)
	}
	secrets.Known(t.AccessToken, t.RefreshToken)
	return t, nil
}

// grantError says what the authorization server answered, in one line.
func grantError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode == "" {
		// A server that answers JSON without saying so (RFC 6749 §5.2
		// says it is JSON either way).
		var body struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if json.Unmarshal(re.Body, &body) == nil {
			re.ErrorCode, re.ErrorDescription = body.Error, body.Description
		}
	}
	if re != nil && re.ErrorCode != "" {
		if re.ErrorDescription != "" {
			return fmt.Errorf("%s: %s", re.ErrorCode, re.ErrorDescription)
		}
		return errors.New(re.ErrorCode)
	}
	return err
}

// identityGrant is the enterprise flow's assertion: your ID token
// exchanged at your identity provider for an ID-JAG naming this server's
// authorization server (audience) and resource.
func (g *grantAuth) identityGrant(ctx context.Context, audience, resource string, scopes []string) (string, error) {
	e := g.a.oauth.Enterprise
	idToken, err := g.a.idToken(ctx)
	if err != nil {
		return "", err
	}
	g.a.fence.Credential(idToken) // to your identity provider only
	idp, err := grantServerMeta(ctx, e.IdPIssuer, g.a.hc)
	if err != nil || idp == nil {
		return "", fmt.Errorf("your identity provider %s publishes no usable metadata: %v", e.IdPIssuer, err)
	}
	creds := &oauthex.ClientCredentials{ClientID: e.IdPClientID}
	if e.IdPClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: e.IdPClientSecret}
	}
	if resource == "" {
		resource = g.a.url
	}
	jag, err := oauthex.ExchangeToken(ctx, idp.TokenEndpoint, &oauthex.TokenExchangeRequest{RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience: audience, Resource: resource, Scope: scopes, SubjectToken: idToken, SubjectTokenType: oauthex.TokenTypeIDToken}, creds, g.a.hc)
	if err != nil {
		return "", fmt.Errorf("your identity provider refused the token exchange: %v", grantError(err))
	}
	secrets.Known(jag.AccessToken)
	return jag.AccessToken, nil
}

// workloadJWT reads the workload's JWT: the file, read again each time,
// or what the command prints.
func workloadJWT(ctx context.Context, o config.MCPOAuth) (string, error) {
	if o.WorkloadToken != "" {
		home, _ := os.UserHomeDir()
		f, err := os.Open(datadir.ExpandHome(o.WorkloadToken, home))
		if err != nil {
			return "", fmt.Errorf("the workload token: %v", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, 64<<10))
		t := strings.TrimSpace(string(b))
		if err != nil || t == "" {
			return "", fmt.Errorf("the workload token %s is empty", o.WorkloadToken)
		}
		secrets.Known(t)
		return t, nil
	}
	return credentialCommand(ctx, "workload_token_command", o.WorkloadTokenCommand)
}

// credentialCommand runs a command of your own config that prints a
// token (as Git's credential helpers and gcloud's print-identity-token
// do): your program, with your environment, outside the sandbox, for 30
// seconds at most; its first line is the token.
func credentialCommand(ctx context.Context, setting string, argv config.HookArgv) (string, error) {
	if len(argv) == 0 {
		return "", fmt.Errorf("%s is empty", setting)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, errb := &capped{limit: 64 << 10}, &capped{limit: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	t := strings.TrimSpace(termtext.FirstLine(string(out.buf)))
	if err != nil || t == "" {
		why := termtext.FirstLine(string(errb.buf))
		if why == "" && err != nil {
			why = err.Error()
		}
		if why == "" {
			why = "it printed nothing"
		}
		return "", errors.New(secrets.Redact(fmt.Sprintf("%s (%s) failed: %s", setting, termtext.QuoteArgv(argv), why)))
	}
	secrets.Known(t)
	return t, nil
}

// grant authorizes a server by a JWT-bearer grant. The enterprise flow's
// login at the identity provider is a person's: only where a login may
// happen (the REPL, harvey mcp login), with a person's time.
func (a *Handler) grant(ctx context.Context, req *http.Request, resp *http.Response) error {
	if a.grantErr != nil { // the SDK's second try (initialize after its probe): the same answer
		resp.Body.Close()
		return a.grantErr
	}
	person := a.oauth.Enterprise != nil && len(a.oauth.Enterprise.IDTokenCommand) == 0
	if person {
		if !a.loginOK() {
			resp.Body.Close()
			return NeedsLogin{Name: a.name, Scope: resp.StatusCode == http.StatusForbidden}
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Minute)
		defer cancel()
		ctx = lctx
	}
	g := &grantAuth{a: a}
	if err := g.Authorize(ctx, req, resp); err != nil {
		a.grantErr = err
		return err
	}
	a.inner = g
	if person {
		// A person logged in: the token is kept, as a login's is, and used
		// while it lasts (it has no refresh token: the next one needs the
		// identity provider again).
		a.loggedIn.Store(true)
		t, _ := g.ts.Token()
		rec := &oauthRecord{URL: a.url, ClientID: a.oauth.ClientID, Token: t}
		where := " for this session (the token could not be kept)"
		if rec.save(a.name) == nil {
			where = fmt.Sprintf("; the token is kept in %s while it lasts (harvey mcp logout %s forgets it)", filepath.Dir(oauthPath(a.name, a.url)), a.name)
		}
		a.ui.Say(termtext.Done, fmt.Sprintf("logged in to MCP server %s through %s%s", a.name, a.oauth.Enterprise.IdPIssuer, where))
	}
	return nil
}

// idToken is your ID token at the enterprise identity provider: what
// id_token_command prints, else an OpenID Connect login there (PKCE, the
// SDK's extauth.PerformOIDCLogin) with its redirect caught as a server's
// login's is.
func (a *Handler) idToken(ctx context.Context) (string, error) {
	e := a.oauth.Enterprise
	if len(e.IDTokenCommand) > 0 {
		return credentialCommand(ctx, "id_token_command", e.IDTokenCommand)
	}
	port, redirect, err := a.loopback()
	if err != nil {
		return "", err
	}
	creds := &oauthex.ClientCredentials{ClientID: e.IdPClientID}
	if e.IdPClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: e.IdPClientSecret}
	}
	t, err := extauth.PerformOIDCLogin(ctx, &extauth.OIDCLoginConfig{IssuerURL: e.IdPIssuer, Credentials: creds, RedirectURL: redirect,
		Scopes: []string{"openid"}, HTTPClient: a.hc}, a.fetcher(port))
	if err != nil {
		return "", fmt.Errorf("the login at your identity provider: %v", err)
	}
	id, _ := t.Extra("id_token").(string)
	if id == "" {
		return "", errors.New("your identity provider's login gave no ID token")
	}
	secrets.Known(id, t.AccessToken, t.RefreshToken)
	return id, nil
}

// capped keeps the first limit bytes a program writes and drops the rest.
type capped struct {
	buf   []byte
	limit int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
