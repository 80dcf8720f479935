//go:build !linux

package sandbox

// coverLauncher: see cover_linux_test.go.
func coverLauncher() (done func()) { return func() {} }
