package guard

import (
	"os"
	"testing"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// The guard asks the sandbox its mode (sandbox.Available), which makes the
// session's private directories; a test binary has no guardian to remove
// them at its end, so it removes them itself.
func TestMain(m *testing.M) {
	code := m.Run()
	sandbox.RemoveTmp()
	os.Exit(code)
}
