// Feature: the built cmd/harvey driven headless as a user would (prompts,
// piped context, --continue, tools validate, the knowledge base); spans
// cli.go, startup.go and turn.go. TestMain is here: e2e.Main (the probe,
// the helper roles the test binary plays, a fresh home; e2e/harness.go).
package harvey

import (
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	_ "github.com/harvey-agent/harvey/internal/launch" // as in cmd/harvey: a launcher starts before the rest initialises
)

func TestMain(m *testing.M) {
	e2e.Main(m, "the root package: the built binary end to end (a minute or two on 2 cores; HARVEY_TEST_QUIET=1 hushes this)")
}

func init() {
	e2e.Helpers["crash"] = crashHelper
}

func mustOpenWorkspace(t *testing.T, dir string) *Workspace {
	t.Helper()
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}
