package mcpauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// A redirect pasted back (a Pi over SSH) is taken only from the login's
// own listener address, and says what the server refused.
func TestPastedRedirect(t *testing.T) {
	r, err := pastedRedirect(" http://127.0.0.1:4242/callback?code=abc&state=s1&iss=https%3A%2F%2Fas.example \n", 4242)
	if err != nil || r.Code != "abc" || r.State != "s1" || r.Iss != "https://as.example" {
		t.Fatalf("%+v %v", r, err)
	}
	for in, want := range map[string]string{
		"http://127.0.0.1:4243/callback?code=abc":            "not the address",
		"http://evil.example:4242/callback?code=abc":         "not the address",
		"http://127.0.0.1:4242/callback?error=access_denied": "refused the login: access_denied",
		"http://127.0.0.1:4242/callback?state=s1":            "no code",
		"http://127.0.0.1:4242/elsewhere?code=abc":           "not the address",
	} {
		if _, err := pastedRedirect(in, 4242); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// private_key_jwt's keys in the formats people have, each signing with
// the algorithm its kind takes; the signature verifies.
func TestSigningKeys(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p8 := func(k any) *pem.Block {
		b, _ := x509.MarshalPKCS8PrivateKey(k)
		return &pem.Block{Type: "PRIVATE KEY", Bytes: b}
	}
	sec1, _ := x509.MarshalECPrivateKey(ec)
	dir := t.TempDir()
	for _, c := range []struct {
		block *pem.Block
		alg   string
	}{
		{p8(ec), "ES256"}, {&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}, "ES256"},
		{&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}, "RS256"}, {p8(ed), "EdDSA"},
	} {
		f := filepath.Join(dir, c.alg+c.block.Type)
		os.WriteFile(f, pem.EncodeToMemory(c.block), 0o600)
		key, alg, err := readSigningKey(f)
		if err != nil || alg != c.alg {
			t.Errorf("%s %s: %s %v", c.block.Type, c.alg, alg, err)
			continue
		}
		sig, err := signJWS(key, alg, []byte("header.payload"))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256([]byte("header.payload"))
		ok := false
		switch k := key.Public().(type) {
		case *ecdsa.PublicKey:
			ok = len(sig) == 64 && ecdsa.Verify(k, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
		case *rsa.PublicKey:
			ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, h[:], sig) == nil
		case ed25519.PublicKey:
			ok = ed25519.Verify(k, []byte("header.payload"), sig)
		}
		if !ok {
			t.Errorf("%s: the signature does not verify", alg)
		}
	}
	os.WriteFile(filepath.Join(dir, "junk"), []byte("not a key"), 0o600)
	if _, _, err := readSigningKey(filepath.Join(dir, "junk")); err == nil {
		t.Error("junk read as a key")
	}
}

// quietUI says nothing and is never answered (as a person who has not
// typed yet).
type quietUI struct {
	mu   sync.Mutex
	said []string
}

func (u *quietUI) Say(_ termtext.Tone, line string) {
	u.mu.Lock()
	u.said = append(u.said, line)
	u.mu.Unlock()
}
func (u *quietUI) Ask(string) (string, error) { select {} }

// The login's callback takes only the redirect that carries its login's
// state (issue 60): another process that reaches the port first is
// refused and said, and the login goes on to take the real one.
func TestLoginCallbackTakesOnlyItsState(t *testing.T) {
	t.Setenv("HARVEY_NO_BROWSER", "1")
	ui := &quietUI{}
	a := &Handler{name: "s", ui: ui, Standalone: true}
	port, _, err := a.loopback()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *auth.AuthorizationResult, 1)
	go func() {
		r, _ := a.fetcher(port)(context.Background(), &auth.AuthorizationArgs{URL: "https://as.example/authorize?client_id=c&state=the-state&code_challenge=x"})
		got <- r
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d/callback", port)
	var resp *http.Response
	for i := 0; i < 100; i++ { // until the listener is up
		if resp, err = http.Get(base + "?code=planted&state=guessed"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a redirect without the login's state: %v %v", resp, err)
	}
	if resp, err := http.Get(base + "?code=real&state=the-state"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the login's own redirect: %v %v", resp, err)
	}
	select {
	case r := <-got:
		if r == nil || r.Code != "real" {
			t.Fatalf("the login took %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the login never took its redirect")
	}
	ui.mu.Lock()
	defer ui.mu.Unlock()
	if !strings.Contains(strings.Join(ui.said, "\n"), "something other than this login's redirect reached its callback") {
		t.Errorf("the knock was not said: %q", ui.said)
	}
}
