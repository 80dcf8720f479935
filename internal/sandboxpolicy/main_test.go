package sandboxpolicy

import (
	"os"
	"testing"

	"github.com/harvey-agent/harvey/internal/gocache"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// TestMain plays the sandbox's launcher when the launcher's argv starts
// the test binary (Wrap names the running executable), and answers the
// namespace probe, as internal/sandbox's tests do (internal/launchtest
// cannot be used here: it imports internal/runner, which imports this).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Arg {
		os.Exit(sandbox.RunLauncher(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		os.Exit(0)
	}
	gocache.Run()
	code := m.Run()
	StopProxy()
	sandbox.RemoveTmp()
	os.Exit(code)
}
