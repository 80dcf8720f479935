// Feature: a file system of a given type mounted for a test (the index's
// choice of where to stop).
package e2e

import (
	"testing"

	"golang.org/x/sys/unix"
)

// mountForTest mounts a filesystem of type fstype at p for the test (false
// where this process may not mount).
func mountForTest(t *testing.T, fstype, p string) bool {
	if unix.Mount(fstype, p, fstype, 0, "") != nil {
		return false
	}
	t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
	return true
}
