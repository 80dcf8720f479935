// Package netfence is the one careful HTTP client for everything MCP and
// OAuth: every request Harvey makes to an HTTP MCP server, its
// authorization servers and an identity provider goes through a Fence.
//
// Contract:
//
//   - Addresses. Only the hosts the user's own config names (Name: the
//     server's URL, a pinned issuer, an identity provider) may be local —
//     loopback, private, link-local, shared (CGNAT) or unique-local. A URL a
//     server chose (its metadata, a WWW-Authenticate challenge, a redirect)
//     may name only public addresses: each is resolved, checked and dialled
//     by the address checked, so a name that resolves again differently
//     (DNS rebinding) gains nothing. A proxy from the environment is the
//     user's, and may be local; what it is asked to reach is checked the
//     same way.
//   - Redirects. Client follows a redirect only to the same origin
//     (scheme, host and port); AuthClient follows none for a POST (a token
//     or registration request keeps its body to itself) and only
//     same-origin ones for a GET. So a configured header or a bearer token
//     reaches only the origin it was given for.
//   - Credentials. A value registered with Credential (a client secret, a
//     workload or ID token, a signed client assertion) leaves only for an
//     origin the user pinned (Pin: an issuer, an authorization server's
//     metadata URL, an identity provider), or an endpoint that a pinned
//     server's own metadata names; a request carrying one elsewhere — in a
//     header, Basic authorization, the URL or the body — is refused before
//     it is sent.
//   - Error bodies. AuthClient reduces the body of every error response to
//     at most {"error": CODE} (an OAuth error code, checked), so nothing a
//     server wrote reaches an error message, a server's state or the model.
package netfence

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// Fence is one server's careful client state: what the user named, what
// the user pinned, and the credentials that may go only there.
type Fence struct {
	mu      sync.Mutex
	named   map[string]bool // host:port the user's config names
	pinned  map[string]bool // origins credentials may go to
	pinMeta map[string]bool // origins whose metadata may name more (the pins themselves)
	creds   []string
	local   func(netip.Addr) bool // Local; replaced in tests
}

// New is a fence whose named hosts are those of urls (the user's own).
func New(urls ...string) *Fence {
	f := &Fence{named: map[string]bool{}, pinned: map[string]bool{}, pinMeta: map[string]bool{}, local: Local}
	for _, u := range urls {
		f.Name(u)
	}
	return f
}

// Name adds the host of a URL from the user's own config: it may be local.
func (f *Fence) Name(raw string) {
	if hp, ok := hostPort(raw); ok {
		f.mu.Lock()
		f.named[hp] = true
		f.mu.Unlock()
	}
}

// Pin adds a URL from the user's own config that credentials may go to (an
// issuer, a metadata URL, an identity provider); it is named too, and the
// endpoints its metadata names become pinned.
func (f *Fence) Pin(raw string) {
	if raw == "" {
		return
	}
	f.Name(raw)
	if o, ok := origin(raw); ok {
		f.mu.Lock()
		f.pinned[o], f.pinMeta[o] = true, true
		f.mu.Unlock()
	}
}

// Credential registers values that leave only for pinned origins.
func (f *Fence) Credential(values ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range values {
		if len(v) >= 4 {
			f.creds = append(f.creds, v)
		}
	}
}

// Pinned reports whether the user pinned any origin.
func (f *Fence) Pinned() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pinned) > 0
}

// PinnedOrigin reports whether raw's origin is pinned.
func (f *Fence) PinnedOrigin(raw string) bool {
	o, ok := origin(raw)
	f.mu.Lock()
	defer f.mu.Unlock()
	return ok && f.pinned[o]
}

// Client is the client for a server's MCP traffic: same-origin redirects.
func (f *Fence) Client(next func(http.RoundTripper) http.RoundTripper) *http.Client {
	var rt http.RoundTripper = &fenced{f: f, next: f.transport()}
	if next != nil {
		rt = next(rt)
	}
	return &http.Client{Transport: rt, CheckRedirect: sameOrigin}
}

// AuthClient is the client for OAuth: no redirect for a POST, same-origin
// ones for a GET, error bodies reduced.
func (f *Fence) AuthClient() *http.Client {
	return &http.Client{Transport: &fenced{f: f, next: f.transport(), auth: true}, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if via[0].Method != http.MethodGet && via[0].Method != http.MethodHead {
			return fmt.Errorf("%s redirected a %s request to %s: refused (a token or registration request is never redirected)", originOf(via[0].URL), via[0].Method, originOf(req.URL))
		}
		return sameOrigin(req, via)
	}}
}

// sameOrigin refuses a redirect to another origin, and more than 10.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("more than 10 redirects")
	}
	if originOf(req.URL) != originOf(via[0].URL) {
		return fmt.Errorf("%s redirected to %s: refused (another origin)", originOf(via[0].URL), originOf(req.URL))
	}
	return nil
}

// transport is an http.Transport whose dials pass the address rule.
func (f *Fence) transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = func(req *http.Request) (*url.URL, error) {
		p, err := http.ProxyFromEnvironment(req)
		if p != nil {
			f.Name(p.String()) // the user's proxy
		}
		return p, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		ips, err := f.allowed(ctx, addr)
		if err != nil {
			return nil, err
		}
		if ips == nil {
			return d.DialContext(ctx, network, addr)
		}
		_, port, _ := net.SplitHostPort(addr)
		var last error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
	return t
}

// allowed checks addr (host:port): nil, nil for a named host (dial as
// usual); else the addresses to dial, all public.
func (f *Fence) allowed(ctx context.Context, addr string) ([]netip.Addr, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	named := f.named[strings.ToLower(addr)]
	f.mu.Unlock()
	if named {
		return nil, nil
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if f.local(ip.Unmap()) {
			return nil, &LocalRefusal{Addr: addr}
		}
	}
	return ips, nil
}

// LocalRefusal is a dial to a local address a server chose.
type LocalRefusal struct{ Addr string }

func (e *LocalRefusal) Error() string {
	return fmt.Sprintf("refused: %s is a local address, and only your own config may name one (the server's url, or oauth.issuer)", e.Addr)
}

// CredentialRefusal is a request carrying a credential to an origin the
// user did not pin.
type CredentialRefusal struct{ Origin string }

func (e *CredentialRefusal) Error() string {
	return fmt.Sprintf("refused: a credential from your config would go to %s, which your config does not pin (oauth.issuer or oauth.auth_server_metadata_url)", e.Origin)
}

// Local reports whether ip is not a public address.
func Local(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range special {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// special are the ranges Go's predicates leave out: this network, shared
// address space (CGNAT), IETF protocol assignments, benchmarking, the
// reserved block, NAT64 and 6to4 relays (which embed an IPv4 address).
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48"), netip.MustParsePrefix("2002::/16"),
}

// fenced is the fence's RoundTripper: the credential rule before a
// request, the error-body rule after it (auth).
type fenced struct {
	f    *Fence
	next http.RoundTripper
	auth bool
}

func (t *fenced) RoundTrip(req *http.Request) (*http.Response, error) {
	o := originOf(req.URL)
	if err := t.f.checkCredentials(req, o); err != nil {
		return nil, err
	}
	if req.URL.Scheme == "http" || req.URL.Scheme == "https" {
		// Through a proxy the target is not dialled here: check it.
		if p, _ := http.ProxyFromEnvironment(req); p != nil {
			if _, err := t.f.allowed(req.Context(), hostPortOf(req.URL)); err != nil {
				return nil, err
			}
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || !t.auth {
		return resp, err
	}
	if resp.StatusCode >= 400 {
		reduceErrorBody(resp)
		return resp, nil
	}
	t.f.learn(o, req.URL.Path, resp)
	return resp, nil
}

// checkCredentials refuses a request that carries a credential to an
// origin not pinned.
func (f *Fence) checkCredentials(req *http.Request, o string) error {
	f.mu.Lock()
	creds, ok := f.creds, f.pinned[o]
	f.mu.Unlock()
	if len(creds) == 0 || ok {
		return nil
	}
	hay := unescaped(req.URL.String())
	for _, vs := range req.Header {
		for _, v := range vs {
			hay = append(hay, v)
			if b, ok := strings.CutPrefix(v, "Basic "); ok {
				if d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b)); err == nil {
					hay = append(hay, unescaped(string(d))...)
				}
			}
		}
	}
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body) // whole: what is sent is what was read
		req.Body.Close()
		if err != nil {
			return err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		hay = append(hay, unescaped(string(b))...)
	}
	for _, c := range creds {
		for _, h := range hay {
			if strings.Contains(h, c) || strings.Contains(h, url.QueryEscape(c)) {
				return &CredentialRefusal{Origin: o}
			}
		}
	}
	return nil
}

// unescaped is s as written and as a form or a path decodes it.
func unescaped(s string) []string {
	out := []string{s}
	if u, err := url.QueryUnescape(s); err == nil && u != s {
		out = append(out, u)
	}
	if u, err := url.PathUnescape(s); err == nil && u != s {
		out = append(out, u)
	}
	return out
}

// learn pins the endpoints a pinned server's own metadata names.
func (f *Fence) learn(o, path string, resp *http.Response) {
	f.mu.Lock()
	trusted := f.pinMeta[o]
	f.mu.Unlock()
	if !trusted || !strings.Contains(path, "/.well-known/") || resp.Body == nil {
		return
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return
	}
	var meta map[string]any
	if json.Unmarshal(b, &meta) != nil {
		return
	}
	for _, k := range []string{"token_endpoint", "registration_endpoint", "device_authorization_endpoint", "pushed_authorization_request_endpoint", "revocation_endpoint", "introspection_endpoint"} {
		if s, ok := meta[k].(string); ok {
			if eo, ok := origin(s); ok {
				f.mu.Lock()
				f.pinned[eo] = true
				f.mu.Unlock()
				f.Name(s)
			}
		}
	}
}

// errorCode is what an OAuth error code may be (RFC 6749 §5.2's
// characters, short).
var errorCode = lazyre.New(`^[A-Za-z0-9_.:-]{1,64}$`)

// reduceErrorBody replaces an error response's body with at most its
// OAuth error code.
func reduceErrorBody(resp *http.Response) {
	var body struct {
		Error string `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	out := []byte("{}")
	if json.Unmarshal(b, &body) == nil && errorCode().MatchString(body.Error) {
		out, _ = json.Marshal(map[string]string{"error": body.Error})
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Del("Content-Length")
	resp.Header.Set("Content-Type", "application/json")
}

// SameOrigin reports whether two URLs have one scheme, host and port.
func SameOrigin(a, b string) bool {
	oa, ok1 := origin(a)
	ob, ok2 := origin(b)
	return ok1 && ok2 && oa == ob
}

// origin is scheme://host:port of a URL (the port made explicit).
func origin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	return originOf(u), true
}

// Origin is u's scheme://host:port, the port made explicit: what a
// browser, and RFC 6454, call its origin.
func Origin(u *url.URL) string { return originOf(u) }

func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + hostPortOf(u)
}

// hostPortOf is host:port of u, lower-cased, with the scheme's port.
func hostPortOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

func hostPort(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	return hostPortOf(u), true
}
