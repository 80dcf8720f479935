package sandboxpolicy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// The allowlist: a host on the web's ports, host:port exactly, *.domain
// for subdomains only; nothing else, however it is spelled. A host let
// through by a wildcard alone is marked so (its address is checked).
func TestRegistryProxyAllows(t *testing.T) {
	p := &registryProxy{allowed: []string{"registry.npmjs.org", "npm.corp.example:8443", "*.pkg.example"}}
	for hostport, want := range map[string]bool{
		"registry.npmjs.org:443": true, "REGISTRY.npmjs.org.:443": true, "registry.npmjs.org:80": true,
		"registry.npmjs.org:22": false, "evil-registry.npmjs.org:443": false, "registry.npmjs.org.evil.com:443": false,
		"npm.corp.example:8443": true, "npm.corp.example:443": false,
		"a.pkg.example:443": true, "pkg.example:443": false, "a.pkg.example:22": false,
		"registry.npmjs.org": false, "127.0.0.1:443": false,
	} {
		got, wild := p.allows(hostport)
		if got != want {
			t.Errorf("%s: %v, want %v", hostport, got, want)
		}
		if wild != (got && strings.Contains(hostport, "pkg.example")) {
			t.Errorf("%s: wildcard %v", hostport, wild)
		}
	}
	for _, h := range DefaultRegistryHosts {
		if strings.Contains(h, "storage") || strings.Contains(h, "googleapis") {
			t.Errorf("a general storage host is reachable by default: %s", h)
		}
	}
}

// A wildcard entry reaches public addresses only: what it resolves to on
// this machine or a private network is refused, a host named exactly is
// not.
func TestRegistryProxyWildcardAddress(t *testing.T) {
	addr := upstream(t)
	if c, err := dialAllowed(context.Background(), addr, true); err == nil || !strings.Contains(err.Error(), "local or private") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a wildcard host on loopback: %v", err)
	}
	c, err := dialAllowed(context.Background(), addr, false)
	if err != nil {
		t.Fatalf("a host named exactly: %v", err)
	}
	c.Close()
	for _, a := range []string{"10.1.2.3", "192.168.0.1", "169.254.169.254", "::1", "fd00::1", "100.64.0.1", "0.0.0.0"} {
		if publicAddr(mustAddr(t, a)) {
			t.Errorf("%s counted as public", a)
		}
	}
	if !publicAddr(mustAddr(t, "151.101.1.1")) {
		t.Error("a public address refused")
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// upstream is a server on a loopback port, as a registry would be: an
// HTTP GET is answered "served", any other first line is echoed back.
func upstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				if strings.HasPrefix(line, "GET ") {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nserved\n")
					return
				}
				io.WriteString(c, "echo:"+line)
			}()
		}
	}()
	return ln.Addr().String()
}

// The session's proxy over its socket, as a command's tools use it: a
// CONNECT to a host of the list is spliced through, one to any other host
// is refused with the one line that names it and the setting (and counted,
// for the command's status); a plain HTTP request is forwarded or refused
// the same way, and a request that is no proxy request is turned away.
func TestSessionProxyOverItsSocket(t *testing.T) {
	addr := upstream(t)
	sock := SessionProxy([]string{addr})
	if sock == "" {
		t.Skip("no session proxy here (no temporary directory for its socket)")
	}
	ask := func(req string) (string, *bufio.Reader, net.Conn) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		r := bufio.NewReader(c)
		status, _ := r.ReadString('\n')
		return status, r, c
	}
	before := ProxyRefusals()
	status, r, c := ask("CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
	if !strings.Contains(status, " 200 ") {
		t.Fatalf("CONNECT to a listed host: %q", status)
	}
	for line, _ := r.ReadString('\n'); line != "\r\n" && line != ""; line, _ = r.ReadString('\n') {
	}
	io.WriteString(c, "hello\n")
	if got, _ := r.ReadString('\n'); got != "echo:hello\n" {
		t.Errorf("through the tunnel: %q", got)
	}
	c.Close()

	status, r, c = ask("CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n")
	body := ""
	for body == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		if strings.Contains(line, "[sandbox:") {
			body = line
		}
	}
	c.Close()
	if !strings.Contains(status, " 403 ") || !strings.Contains(body, ProxyRefusal("evil.example")) {
		t.Errorf("CONNECT to another host: %q %q", status, body)
	}
	status, r, c = ask("GET http://" + addr + "/x HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n")
	served, _ := io.ReadAll(r)
	c.Close()
	if !strings.Contains(status, " 200 ") || !strings.Contains(string(served), "served") {
		t.Errorf("GET through the proxy: %q %q", status, served)
	}
	status, _, c = ask("GET http://other.example/ HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n")
	c.Close()
	if !strings.Contains(status, " 403 ") {
		t.Errorf("GET of another host: %q", status)
	}
	status, _, c = ask("GET /x HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n")
	c.Close()
	if !strings.Contains(status, " 400 ") {
		t.Errorf("a request that is no proxy request: %q", status)
	}
	if got := ProxyRefusalsSince(before); !slices.Equal(got, []string{"evil.example", "other.example"}) {
		t.Errorf("refusals since = %v", got)
	}
}

// A tool's own hosts (its network:, issue 77) are that tool's: its proxy
// reaches them, the session's does not; its refusals are counted where the
// line after a command reads them; the same hosts share one proxy.
func TestToolProxyReachesItsOwnHostsOnly(t *testing.T) {
	addr := upstream(t)
	sock := ToolProxy(nil, []string{addr})
	session := SessionProxy(nil)
	if sock == "" || session == "" {
		t.Skip("no session proxy here (no temporary directory for its socket)")
	}
	if sock == session || ToolProxy(nil, []string{addr}) != sock || ToolProxy(nil, nil) != session {
		t.Fatalf("one proxy per set of hosts: %s %s", sock, session)
	}
	status := func(sock, host string) string {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET http://"+host+"/x HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	if s := status(sock, addr); !strings.Contains(s, " 200 ") {
		t.Errorf("the tool's proxy to its host: %q", s)
	}
	before := ProxyRefusals()
	if s := status(session, addr); !strings.Contains(s, " 403 ") {
		t.Errorf("the session's proxy to the tool's host: %q", s)
	}
	if s := status(sock, "other.example"); !strings.Contains(s, " 403 ") {
		t.Errorf("the tool's proxy to another host: %q", s)
	}
	if got := ProxyRefusalsSince(before); len(got) != 2 || !strings.Contains(got[1], "other.example") {
		t.Errorf("refusals recorded for the command's line: %v", got)
	}
}
