package harvey

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version, Commit and Date are stamped by release builds (-ldflags -X, see
// .goreleaser.yaml); a build from source says "dev" and takes the commit
// from the build's VCS stamp when there is one.
var (
	Version = "0.1.0"
	Commit  = ""
	Date    = ""
)

// versionLine is what harvey --version prints.
func versionLine() string {
	commit, date := Commit, Date
	if commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.time":
					date = s.Value
				}
			}
		}
	}
	line := fmt.Sprintf("harvey %s (%s/%s", Version, runtime.GOOS, runtime.GOARCH)
	if commit != "" {
		line += ", commit " + commit
	}
	if date != "" {
		line += ", built " + date
	}
	return line + ")"
}
