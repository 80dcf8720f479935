// Package launch makes the harvey executable the sandbox's launcher as
// early as Go allows: its init runs the launcher (and exits) when the
// process was started as one, before the initialisers of the packages the
// rest of Harvey needs (the model SDKs, SQLite, MCP). A launcher starts a
// command; every microsecond of its start is the command's.
//
// Contract: importing it (for its init) is all. The launcher's argv is
// sandbox.Arg and the spec (sandbox.State.Wrap).
package launch

import (
	"os"

	"github.com/harvey-agent/harvey/internal/gocache"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Arg {
		os.Exit(sandbox.RunLauncher(os.Args[2:]))
	}
	gocache.Run() // the go command's cache program, where commands have no layers (Landlock only)
}
