//go:build !linux

package sandbox

// coverLauncher: see cover_linux_test.go.
func coverLauncher() (done func()) { return func() {} }

// treeHelper: see tree_linux_test.go.
func treeHelper() (int, bool) { return 0, false }
