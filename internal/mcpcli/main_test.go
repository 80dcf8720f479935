package mcpcli

import (
	"testing"

	"github.com/harvey-agent/harvey/internal/launchtest"
)

// Warning of a hidden path asks for the spec a server's command would get,
// which probes the sandbox: the test binary plays its launcher.
func TestMain(m *testing.M) { launchtest.Main(m) }
