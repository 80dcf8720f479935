package harvey

import (
	"net"
	"net/url"
)

// What a URL points at: this machine, or one a credential may travel to.

// isLoopbackURL reports whether a server URL points at this machine.
func isLoopbackURL(s string) bool {
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

// httpsOrLoopback reports whether a URL may carry a credential: https, or
// http to this machine.
func httpsOrLoopback(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	return u.Scheme == "https" || u.Scheme == "http" && isLoopbackURL(s)
}
