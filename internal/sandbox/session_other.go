//go:build !linux

package sandbox

import (
	"errors"
	"io"
	"net"
)

// The session's network needs Linux's network namespaces: elsewhere no
// holder starts, and these are never reached.

var errNoSessionNet = errors.New("the session's network needs Linux")

// SessionForward: see session_linux.go.
func SessionForward(string, string) error { return errNoSessionNet }

// Joined: see session_linux.go.
type Joined struct{}

// StartJoined: see session_linux.go.
func StartJoined(Spec, io.Reader, io.Writer, io.Writer) (*Joined, error) { return nil, errNoSessionNet }

// Pid: see session_linux.go.
func (*Joined) Pid() int { return 0 }

// Stop: see session_linux.go.
func (*Joined) Stop() {}

// Keep: see joined_linux.go.
func (*Joined) Keep() {}

// Wait: see session_linux.go.
func (*Joined) Wait() (int, error) { return 126, errNoSessionNet }

// SessionDial: see session_linux.go.
func SessionDial(string, int) (net.Conn, error) { return nil, errNoSessionNet }

// StartSpared: see spare_local_linux.go (Landlock only is Linux's).
func (*State) StartSpared(Spec, io.Reader, io.Writer, io.Writer) (*Joined, error) {
	return nil, errors.New("a spare launcher runs Landlock-only commands")
}
