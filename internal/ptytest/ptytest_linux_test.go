//go:build linux

package ptytest

import "testing"

// A program on the terminal: what it shows is expected, what is typed
// reaches it, its exit is waited for.
func TestSessionTypesAndReads(t *testing.T) {
	s := Start(t, "/bin/sh", t.TempDir(), "-c", `printf 'ready\n'; read x; echo "got $x"`)
	s.Expect("ready")
	s.Send("hello\r")
	s.Expect("got hello")
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}

// Screen applies the cursor moves and erases a word wrap writes.
func TestScreen(t *testing.T) {
	for in, want := range map[string]string{
		"abc\x1b[2Dx":              "axc",
		"abc\x1b[1D\x1b[K":         "ab",
		"one\r\ntwo\rT":            "one\nTwo",
		"long wo\x1b[2D\x1b[K\nwo": "long \nwo",
	} {
		if got := Screen(in); got != want {
			t.Errorf("Screen(%q) = %q, want %q", in, got, want)
		}
	}
}
