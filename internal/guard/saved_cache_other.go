//go:build !linux

package guard

import (
	"io/fs"
	"os"

	"github.com/harvey-agent/harvey/internal/fsinfo"
)

// racyStamp and trustedDir: nothing is kept by its stamp here.
func racyStamp(fsinfo.Stamp) bool { return true }
func trustedDir(string) bool      { return false }

// readKept reads p every time here (saved_cache_linux.go keeps contents
// by identity where the kernel's ctime can be trusted).
func readKept(r *os.Root, p string, _ fs.FileInfo) ([]byte, error) { return r.ReadFile(p) }
