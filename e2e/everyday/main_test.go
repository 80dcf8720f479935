// Package everyday is everyday work through the built binary in each
// kernel mode, as the user's own projects meet it: builds, tests and
// installs through the sandbox, first use of each package manager, the
// caches nothing may poison, npx MCP servers, and the user's next command
// after a hostile one. A test binary of its own (e2e's harness), so each
// package of end-to-end tests stays well within go test's ten minutes.
package everyday

import (
	"testing"

	"github.com/harvey-agent/harvey/e2e"
)

func TestMain(m *testing.M) {
	e2e.Main(m, "e2e/everyday: builds, tests, installs, caches and the next command through the built binary, in each kernel mode (minutes on 2 cores; HARVEY_TEST_QUIET=1 hushes this)")
}
