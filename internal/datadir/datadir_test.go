package datadir

import (
	"path/filepath"
	"testing"
)

// XDG_DATA_HOME moves the directory when it is absolute, and only then;
// a key is short, stable and differs for different text.
func TestPathAndKey(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "relative/data")
	if got, want := Path(), filepath.Join(home, ".local", "share", "harvey"); got != want {
		t.Errorf("relative XDG_DATA_HOME: %q, want %q", got, want)
	}
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := Path(); got != "/data/harvey" {
		t.Errorf("XDG_DATA_HOME=/data: %q", got)
	}
	if a, b := Key("/w/one"), Key("/w/two"); len(a) != 12 || a == b || a != Key("/w/one") {
		t.Errorf("keys %q %q", a, b)
	}
}
