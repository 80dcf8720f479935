package sandboxcli

import (
	"os"
	"testing"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// TestMain plays the sandbox's launcher when the status's probe starts the
// test binary as it, and answers the namespace probe, as
// internal/sandboxpolicy's tests do.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Arg {
		os.Exit(sandbox.RunLauncher(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		os.Exit(0)
	}
	code := m.Run()
	sandbox.RemoveTmp()
	os.Exit(code)
}
