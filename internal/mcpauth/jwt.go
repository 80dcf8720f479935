package mcpauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/netfence"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// private_key_jwt (RFC 7523 §2.2; MCP's client credentials extension,
// SEP-1046): a machine-to-machine server whose authorization server
// authenticates the client by an assertion it signs, not a secret. The key
// is a PEM file named in your own config (oauth.private_key; a
// workspace's MCP file cannot name one: it would make Harvey prove your
// identity to a server the repository picked). The SDK's client
// credentials handler takes a secret only, so this is its discovery — the
// protected resource's metadata from WWW-Authenticate or the well-known
// paths, the authorization server's metadata, the scopes the server
// names — with a fresh assertion signed for each token request (iss and
// sub the client ID, aud the issuer and the token endpoint, five minutes,
// a random jti) and the resource parameter (RFC 8707).

// jwtClientAuth is the auth.OAuthHandler of a server using private_key_jwt.
type jwtClientAuth struct {
	name, clientID string
	key            crypto.Signer
	alg            string
	hc             *http.Client
	fence          *netfence.Fence // each assertion is registered: it goes to the pinned server only
	issuer         string          // the pinned authorization server (Handler.checkPin)
	ts             oauth2.TokenSource
}

func newJWTClientAuth(name, clientID, keyFile string, hc *http.Client, fence *netfence.Fence) (*jwtClientAuth, error) {
	if clientID == "" {
		return nil, fmt.Errorf("MCP server %s: private_key needs a client_id", name)
	}
	key, alg, err := readSigningKey(keyFile)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: the private key %s: %v", name, keyFile, err)
	}
	return &jwtClientAuth{name: name, clientID: clientID, key: key, alg: alg, hc: hc, fence: fence}, nil
}

func (h *jwtClientAuth) TokenSource(context.Context) (oauth2.TokenSource, error) { return h.ts, nil }

func (h *jwtClientAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, prm, err := protectedResource(ctx, req, resp, h.hc)
	if err != nil {
		return fmt.Errorf("MCP server %s: %v", h.name, err)
	}
	issuer := h.issuer
	if issuer == "" {
		issuer = prm.AuthorizationServers[0]
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, h.hc)
	if err != nil {
		return fmt.Errorf("MCP server %s: its authorization server: %v", h.name, err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: strings.TrimRight(issuer, "/") + "/token"}
	}
	if m := asm.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "private_key_jwt") {
		return fmt.Errorf("MCP server %s: its authorization server does not take private_key_jwt (it takes %s)", h.name, strings.Join(m, ", "))
	}
	if algs := asm.TokenEndpointAuthSigningAlgValuesSupported; len(algs) > 0 && !slices.Contains(algs, h.alg) {
		return fmt.Errorf("MCP server %s: the key signs %s, and its authorization server takes %s", h.name, h.alg, strings.Join(algs, ", "))
	}
	scopes := challengeScopes(challenges)
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	aud := []string{asm.Issuer}
	if asm.TokenEndpoint != asm.Issuer {
		aud = append(aud, asm.TokenEndpoint)
	}
	src := &assertionSource{ctx: context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, h.hc), h: h, aud: aud,
		cfg:      clientcredentials.Config{ClientID: h.clientID, TokenURL: asm.TokenEndpoint, Scopes: scopes, AuthStyle: oauth2.AuthStyleInParams},
		resource: prm.Resource}
	ts := oauth2.ReuseTokenSource(nil, src)
	if _, err := ts.Token(); err != nil {
		return fmt.Errorf("MCP server %s: client credentials (private_key_jwt): %v", h.name, err)
	}
	h.ts = ts
	return nil
}

// protectedResource reads a 401's challenges and the metadata of the
// resource that answered it (the response's body is closed).
func protectedResource(ctx context.Context, req *http.Request, resp *http.Response, hc *http.Client) ([]oauthex.Challenge, *oauthex.ProtectedResourceMetadata, error) {
	resp.Body.Close()
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, nil, fmt.Errorf("its WWW-Authenticate: %v", err)
	}
	prm, err := resourceMetadata(ctx, challenges, req.URL.String(), hc)
	return challenges, prm, err
}

// resourceMetadata finds the protected resource's metadata: where
// WWW-Authenticate says, else at the well-known path of the server's
// endpoint, else at its root.
func resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, server string, hc *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, err
	}
	type try struct{ meta, resource string }
	var tries []try
	for _, c := range challenges {
		if m := c.Params["resource_metadata"]; m != "" {
			tries = append(tries, try{m, server})
			break
		}
	}
	at, root := *u, *u
	at.Path, at.RawQuery = "/.well-known/oauth-protected-resource/"+strings.TrimLeft(u.Path, "/"), ""
	root.Path, root.RawQuery = "/.well-known/oauth-protected-resource", ""
	base := *u
	base.Path, base.RawQuery = "", ""
	tries = append(tries, try{at.String(), server}, try{root.String(), base.String()})
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.meta, t.resource, hc)
		if err == nil && prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm, nil
		}
	}
	return nil, errors.New("no protected resource metadata names its authorization server")
}

func challengeScopes(cs []oauthex.Challenge) []string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

// assertionSource asks the token endpoint for a token with a new signed
// assertion each time.
type assertionSource struct {
	ctx      context.Context
	h        *jwtClientAuth
	cfg      clientcredentials.Config
	aud      []string
	resource string
}

func (s *assertionSource) Token() (*oauth2.Token, error) {
	jwt, err := s.h.assertion(s.aud, time.Now())
	if err != nil {
		return nil, err
	}
	s.h.fence.Credential(jwt)
	cfg := s.cfg
	cfg.EndpointParams = url.Values{"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {jwt}}
	if s.resource != "" {
		cfg.EndpointParams.Set("resource", s.resource)
	}
	t, err := cfg.Token(s.ctx)
	if err == nil {
		secrets.Known(t.AccessToken, t.RefreshToken)
	}
	return t, err
}

// assertion is a client assertion JWT signed with the key.
func (h *jwtClientAuth) assertion(aud []string, now time.Time) (string, error) {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": h.alg, "typ": "JWT"})
	var audience any = aud
	if len(aud) == 1 {
		audience = aud[0]
	}
	claims, _ := json.Marshal(map[string]any{"iss": h.clientID, "sub": h.clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": rand.Text()})
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sig, err := signJWS(h.key, h.alg, []byte(signing))
	if err != nil {
		return "", err
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// readSigningKey reads a PEM private key (PKCS #8, SEC 1 or PKCS #1) and
// the JWS algorithm it signs with: ES256/384/512 by its curve, RS256,
// EdDSA.
func readSigningKey(file string) (crypto.Signer, string, error) {
	home, _ := os.UserHomeDir()
	b, err := os.ReadFile(datadir.ExpandHome(file, home))
	if err != nil {
		return nil, "", err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, "", errors.New("no PEM block")
	}
	var key any
	if key, err = x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if key, err = x509.ParseECPrivateKey(block.Bytes); err != nil {
			if key, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
				return nil, "", errors.New("not a PKCS #8, EC or RSA private key")
			}
		}
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		alg := map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[k.Curve.Params().BitSize]
		if alg == "" {
			return nil, "", fmt.Errorf("the curve %s has no JWS algorithm", k.Curve.Params().Name)
		}
		return k, alg, nil
	case *rsa.PrivateKey:
		return k, "RS256", nil
	case ed25519.PrivateKey:
		return k, "EdDSA", nil
	}
	return nil, "", fmt.Errorf("a %T key cannot sign an assertion", key)
}

// signJWS signs a JWS signing input: ECDSA as r||s of the curve's size
// (RFC 7518 §3.4), RSA PKCS #1 v1.5 with SHA-256, Ed25519 as it is.
func signJWS(key crypto.Signer, alg string, input []byte) ([]byte, error) {
	switch k := key.(type) {
	case ed25519.PrivateKey:
		return ed25519.Sign(k, input), nil
	case *rsa.PrivateKey:
		d := sha256.Sum256(input)
		return rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:])
	case *ecdsa.PrivateKey:
		var hf hash.Hash = sha256.New()
		switch alg {
		case "ES384":
			hf = sha512.New384()
		case "ES512":
			hf = sha512.New()
		}
		hf.Write(input)
		r, s, err := ecdsa.Sign(rand.Reader, k, hf.Sum(nil))
		if err != nil {
			return nil, err
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out, nil
	}
	return nil, fmt.Errorf("cannot sign %s", alg)
}
