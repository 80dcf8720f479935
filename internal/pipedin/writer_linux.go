//go:build linux

package pipedin

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// pipeHasWriter reports whether another process holds f's pipe as its
// standard output or error — a producer in a pipeline (go test | harvey
// -p), as opposed to a parent that left an open, silent pipe as Harvey's
// stdin (subprocess, editors, CI). known is false when /proc cannot say.
func pipeHasWriter(f *os.File) (has, known bool) {
	st, err := f.Stat()
	if err != nil {
		return false, false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false, false
	}
	want := fmt.Sprintf("pipe:[%d]", sys.Ino)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false, false
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		for _, fd := range []string{"1", "2"} {
			if l, err := os.Readlink("/proc/" + e.Name() + "/fd/" + fd); err == nil && l == want {
				return true, true
			}
		}
	}
	return false, true
}
