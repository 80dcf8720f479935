package mcpauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/netfence"
)

// DPoP (RFC 9449), the MCP authorization extension SEP-1932: where an
// authorization server says it takes DPoP (dpop_signing_alg_values_supported
// with ES256 in its metadata), the server has a key of its own (P-256, made
// for the login and kept with the token it binds, 0600 in the token store),
// every token request carries a proof signed with
// it, and a token the server issues as DPoP-bound is presented with the DPoP
// scheme and a fresh proof on each request (its ath the token's hash). A
// use_dpop_nonce answer, from the token endpoint or the MCP server, is
// retried once with the nonce it gives. Where the authorization server does
// not say it takes DPoP, nothing changes: no proof is sent.
//
// The SDK's transport writes "Bearer" for every token; the resource side's
// round tripper (ResourceTransport) rewrites it for the tokens the token
// endpoint issued as DPoP-bound, which the authorization side's round
// tripper saw go by.

type dpop struct {
	key *ecdsa.PrivateKey
	jwk map[string]string

	mu      sync.Mutex
	enabled bool              // the authorization server takes ES256 proofs
	nonces  map[string]string // origin → the latest DPoP-Nonce it gave
	bound   map[string]bool   // access tokens issued as DPoP-bound
}

func newDPoP() *dpop {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil
	}
	return dpopWith(key)
}

// dpopFromKey is the DPoP state of a key kept with a token (nil: it
// cannot be read).
func dpopFromKey(s string) *dpop {
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if key, ok := k.(*ecdsa.PrivateKey); err == nil && ok && key.Curve == elliptic.P256() {
		return dpopWith(key)
	}
	return nil
}

// export is the key, to be kept with the token bound to it.
func (d *dpop) export() string {
	der, err := x509.MarshalPKCS8PrivateKey(d.key)
	if err != nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(der)
}

func dpopWith(key *ecdsa.PrivateKey) *dpop {
	b64 := base64.RawURLEncoding.EncodeToString
	pad := func(b []byte) []byte { return append(make([]byte, 32-len(b)), b...) }
	pub, _ := key.PublicKey.ECDH() // the point, uncompressed: 0x04 || x || y
	raw := pub.Bytes()
	return &dpop{key: key, jwk: map[string]string{"kty": "EC", "crv": "P-256", "x": b64(pad(raw[1:33])), "y": b64(pad(raw[33:]))},
		nonces: map[string]string{}, bound: map[string]bool{}}
}

// proof is a DPoP proof JWT for a request (RFC 9449 §4.2): htu without its
// query and fragment, ath when a token is presented.
func (d *dpop) proof(method string, target *url.URL, token string) (string, error) {
	htu := *target
	htu.RawQuery, htu.Fragment, htu.RawFragment = "", "", ""
	u, nonce := htu.String(), d.nonce(target)
	jti := make([]byte, 16)
	rand.Read(jti)
	b64 := base64.RawURLEncoding.EncodeToString
	claims := map[string]any{"jti": b64(jti), "htm": method, "htu": u, "iat": time.Now().Unix()}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if token != "" {
		h := sha256.Sum256([]byte(token))
		claims["ath"] = b64(h[:])
	}
	head, err := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": d.jwk})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signing := b64(head) + "." + b64(body)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, d.key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + b64(sig), nil
}

func (d *dpop) nonce(target *url.URL) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nonces[netfence.Origin(target)]
}

// heard keeps the nonce a response gives, and reports whether it asks for
// one (use_dpop_nonce): then the request is sent again with it.
func (d *dpop) heard(req *http.Request, resp *http.Response, body []byte) bool {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" {
		return false
	}
	d.mu.Lock()
	d.nonces[netfence.Origin(req.URL)] = n
	d.mu.Unlock()
	asks := strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), " "), "use_dpop_nonce") ||
		resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte("use_dpop_nonce"))
	return asks && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized)
}

func (d *dpop) on() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enabled
}

// authTransport is the round tripper of the requests to the authorization
// server: it reads the metadata (whether DPoP is taken), proves each token
// request, and notes the tokens issued as DPoP-bound.
type authTransport struct {
	d    *dpop
	base http.RoundTripper
}

func (t authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	token := req.Method == http.MethodPost && t.d.on() && strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded")
	if !token {
		resp, err := t.base.RoundTrip(req)
		if err == nil && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/.well-known/") {
			t.sniffMetadata(resp)
		}
		return resp, err
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	var resp *http.Response
	for try := 0; try < 2; try++ {
		r := req.Clone(req.Context())
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		p, err := t.d.proof(req.Method, req.URL, "")
		if err != nil {
			return nil, err
		}
		r.Header.Set("DPoP", p)
		if resp, err = t.base.RoundTrip(r); err != nil {
			return nil, err
		}
		rb, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(rb))
		if try == 0 && t.d.heard(r, resp, rb) {
			continue
		}
		var tok struct {
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
		}
		if json.Unmarshal(rb, &tok) == nil && strings.EqualFold(tok.TokenType, "DPoP") && tok.AccessToken != "" {
			t.d.mu.Lock()
			t.d.bound[tok.AccessToken] = true
			t.d.mu.Unlock()
		}
		break
	}
	return resp, nil
}

// sniffMetadata turns DPoP on when authorization-server metadata says it
// takes ES256 proofs.
func (t authTransport) sniffMetadata(resp *http.Response) {
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	if err != nil {
		return
	}
	var m struct {
		Algs []string `json:"dpop_signing_alg_values_supported"`
	}
	if json.Unmarshal(rb, &m) == nil && slices.Contains(m.Algs, "ES256") {
		t.d.mu.Lock()
		t.d.enabled = true
		t.d.mu.Unlock()
	}
}

// resourceTransport presents DPoP-bound tokens to the MCP server with the
// DPoP scheme and a fresh proof, retrying once on use_dpop_nonce.
type resourceTransport struct {
	d    *dpop
	base http.RoundTripper
}

func (t resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	scheme, token, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	t.d.mu.Lock()
	bound := strings.EqualFold(scheme, "Bearer") && t.d.bound[token]
	t.d.mu.Unlock()
	if !bound {
		return t.base.RoundTrip(req)
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	var resp *http.Response
	for try := 0; try < 2; try++ {
		r := req.Clone(req.Context())
		if body != nil {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		p, err := t.d.proof(req.Method, req.URL, token)
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "DPoP "+token)
		r.Header.Set("DPoP", p)
		if resp, err = t.base.RoundTrip(r); err != nil {
			return nil, err
		}
		if try == 0 && resp.StatusCode == http.StatusUnauthorized && t.d.heard(r, resp, nil) {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			continue
		}
		break
	}
	return resp, nil
}

// readBody reads a request's body so that it can be sent again (nil: none).
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("DPoP: reading the request: %w", err)
	}
	return b, nil
}
