package sandboxpolicy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/datadir"
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

// DefaultRegistryHosts are reachable without any setting.
var DefaultRegistryHosts = []string{
	"proxy.golang.org", "sum.golang.org", // Go modules (not a general cloud storage host: it serves far more than packages)
	"registry.npmjs.org", "registry.yarnpkg.com", // npm, yarn
	"pypi.org", "files.pythonhosted.org", // pip, uv
	"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org", // cargo, rustup
	"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org", // Maven, Gradle
}

type registryProxy struct {
	sock string // the unix socket
	// report is the session's proxy, where a tool's own proxy records
	// what it refused (nil for the session's).
	report  *registryProxy
	mu      sync.Mutex
	allowed []string // hosts (host or host:port), "*.suffix" patterns (under mu)
	refused []string // hosts refused, in order, for the commands to report (under mu)
}

var (
	proxyOnce sync.Once
	theProxy  *registryProxy
)

// SessionProxy starts the session's proxy on first use and sets its
// allowlist: the public registries and userHosts (the user's config of the
// moment: a /reload or a second agent in one process sees its own). It is
// the proxy's unix socket ("": it could not start).
func SessionProxy(userHosts []string) string {
	proxyOnce.Do(func() {
		dir, err := os.MkdirTemp("", datadir.TempPrefix("net"))
		if err != nil {
			return
		}
		p := &registryProxy{sock: filepath.Join(dir, "proxy.sock")}
		ln, err := net.Listen("unix", p.sock)
		if err != nil {
			return
		}
		srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
		go srv.Serve(ln)
		theProxy = p
	})
	if p := theProxy; p != nil {
		p.mu.Lock()
		p.allowed = append(append([]string{}, DefaultRegistryHosts...), userHosts...)
		p.mu.Unlock()
		return p.sock
	}
	return ""
}

// toolProxies are the proxies of the tools with hosts of their own
// (network:), one per set of hosts, each in the session proxy's directory.
var toolProxies struct {
	sync.Mutex
	by map[string]*registryProxy
}

// ToolProxy is the socket of a proxy that lets through the public
// registries, userHosts and a tool's own hosts (its network:): that tool's
// commands, not every command, reach them ("": none could start).
func ToolProxy(userHosts, own []string) string {
	if len(own) == 0 {
		return SessionProxy(userHosts)
	}
	session := SessionProxy(userHosts)
	if session == "" {
		return ""
	}
	allowed := append(append(append([]string{}, DefaultRegistryHosts...), userHosts...), own...)
	key := strings.Join(allowed, "\n")
	toolProxies.Lock()
	defer toolProxies.Unlock()
	if p := toolProxies.by[key]; p != nil {
		return p.sock
	}
	p := &registryProxy{sock: filepath.Join(filepath.Dir(session), fmt.Sprintf("tool-%d.sock", len(toolProxies.by))), allowed: allowed, report: theProxy}
	ln, err := net.Listen("unix", p.sock)
	if err != nil {
		return ""
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go srv.Serve(ln)
	if toolProxies.by == nil {
		toolProxies.by = map[string]*registryProxy{}
	}
	toolProxies.by[key] = p
	return p.sock
}

// StopProxy removes the proxy's socket directory (at exit).
func StopProxy() {
	if theProxy != nil && strings.Contains(theProxy.sock, "harvey-net-") {
		os.RemoveAll(filepath.Dir(theProxy.sock))
	}
}

// allows reports whether host:port may be reached: an entry names the host
// (on the web's ports, 443 and 80) or host:port, or "*.example.com" for its
// subdomains (443 and 80). wildcard is true when only a "*." entry lets it
// through (the address it resolves to is then checked: dialAllowed).
func (p *registryProxy) allows(hostport string) (ok, wildcard bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false, false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	web := port == "443" || port == "80"
	p.mu.Lock()
	allowed := p.allowed
	p.mu.Unlock()
	for _, a := range allowed {
		a = strings.ToLower(a)
		if h, pt, err := net.SplitHostPort(a); err == nil {
			if h == host && pt == port {
				return true, false
			}
		} else if suffix, ok := strings.CutPrefix(a, "*."); ok {
			wildcard = wildcard || web && strings.HasSuffix(host, "."+suffix)
		} else if web && a == host {
			return true, false
		}
	}
	return wildcard, wildcard
}

// proxyDialTimeout bounds a connection to a registry.
const proxyDialTimeout = 30 * time.Second

// dialAllowed connects to an allowed host:port. A host let through by a
// wildcard entry alone is resolved first, and refused when it resolves to
// this machine or a private network (a "*.example.com" whose name points
// at 127.0.0.1 or a metadata address is no package registry); the
// address checked is the one dialled, so a second lookup cannot change it.
func dialAllowed(ctx context.Context, hostport string, wildcard bool) (net.Conn, error) {
	d := &net.Dialer{Timeout: proxyDialTimeout}
	if !wildcard {
		return d.DialContext(ctx, "tcp", hostport)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if !publicAddr(ip) {
			return nil, fmt.Errorf("%s resolves to %s, a local or private address (a wildcard host in sandbox.hosts reaches public addresses only; name the host itself to allow it)", host, ip)
		}
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s: no address", host)
	}
	return d.DialContext(ctx, "tcp", net.JoinHostPort(ips[0].String(), port))
}

// publicAddr: not loopback, private, link-local, unspecified or multicast.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsValid() && !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast() &&
		!ip.IsUnspecified() && !ip.IsMulticast() && !ip.IsInterfaceLocalMulticast() && !netip.MustParsePrefix("100.64.0.0/10").Contains(ip)
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
	if p.report != nil {
		p = p.report // the session's record: the line after the command names it
	}
	p.mu.Lock()
	p.refused = append(p.refused, host)
	p.mu.Unlock()
	http.Error(w, ProxyRefusal(host), http.StatusForbidden)
}

// ProxyRefusal is the one line that names a refused host and the setting.
func ProxyRefusal(host string) string {
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
	ok, wildcard := p.allows(hostport)
	if !ok {
		p.refuse(w, r.URL.Host)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	transport := proxyTransport
	if wildcard {
		transport = &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return dialAllowed(ctx, addr, true) },
			ResponseHeaderTimeout: time.Minute}
		defer transport.CloseIdleConnections()
	}
	resp, err := transport.RoundTrip(out)
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

var proxyTransport = &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: proxyDialTimeout}).DialContext, MaxIdleConnsPerHost: 4,
	ResponseHeaderTimeout: time.Minute, IdleConnTimeout: time.Minute}

// tunnel splices a CONNECT to an allowed host:port (TLS stays end to end).
func (p *registryProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	hostport := r.Host
	if !strings.Contains(hostport, ":") {
		hostport += ":443"
	}
	ok, wildcard := p.allows(hostport)
	if !ok {
		host, _, _ := net.SplitHostPort(hostport)
		p.refuse(w, host)
		return
	}
	up, err := dialAllowed(r.Context(), hostport, wildcard)
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

// ProxyRefusals is how many requests the session's registry proxy has
// refused (0 when there is none).
func ProxyRefusals() int { return theProxy.refusals() }

// ProxyRefusalsSince names the hosts the proxy refused after the first n.
func ProxyRefusalsSince(n int) []string { return theProxy.refusalsSince(n) }
