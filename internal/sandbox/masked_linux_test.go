//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Without a mount namespace no empty file can be put over a credential:
// the tree that holds one is granted as its other entries, and a tree
// that holds none stays whole.
func TestWithoutMaskedGrantsTheRest(t *testing.T) {
	home := t.TempDir()
	cargo, gradle, other := filepath.Join(home, ".cargo"), filepath.Join(home, ".gradle"), filepath.Join(home, "go")
	for _, f := range []string{".cargo/credentials.toml", ".cargo/bin/cargo", ".cargo/env", ".gradle/gradle.properties", ".gradle/caches/x", "go/bin/gopls"} {
		os.MkdirAll(filepath.Dir(filepath.Join(home, f)), 0o755)
		os.WriteFile(filepath.Join(home, f), []byte("x"), 0o644)
	}
	os.Symlink("/", filepath.Join(cargo, "root")) // a link out: granting it would grant /
	masked := []string{filepath.Join(cargo, "credentials.toml"), filepath.Join(gradle, "gradle.properties")}
	got := withoutMasked([]string{cargo, gradle + "/", other}, masked)
	want := []string{filepath.Join(cargo, "bin"), filepath.Join(cargo, "env"), filepath.Join(gradle, "caches"), other}
	if !slices.Equal(got, want) {
		t.Errorf("granted %q, want %q", got, want)
	}
	if got := withoutMasked([]string{cargo}, nil); !slices.Equal(got, []string{cargo}) {
		t.Errorf("nothing masked, yet %q", got)
	}
}
