//go:build !linux

package harvey

import "os"

// pipeHasWriter cannot tell here: readPipedStdin waits a second instead.
func pipeHasWriter(*os.File) (has, known bool) { return false, false }
