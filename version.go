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

// versionLine is what harvey --version prints: a release build's stamp,
// else what Go recorded in the build (the commit, -dirty when the checkout
// had changes, its time; or the module version go install fetched).
func versionLine() string {
	commit, date := Commit, Date
	if commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			commit, date = buildStamp(bi)
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

// buildStamp is the commit (with -dirty) and time Go's VCS stamping
// recorded, or, for a module go install fetched (no VCS there), its
// version.
func buildStamp(bi *debug.BuildInfo) (commit, date string) {
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			date = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if commit != "" && dirty {
		commit += "-dirty"
	}
	if commit == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		commit = "module " + bi.Main.Version
	}
	return commit, date
}
