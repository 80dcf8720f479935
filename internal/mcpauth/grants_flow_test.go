package mcpauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/netfence"
)

// keyFile writes a private key as PEM the way the tools people use do
// (PKCS #8, SEC 1, PKCS #1) and returns its file and public key.
func keyFile(t *testing.T, kind string) (string, crypto.PublicKey) {
	t.Helper()
	var der []byte
	var pub crypto.PublicKey
	typ := "PRIVATE KEY"
	switch kind {
	case "ec":
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, _ = x509.MarshalECPrivateKey(k)
		pub, typ = &k.PublicKey, "EC PRIVATE KEY"
	case "rsa":
		k, _ := rsa.GenerateKey(rand.Reader, 2048)
		der, pub, typ = x509.MarshalPKCS1PrivateKey(k), &k.PublicKey, "RSA PRIVATE KEY"
	case "ed25519":
		p, k, _ := ed25519.GenerateKey(rand.Reader)
		der, _ = x509.MarshalPKCS8PrivateKey(k)
		pub = p
	}
	f := filepath.Join(t.TempDir(), kind+".pem")
	os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
	return f, pub
}

// private_key_jwt: the client proves itself by an assertion it signs with
// your key (ES256, RS256, EdDSA by the key), for the pinned authorization
// server, with the resource named; a server that does not take
// private_key_jwt, a key that is not one, and a signature the server does
// not know are each said, and nothing connects.
func TestPrivateKeyJWT(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	g := newGuarded(t)
	g.methods = []string{"private_key_jwt"}
	connect := func(key string) (string, error) {
		cfg := config.MCPServer{URL: g.URL + "/mcp", OAuth: &config.MCPOAuth{ClientCredentials: true, ClientID: "signer", PrivateKey: key, Issuer: g.URL}}
		fence := netfence.New(cfg.URL)
		return call(t, g, New("k", cfg, &browserUI{}, func() bool { return false }, fence), fence)
	}
	for _, kind := range []string{"ec", "rsa", "ed25519"} {
		f, pub := keyFile(t, kind)
		g.mu.Lock()
		g.keys = []crypto.PublicKey{pub}
		g.mu.Unlock()
		if out, err := connect(f); err != nil || out != "you are logged in" {
			t.Errorf("%s key: %q %v", kind, out, err)
		}
	}
	other, _ := keyFile(t, "ec")
	if _, err := connect(other); err == nil {
		t.Error("an assertion signed by a key the server does not know connected")
	}
	notAKey := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(notAKey, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
	if _, err := connect(notAKey); err == nil || !strings.Contains(err.Error(), "not a PKCS #8, EC or RSA private key") {
		t.Errorf("a file that is no key: %v", err)
	}
	g.mu.Lock()
	g.methods = []string{"client_secret_basic"}
	g.mu.Unlock()
	f, _ := keyFile(t, "ec")
	if _, err := connect(f); err == nil || !strings.Contains(err.Error(), "does not take private_key_jwt (it takes client_secret_basic)") {
		t.Errorf("a server that does not take private_key_jwt: %v", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, a := range g.jwts {
		if !strings.HasPrefix(a, "ey") || strings.Count(a, ".") != 2 {
			t.Errorf("not a JWT: %q", a)
		}
	}
}

// A workload's token from a command of your config (gcloud's
// print-identity-token, a CI's OIDC helper): its first line is the token;
// a command that fails is said with its own last words, redacted.
func TestWorkloadTokenCommand(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	g := newGuarded(t)
	connect := func(argv ...string) (string, error) {
		cfg := config.MCPServer{URL: g.URL + "/mcp", OAuth: &config.MCPOAuth{ClientID: "w", WorkloadTokenCommand: argv, Issuer: g.URL}}
		fence := netfence.New(cfg.URL)
		return call(t, g, New("w", cfg, &browserUI{}, func() bool { return false }, fence), fence)
	}
	if out, err := connect("sh", "-c", "echo workload.jwt.value; echo second line"); err != nil || out != "you are logged in" {
		t.Fatalf("%q %v", out, err)
	}
	key := "ghp_" + strings.Repeat("Qw3r", 9)
	_, err := connect("sh", "-c", "echo 'no identity here, token "+key+"' >&2; exit 1")
	if err == nil || !strings.Contains(err.Error(), "workload_token_command (sh -c") || !strings.Contains(err.Error(), "no identity here") || strings.Contains(err.Error(), key) {
		t.Errorf("a failed command: %v", err)
	}
	if _, err := connect("sh", "-c", "true"); err == nil || !strings.Contains(err.Error(), "it printed nothing") {
		t.Errorf("a command that printed nothing: %v", err)
	}
	// The server's code is said; its free text is not (internal/netfence
	// keeps an error's code only: a server's words reach no one).
	if _, err := connect("sh", "-c", "echo stale.jwt"); err == nil || !strings.Contains(err.Error(), "the JWT-bearer grant (workload): invalid_grant") || strings.Contains(err.Error(), "not one of mine") {
		t.Errorf("a grant the server refused: %v", err)
	}
}

// Enterprise-managed authorization (SEP-990): your ID token, from your
// command, is exchanged at your identity provider for an ID-JAG naming the
// MCP server's authorization server and resource, which that server takes
// for an access token; no browser.
func TestEnterpriseIdentityGrant(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("IDP_SECRET", "idp-client-secret-value")
	g := newGuarded(t)
	connect := func(idToken string) (string, error) {
		cfg := config.MCPServer{URL: g.URL + "/mcp", OAuth: &config.MCPOAuth{ClientID: "e", Issuer: g.URL,
			Enterprise: &config.MCPEnterprise{IdPIssuer: g.URL, IdPClientID: "idp-client", IdPClientSecret: "${IDP_SECRET}", IDTokenCommand: config.HookArgv{"echo", idToken}}}}
		fence := netfence.New(cfg.URL)
		return call(t, g, New("e", cfg, &browserUI{}, func() bool { return false }, fence), fence)
	}
	if out, err := connect("id.token.value"); err != nil || out != "you are logged in" {
		t.Fatalf("%q %v (grants %v)", out, err, g.grants)
	}
	if g.grants["urn:ietf:params:oauth:grant-type:token-exchange"] != 1 || g.grants["urn:ietf:params:oauth:grant-type:jwt-bearer"] != 1 {
		t.Errorf("grants %v", g.grants)
	}
	if _, err := connect("someone.else"); err == nil || !strings.Contains(err.Error(), "your identity provider refused the token exchange") {
		t.Errorf("an ID token the provider refuses: %v", err)
	}
}
