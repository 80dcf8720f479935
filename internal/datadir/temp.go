package datadir

import (
	"os"
	"path/filepath"
	"strconv"
)

// A session's private directories outside the data directory — its
// commands' TMPDIR (tmp), where their roots are built (root), the registry
// proxy's socket (net), the session network's (session), the private git
// directory (git) — are named by kind and by the session's process, so its
// guardian (internal/guardian) removes what a session killed before its end
// left behind (RemoveTemps).

// tempKinds are the kinds of private directory a session makes.
var tempKinds = []string{"tmp", "root", "net", "session", "git", "out"}

// TempPrefix is the prefix of this session's private directory of kind (a
// pattern for os.MkdirTemp).
func TempPrefix(kind string) string {
	return tempPrefixOf(kind, os.Getpid())
}

func tempPrefixOf(kind string, pid int) string {
	return "harvey-" + kind + "-" + strconv.Itoa(pid) + "-"
}

// RemoveTemps removes the private directories the session with process id
// pid left, in the system's temporary directory and the user's runtime
// directory (it has ended, and every process it started). A commands' root
// is only ever empty outside its launchers' own mounts, so it is removed
// only when it is empty.
func RemoveTemps(pid int) {
	dirs := []string{os.TempDir()}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		for _, kind := range tempKinds {
			matches, _ := filepath.Glob(filepath.Join(dir, tempPrefixOf(kind, pid)+"*"))
			for _, m := range matches {
				if kind == "root" {
					os.Remove(m)
				} else {
					os.RemoveAll(m)
				}
			}
		}
	}
}
