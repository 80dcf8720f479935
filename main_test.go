// The root package's tests are the agent's own, in process; the built
// binary end to end is in e2e/, e2e/everyday and e2e/mcp. TestMain is
// e2e.Main all the same (the probe, the helper roles the test binary plays:
// the sandbox's launcher and crash's writer; a fresh home).
package harvey

import (
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	_ "github.com/harvey-agent/harvey/internal/launch" // as in cmd/harvey: a launcher starts before the rest initialises
)

func TestMain(m *testing.M) {
	e2e.Main(m, "the root package: the agent in process (about a minute on 2 cores; HARVEY_TEST_QUIET=1 hushes this)")
}

func init() {
	e2e.Helpers["crash"] = crashHelper
}
