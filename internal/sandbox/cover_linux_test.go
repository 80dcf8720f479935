//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// coverLauncher lets a launcher started from this test binary count in
// the package's coverage. go test -cover gives the binary a directory
// (-test.gocoverdir, beside the binary) whose counter files it merges when
// the tests end; a binary built with -cover writes its own there at exit
// when GOCOVERDIR names it. A launcher is this binary started again with
// no flags, and in a root of its own by its exit: so the directory is
// opened now (a descriptor well above those the launcher hands on,
// close-on-exec), and named at the end through /proc/self/fd, which
// resolves in any root that has a /proc. The launcher's standard error
// is the command's: the runtime's own words at exit go to /dev/null. Not
// built with -cover (no directory), it does nothing.
func coverLauncher() (atExit func()) {
	exe, err := os.Executable()
	if err != nil {
		return func() {}
	}
	dir := filepath.Join(filepath.Dir(exe), "gocoverdir")
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 200)
	unix.Close(fd)
	if err != nil {
		return func() {}
	}
	return func() {
		if null, err := unix.Open(os.DevNull, unix.O_WRONLY, 0); err == nil {
			unix.Dup3(null, 2, 0)
		}
		os.Setenv("GOCOVERDIR", fmt.Sprintf("/proc/self/fd/%d", high))
	}
}
