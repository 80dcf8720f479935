package mcpauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A JWT-bearer grant's authorization server: its metadata must name the
// issuer asked for (RFC 8414 §3.3) and be fetched over https or from this
// machine; a client whose server lists only client_secret_post sends its
// secret in the body, never in a header.
func TestGrantServerMetadata(t *testing.T) {
	t.Parallel()
	var form, header atomic.Value
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	issuer := srv.URL
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "token_endpoint": srv.URL + "/token", "token_endpoint_auth_methods_supported": []string{"client_secret_post"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		form.Store(r.Form.Encode())
		header.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"tok-123456789","token_type":"Bearer"}`)
	})
	asm, err := grantServerMeta(context.Background(), srv.URL, http.DefaultClient)
	if err != nil || asm == nil {
		t.Fatal(asm, err)
	}
	if _, err := jwtBearerToken(context.Background(), http.DefaultClient, asm, "c", "post-secret-value", "a.b.c", nil, ""); err != nil {
		t.Fatal(err)
	}
	if f, _ := form.Load().(string); !strings.Contains(f, "client_secret=post-secret-value") || header.Load() != "" {
		t.Errorf("client_secret_post: form %s, header %v", f, header.Load())
	}
	issuer = "https://elsewhere.example"
	if _, err := grantServerMeta(context.Background(), srv.URL, http.DefaultClient); err == nil || !strings.Contains(err.Error(), "RFC 8414") {
		t.Errorf("metadata naming another issuer: %v", err)
	}
	if _, err := grantServerMeta(context.Background(), "http://idp.example.com", http.DefaultClient); err == nil {
		t.Error("metadata over plain http to another machine")
	}
}

// The metadata URL your config pins (Claude Code's authServerMetadataUrl)
// is read as it is: its token endpoint must be https or this machine, and
// anything but metadata is refused.
func TestMetadataAtPinnedURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/meta":
			fmt.Fprintf(w, `{"issuer":"https://as.example","token_endpoint":"http://%s/token"}`, r.Host)
		case "/remote":
			io.WriteString(w, `{"issuer":"x","token_endpoint":"http://as.example/token"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	if asm, err := metadataAt(t.Context(), srv.URL+"/meta", srv.Client()); err != nil || !strings.HasSuffix(asm.TokenEndpoint, "/token") {
		t.Fatalf("%v %v", asm, err)
	}
	if _, err := metadataAt(t.Context(), srv.URL+"/remote", srv.Client()); err == nil || !strings.Contains(err.Error(), "neither https") {
		t.Errorf("a plain-http token endpoint elsewhere: %v", err)
	}
	if _, err := metadataAt(t.Context(), srv.URL+"/none", srv.Client()); err == nil || !strings.Contains(err.Error(), "answered 404") {
		t.Errorf("no metadata: %v", err)
	}
}
