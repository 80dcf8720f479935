package runner

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
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
	port, _ := countingListener(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
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

// countingListener listens on a loopback port, closes each connection and
// counts it on accepted (a listener no command may reach).
func countingListener(t *testing.T) (port int, accepted chan bool) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = make(chan bool, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case accepted <- true:
			default:
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}
