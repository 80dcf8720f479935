package mcpauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// verifyProof checks a DPoP proof as a server does (RFC 9449 §4.3): its
// header, its signature by the key it carries, htm, htu, ath and nonce.
func verifyProof(t *testing.T, proof, method, target, token, nonce string) (jti string, err error) {
	t.Helper()
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("not a JWT: %q", proof)
	}
	dec := base64.RawURLEncoding.DecodeString
	hb, _ := dec(parts[0])
	cb, _ := dec(parts[1])
	sig, _ := dec(parts[2])
	var head struct {
		Typ, Alg string
		JWK      map[string]string
	}
	var claims map[string]any
	if json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil {
		return "", fmt.Errorf("undecodable: %s %s", hb, cb)
	}
	if head.Typ != "dpop+jwt" || head.Alg != "ES256" || head.JWK["d"] != "" {
		return "", fmt.Errorf("header %s", hb)
	}
	x, _ := dec(head.JWK["x"])
	y, _ := dec(head.JWK["y"])
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", fmt.Errorf("the signature does not verify")
	}
	if claims["htm"] != method || claims["htu"] != target {
		return "", fmt.Errorf("htm %v htu %v, want %s %s", claims["htm"], claims["htu"], method, target)
	}
	if token != "" {
		h := sha256.Sum256([]byte(token))
		if claims["ath"] != base64.RawURLEncoding.EncodeToString(h[:]) {
			return "", fmt.Errorf("ath %v", claims["ath"])
		}
	}
	if nonce != "" && claims["nonce"] != nonce {
		return "", fmt.Errorf("nonce %v, want %s", claims["nonce"], nonce)
	}
	jti, _ = claims["jti"].(string)
	return jti, nil
}

// DPoP where the authorization server takes it: the token request carries
// a proof (retried once with the nonce the server asks for), the token it
// issues as DPoP-bound goes to the MCP server with the DPoP scheme and a
// fresh proof bound to it, retried with the MCP server's nonce; where the
// server's metadata does not name ES256, no proof is sent at all.
func TestDPoPProofsWhereTheServerTakesThem(t *testing.T) {
	for _, takes := range []bool{true, false} {
		var mu sync.Mutex
		var problems, jtis []string
		bad := func(format string, a ...any) {
			mu.Lock()
			problems = append(problems, fmt.Sprintf(format, a...))
			mu.Unlock()
		}
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/.well-known/oauth-authorization-server":
				m := map[string]any{"issuer": srv.URL, "token_endpoint": srv.URL + "/token"}
				if takes {
					m["dpop_signing_alg_values_supported"] = []string{"ES256"}
				}
				json.NewEncoder(w).Encode(m)
			case "/token":
				p := r.Header.Get("DPoP")
				if !takes {
					if p != "" {
						bad("a proof went to a server that does not take DPoP")
					}
					json.NewEncoder(w).Encode(map[string]any{"access_token": "plain-token", "token_type": "Bearer"})
					return
				}
				if _, err := verifyProof(t, p, "POST", srv.URL+"/token", "", ""); err != nil {
					bad("token request: %v", err)
				}
				if !strings.Contains(p, ".") || !strings.Contains(string(must(base64.RawURLEncoding.DecodeString(strings.Split(p, ".")[1]))), "as-nonce") {
					w.Header().Set("DPoP-Nonce", "as-nonce")
					w.WriteHeader(http.StatusBadRequest)
					io.WriteString(w, `{"error":"use_dpop_nonce"}`)
					return
				}
				body, _ := io.ReadAll(r.Body)
				if v, _ := url.ParseQuery(string(body)); v.Get("grant_type") != "authorization_code" {
					bad("the retried token request lost its body: %q", body)
				}
				json.NewEncoder(w).Encode(map[string]any{"access_token": "bound-token", "token_type": "DPoP"})
			case "/mcp":
				if !takes {
					if r.Header.Get("Authorization") != "Bearer plain-token" || r.Header.Get("DPoP") != "" {
						bad("a plain token was changed: %q %q", r.Header.Get("Authorization"), r.Header.Get("DPoP"))
					}
					return
				}
				if r.Header.Get("Authorization") != "DPoP bound-token" {
					bad("scheme: %q", r.Header.Get("Authorization"))
				}
				p := r.Header.Get("DPoP")
				jti, err := verifyProof(t, p, "POST", srv.URL+"/mcp", "bound-token", "")
				if err != nil {
					bad("MCP request: %v", err)
				}
				mu.Lock()
				jtis = append(jtis, jti)
				mu.Unlock()
				if !strings.Contains(string(must(base64.RawURLEncoding.DecodeString(strings.Split(p, ".")[1]))), "rs-nonce") {
					w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
					w.Header().Set("DPoP-Nonce", "rs-nonce")
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				if b, _ := io.ReadAll(r.Body); string(b) != `{"jsonrpc":"2.0"}` {
					bad("the retried MCP request lost its body: %q", b)
				}
				io.WriteString(w, "ok")
			}
		}))
		d := newDPoP()
		as := &http.Client{Transport: authTransport{d: d, base: http.DefaultTransport}}
		rs := &http.Client{Transport: resourceTransport{d: d, base: http.DefaultTransport}}
		if resp, err := as.Get(srv.URL + "/.well-known/oauth-authorization-server"); err == nil {
			resp.Body.Close()
		}
		resp, err := as.PostForm(srv.URL+"/token?x=1", url.Values{"grant_type": {"authorization_code"}, "code": {"c"}})
		if err != nil {
			t.Fatal(err)
		}
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		json.NewDecoder(resp.Body).Decode(&tok)
		resp.Body.Close()
		for range 2 {
			req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0"}`))
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			resp, err := rs.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 {
				t.Errorf("takes %v: the MCP request ended %d", takes, resp.StatusCode)
			}
			resp.Body.Close()
		}
		srv.Close()
		if len(problems) > 0 {
			t.Errorf("takes %v: %s", takes, strings.Join(problems, "; "))
		}
		if takes && (len(jtis) != 3 || jtis[0] == jtis[1] || jtis[1] == jtis[2]) {
			t.Errorf("proofs are not fresh: %v", jtis)
		}
	}
}

func must[T any](v T, _ error) T { return v }

// The key kept with a DPoP-bound token is the same key the next session
// proves with.
func TestDPoPKeyKeptWithTheToken(t *testing.T) {
	d := newDPoP()
	back := dpopFromKey(d.export())
	if back == nil || back.jwk["x"] != d.jwk["x"] || back.jwk["y"] != d.jwk["y"] {
		t.Fatal("the kept key is another")
	}
	if dpopFromKey("not a key") != nil {
		t.Error("a broken key was taken")
	}
}
