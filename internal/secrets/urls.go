package secrets

import (
	"net"
	"net/url"
)

// What a URL points at: this machine, or one a credential may travel to.

// IsLoopbackURL reports whether a server URL points at this machine.
func IsLoopbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// CredentialURL reports whether a URL may carry a credential: https, or
// http to this machine (a token, a client secret, an assertion never
// travels in the clear to another host).
func CredentialURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	return u.Scheme == "https" || u.Scheme == "http" && IsLoopbackURL(s)
}
