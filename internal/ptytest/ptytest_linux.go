//go:build linux

// Package ptytest drives a program — Harvey's REPL — through a real
// pseudo-terminal, as a person types, for any package's tests (as
// net/http/httptest serves HTTP): Start it, Send keys, Expect what it
// shows, Wait for its exit; Screen renders output as a terminal shows it.
// Linux only (/dev/ptmx).
package ptytest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/secrets"
	"golang.org/x/sys/unix"
)

type Session struct {
	t      testing.TB
	master *os.File
	cmd    *exec.Cmd
	mu     sync.Mutex
	buf    strings.Builder
	mark   int
	done   chan error
}

// Open is a pseudo-terminal pair, or the test skipped where there is none.
func Open(t testing.TB) (master, slave *os.File) {
	t.Helper()
	m, s, err := New()
	if err != nil {
		t.Skip(err)
	}
	return m, s
}

// New opens a pseudo-terminal pair, 40 rows of 120 columns.
func New() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0) // non-blocking: Go polls it, so Close ends a pending Read (Hangup)
	if err != nil {
		return nil, nil, fmt.Errorf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return nil, nil, fmt.Errorf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		return nil, nil, fmt.Errorf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open pts: %v", err)
	}
	unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120})
	return m, s, nil
}

// Start starts bin (Harvey) in dir on a terminal 120 columns wide, without colour.
func Start(t testing.TB, bin, dir string, args ...string) *Session {
	t.Helper()
	return StartWith(t, bin, dir, []string{"NO_COLOR=1"}, 120, args...)
}

// StartWith starts bin (Harvey) on a terminal cols wide, with env added
// to the test's environment less its secrets (no Ollama unless env names one).
func StartWith(t testing.TB, bin, dir string, env []string, cols int, args ...string) *Session {
	t.Helper()
	master, slave := Open(t)
	unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: uint16(cols)})
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(secrets.Environ(os.Environ()), "TERM=xterm", "OLLAMA_HOST="), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	s := &Session{t: t, master: master, cmd: cmd, done: make(chan error, 1)}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		master.Close()
	})
	return s
}

// Send types keys.
func (s *Session) Send(keys string) {
	s.t.Helper()
	if _, err := s.master.WriteString(keys); err != nil {
		s.t.Fatal(err)
	}
}

// Expect waits for text to appear after the last mark, then moves the mark
// past it.
func (s *Session) Expect(text string) string {
	s.t.Helper()
	return s.ExpectWithin(text, 15*time.Second)
}

// ExpectWithin is Expect with its own deadline, for a step whose time is
// the machine's (an index of 10,000 files built while the suite runs).
func (s *Session) ExpectWithin(text string, d time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		all := s.buf.String()
		s.mu.Unlock()
		if i := strings.Index(all[s.mark:], text); i >= 0 {
			seen := all[s.mark : s.mark+i+len(text)]
			s.mark += i + len(text)
			return seen
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Fatalf("timed out waiting for %q; screen since mark:\n%s", text, s.buf.String()[s.mark:])
	return ""
}

// Since is what the program printed after the mark (the mark stays).
func (s *Session) Since() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()[s.mark:]
}

// Hangup closes the terminal, as closing its window does: the kernel sends
// SIGHUP to the program's session.
func (s *Session) Hangup() {
	s.master.Close()
}

// Wait waits for the program to exit.
func (s *Session) Wait() error {
	s.t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(15 * time.Second):
		s.t.Fatal("harvey did not exit")
	}
	return nil
}
