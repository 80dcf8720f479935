package guard

import (
	"os"
	"testing"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// The guard asks the sandbox its mode (sandbox.Available), which probes
// by starting the running executable as the launcher — under go test this
// test binary, which must act as one (else the probe ran the tests again)
// — and makes the session's private directories, which a test binary, with
// no guardian, removes itself. (internal/launchtest.Main, which every other
// such package uses, imports this package.)
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Arg {
		os.Exit(sandbox.RunLauncher(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		os.Exit(0) // the namespace probe
	}
	code := m.Run()
	sandbox.RemoveTmp()
	os.Exit(code)
}
