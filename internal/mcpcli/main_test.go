package mcpcli

import (
	"os"
	"testing"

	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// TestMain plays the sandbox's launcher and answers its probe, as
// internal/runner's tests do: warning of a hidden path asks for the
// spec a server's command would get, which probes the sandbox.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Arg {
		os.Exit(sandbox.RunLauncher(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		os.Exit(0)
	}
	code := m.Run()
	runner.RemoveTmp()
	os.Exit(code)
}
