// Package mcp is MCP through the built binary: servers added, imported,
// confirmed and kept; OAuth logins, workload identity and enterprise
// grants against fake authorization servers; elicitation headless and
// through a pseudo-terminal; hostile servers that get nothing. A test
// binary of its own (e2e's harness), so each package of end-to-end tests
// stays well within go test's ten minutes; the fakes here (oauthServer,
// fakeIdP, elicitServer, spy) are its own.
package mcp

import (
	"testing"

	"github.com/harvey-agent/harvey/e2e"
)

func TestMain(m *testing.M) {
	e2e.Main(m, "e2e/mcp: MCP servers, logins and elicitation through the built binary (seconds; HARVEY_TEST_QUIET=1 hushes this)")
}
