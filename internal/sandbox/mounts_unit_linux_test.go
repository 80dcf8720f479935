//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// inMountNamespace runs f on a thread of its own in a mount namespace of
// its own (private), where the launcher's mount code can run inside this
// test's process; the thread ends with f, and its mounts with it. It needs
// root (a multithreaded process cannot make a user namespace): as an
// ordinary account these steps are covered through the launcher itself
// (TestLauncherCacheInsideToolchainRoot, the e2e homes), run by
// .ci/as-user.
func inMountNamespace(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a mount namespace for one thread; the launcher's own tests cover this as a user")
	}
	done := make(chan bool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, and its namespace, end with this goroutine
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
			done <- false
			return
		}
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- false
			return
		}
		defer func() { done <- true }()
		f()
	}()
	if !<-done {
		t.Skip("no mount namespace for a thread here")
	}
}

// A cache not made yet inside a read-only toolchain root (~/.cargo/
// registry before the first crate) gets its mount point by a splice: the
// directory shows what it held (files, directories, links), still
// read-only, with the new mount point in it; the user's tree is never
// written.
func TestSpliceMakesAMountPointInAReadOnlyTree(t *testing.T) {
	root := t.TempDir()
	cargo := filepath.Join(root, "home", ".cargo")
	os.MkdirAll(filepath.Join(cargo, "bin"), 0o755)
	os.WriteFile(filepath.Join(cargo, "env"), []byte("export PATH\n"), 0o644)
	os.Symlink("bin", filepath.Join(cargo, "install"))
	inMountNamespace(t, func() {
		if err := unix.Mount(cargo, cargo, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			t.Error(err)
			return
		}
		if err := remountReadOnly(cargo); err != nil {
			t.Error(err)
			return
		}
		rb := &rootBuilder{root: root}
		registry := filepath.Join(cargo, "registry")
		if err := rb.mountPoint(registry, true); err != nil {
			t.Errorf("no mount point: %v", err)
			return
		}
		if fi, err := os.Stat(registry); err != nil || !fi.IsDir() {
			t.Errorf("the mount point: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(cargo, "env")); string(b) != "export PATH\n" {
			t.Errorf("a file of the spliced directory: %q", b)
		}
		if l, _ := os.Readlink(filepath.Join(cargo, "install")); l != "bin" {
			t.Errorf("a link of the spliced directory: %q", l)
		}
		if os.WriteFile(filepath.Join(cargo, "env"), []byte("x"), 0o644) == nil {
			t.Error("a file of a read-only directory became writable in its splice")
		}
		if err := rb.finish(); err != nil {
			t.Error(err)
		}
		if os.Mkdir(filepath.Join(cargo, "new"), 0o755) == nil {
			t.Error("the splice of a read-only directory is writable")
		}
		if !readOnlyAt(cargo) {
			t.Error("readOnlyAt says the splice is writable")
		}
		if err := rb.mountPoint(root, true); err != errNoMountPoint {
			t.Errorf("the root itself as a mount point: %v", err)
		}
	})
	if _, err := os.Lstat(filepath.Join(cargo, "registry")); err == nil {
		t.Error("the user's tree was written")
	}
	if b, _ := os.ReadFile(filepath.Join(cargo, "env")); string(b) != "export PATH\n" {
		t.Errorf("the user's file changed: %q", b)
	}
}

// Landlock-only's read-only binds: each path is read-only for what runs
// after, a link is skipped (never followed), a missing path too.
func TestReadOnlyBinds(t *testing.T) {
	dir := t.TempDir()
	git := filepath.Join(dir, ".git")
	os.MkdirAll(filepath.Join(git, "hooks"), 0o755)
	os.Symlink("/etc", filepath.Join(dir, "link"))
	inMountNamespace(t, func() {
		if err := readOnlyBinds([]string{filepath.Join(git, "hooks"), filepath.Join(dir, "link"), filepath.Join(dir, "missing")}); err != nil {
			t.Error(err)
			return
		}
		if os.WriteFile(filepath.Join(git, "hooks", "pre-commit"), []byte("x"), 0o755) == nil {
			t.Error("hooks/ is writable")
		}
		if os.WriteFile(filepath.Join(git, "config"), []byte("x"), 0o644) != nil {
			t.Error("what was not named became read-only")
		}
		if readOnlyAt("/etc") {
			t.Error("a link's target was made read-only")
		}
	})
}

// A cache layer made ahead (a detached overlay) is moved into place for
// the command: what it writes lands in the layer's upper directory, never
// in the cache below; a layer no longer asked for is let go.
func TestStagedLayerIsTheCommandsPrivateLayer(t *testing.T) {
	base := t.TempDir()
	l := CacheLayer{Lower: filepath.Join(base, "cache"), Upper: filepath.Join(base, "up"), Work: filepath.Join(base, "work")}
	for _, d := range []string{l.Lower, l.Upper, l.Work, filepath.Join(base, "at")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(l.Lower, "mod.zip"), []byte("yours"), 0o644)
	odd := CacheLayer{Lower: filepath.Join(base, "a,b"), Upper: l.Upper, Work: l.Work}
	inMountNamespace(t, func() {
		stageLayers([]CacheLayer{l, odd})
		if _, ok := staged[odd]; ok {
			t.Error("a layer whose path the options cannot carry was staged")
		}
		if _, ok := staged[l]; !ok {
			t.Skip("this kernel stages no overlay (no new mount API, or no userxattr)")
		}
		at := filepath.Join(base, "at")
		if !placeStaged(l, at) {
			t.Error("the staged layer was not placed")
			return
		}
		if b, _ := os.ReadFile(filepath.Join(at, "mod.zip")); string(b) != "yours" {
			t.Errorf("the cache through its layer: %q", b)
		}
		os.WriteFile(filepath.Join(at, "mod.zip"), []byte("poisoned"), 0o644)
		if placeStaged(l, at) {
			t.Error("a layer was placed twice")
		}
		stageLayers(nil)
		if len(staged) != 0 {
			t.Errorf("layers kept after none was asked for: %v", staged)
		}
	})
	if b, _ := os.ReadFile(filepath.Join(l.Lower, "mod.zip")); string(b) != "yours" {
		t.Errorf("the cache below was written: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(l.Upper, "mod.zip")); string(b) != "poisoned" {
		t.Errorf("the write is not in the layer: %q", b)
	}
}
