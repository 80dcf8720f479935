package sandboxcli

import (
	"testing"

	"github.com/harvey-agent/harvey/internal/launchtest"
)

// TestMain plays the sandbox's launcher when the status's probe starts the
// test binary as it (internal/launchtest).
func TestMain(m *testing.M) { launchtest.Main(m) }
