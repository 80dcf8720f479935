//go:build !linux

package sandbox

import (
	"errors"
	"net"
)

// The session's network needs Linux's network namespaces: elsewhere no
// holder starts, and these are never reached.

var errNoSessionNet = errors.New("the session's network needs Linux")

// SessionForward: see session_linux.go.
func SessionForward(string, string) error { return errNoSessionNet }

// SessionPid: see session_linux.go.
func SessionPid(string, int) int { return 0 }

// SessionDial: see session_linux.go.
func SessionDial(string, int) (net.Conn, error) { return nil, errNoSessionNet }
