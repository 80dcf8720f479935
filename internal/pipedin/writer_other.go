//go:build !linux

package pipedin

import "os"

// pipeHasWriter cannot tell here: Read waits a second instead.
func pipeHasWriter(*os.File) (has, known bool) { return false, false }
