package harvey

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// Package registries, and nothing else, on the network. A sandboxed
// command has no network of its own (a network namespace with only
// loopback, where the launcher forwards one port to this proxy); the
// proxy lets through CONNECT tunnels and plain HTTP requests to the hosts
// on its allowlist — the public registries of Go modules and their
// checksum database, npm, PyPI, crates.io and Maven Central, plus the
// hosts in the user's own config (sandbox.hosts; a workspace config cannot
// add one) — and refuses every other host with a 403 that names the host
// and the setting. The refusals of a command are named in one line after
// it. The proxy listens on a unix socket in a directory of Harvey's.

// defaultRegistryHosts are reachable without any setting.
var defaultRegistryHosts = []string{
	"proxy.golang.org", "sum.golang.org", "storage.googleapis.com", // Go modules (the proxy redirects zips to storage)
	"registry.npmjs.org", "registry.yarnpkg.com", // npm, yarn
	"pypi.org", "files.pythonhosted.org", // pip, uv
	"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org", // cargo, rustup
	"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org", // Maven, Gradle
}

type registryProxy struct {
	sock    string // the unix socket
	mu      sync.Mutex
	allowed []string // hosts (host or host:port), "*.suffix" patterns (under mu)
	refused []string // hosts refused, in order, for the commands to report (under mu)
}

var (
	proxyOnce sync.Once
	theProxy  *registryProxy
)

// sessionProxy starts the session's proxy on first use (nil if it cannot)
// and sets its allowlist: the public registries and userHosts (the user's
// config of the moment: a /reload or a second agent in one process sees
// its own).
func sessionProxy(userHosts []string) *registryProxy {
	proxyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "harvey-net-")
		if err != nil {
			return
		}
		p := &registryProxy{sock: filepath.Join(dir, "proxy.sock")}
		ln, err := net.Listen("unix", p.sock)
		if err != nil {
			return
		}
		go http.Serve(ln, p)
		theProxy = p
	})
	if p := theProxy; p != nil {
		p.mu.Lock()
		p.allowed = append(append([]string{}, defaultRegistryHosts...), userHosts...)
		p.mu.Unlock()
	}
	return theProxy
}

// removeProxyDir removes the socket's directory at exit.
func removeProxyDir() {
	if theProxy != nil && strings.Contains(theProxy.sock, "harvey-net-") {
		os.RemoveAll(filepath.Dir(theProxy.sock))
	}
}

// allows reports whether host:port may be reached: an entry names the host
// (on the web's ports, 443 and 80) or host:port, or "*.example.com" for its
// subdomains (443 and 80).
func (p *registryProxy) allows(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	web := port == "443" || port == "80"
	p.mu.Lock()
	allowed := p.allowed
	p.mu.Unlock()
	return slices.ContainsFunc(allowed, func(a string) bool {
		a = strings.ToLower(a)
		if h, pt, err := net.SplitHostPort(a); err == nil {
			return h == host && pt == port
		}
		if suffix, ok := strings.CutPrefix(a, "*."); ok {
			return web && strings.HasSuffix(host, "."+suffix)
		}
		return web && a == host
	})
}

// refusalsSince returns the hosts refused after the first n.
func (p *registryProxy) refusalsSince(n int) []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Compact(append([]string{}, p.refused[min(n, len(p.refused)):]...))
}

func (p *registryProxy) refusals() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.refused)
}

func (p *registryProxy) refuse(w http.ResponseWriter, host string) {
	p.mu.Lock()
	p.refused = append(p.refused, host)
	p.mu.Unlock()
	http.Error(w, proxyRefusal(host), http.StatusForbidden)
}

// proxyRefusal is the one line that names a refused host and the setting.
func proxyRefusal(host string) string {
	return fmt.Sprintf("[sandbox: network: %s is not a package registry Harvey lets commands reach; add it to sandbox.hosts in your config (sandbox.network: true allows every connection)]", host)
}

func (p *registryProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Host == "" || r.URL.Scheme != "http" {
		http.Error(w, "Harvey's registry proxy takes proxy requests only", http.StatusBadRequest)
		return
	}
	hostport := r.URL.Host
	if !strings.Contains(hostport, ":") {
		hostport += ":80"
	}
	if !p.allows(hostport) {
		p.refuse(w, r.URL.Host)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	resp, err := proxyTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

var proxyTransport = &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext, MaxIdleConnsPerHost: 4}

// tunnel splices a CONNECT to an allowed host:port (TLS stays end to end).
func (p *registryProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	hostport := r.Host
	if !strings.Contains(hostport, ":") {
		hostport += ":443"
	}
	if !p.allows(hostport) {
		host, _, _ := net.SplitHostPort(hostport)
		p.refuse(w, host)
		return
	}
	up, err := net.DialTimeout("tcp", hostport, 30*time.Second)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "proxy: no tunnel", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
	sandbox.Relay(conn, buf, up) // buf holds what the client sent after its request
}
