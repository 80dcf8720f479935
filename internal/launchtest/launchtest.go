// Package launchtest is the TestMain of a package whose tests start
// sandboxed commands (a git, an MCP server's spec): the sandbox names the
// running executable as its launcher and probes it with --version, and
// under go test that executable is the package's test binary.
//
// Contract: func TestMain(m *testing.M) { launchtest.Main(m) }. The test
// binary acts as the launcher when started as one, answers the probe, runs
// the tests and removes the session's private temporary directory
// (internal/runner's). internal/runner's and internal/sandboxpolicy's
// own tests keep a TestMain of their own (this package imports runner,
// which imports sandboxpolicy).
package launchtest

import (
	"os"
	"testing"

	"github.com/harvey-agent/harvey/internal/gocache"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// Main is the TestMain of a package whose tests start sandboxed commands.
func Main(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Arg {
		os.Exit(sandbox.RunLauncher(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		os.Exit(0) // the namespace probe
	}
	gocache.Run()
	code := m.Run()
	runner.RemoveTmp()
	os.Exit(code)
}
