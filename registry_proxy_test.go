package harvey

import "testing"

// The allowlist: a host on the web's ports, host:port exactly, *.domain
// for subdomains only; nothing else, however it is spelled.
func TestRegistryProxyAllows(t *testing.T) {
	p := &registryProxy{allowed: []string{"registry.npmjs.org", "npm.corp.example:8443", "*.pkg.example"}}
	for hostport, want := range map[string]bool{
		"registry.npmjs.org:443": true, "REGISTRY.npmjs.org.:443": true, "registry.npmjs.org:80": true,
		"registry.npmjs.org:22": false, "evil-registry.npmjs.org:443": false, "registry.npmjs.org.evil.com:443": false,
		"npm.corp.example:8443": true, "npm.corp.example:443": false,
		"a.pkg.example:443": true, "pkg.example:443": false, "a.pkg.example:22": false,
		"registry.npmjs.org": false, "127.0.0.1:443": false,
	} {
		if got := p.allows(hostport); got != want {
			t.Errorf("%s: %v, want %v", hostport, got, want)
		}
	}
}
