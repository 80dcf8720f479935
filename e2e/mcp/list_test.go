// Feature: harvey mcp list through the built binary.
package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
)

// harvey mcp list, headless from the built binary, with the server in the
// user's own config; no server process is left behind.
func TestEndToEndMCPList(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	token := fmt.Sprintf("tok%d", time.Now().UnixNano())
	cfgHome := t.TempDir()
	os.MkdirAll(filepath.Join(cfgHome, "harvey"), 0o700)
	cfg := fmt.Sprintf("sandbox:\n  readable: [%q]\nmcp:\n  servers:\n    t:\n      command: [%q, %q]\n      env: {HARVEY_TEST_HELPER: mcp-server}\n      models: [\"*\"]\n",
		filepath.Dir(os.Args[0]), os.Args[0], "-mcp-token="+token)
	os.WriteFile(filepath.Join(cfgHome, "harvey", "harvey.yaml"), []byte(cfg), 0o600)
	out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", []string{"XDG_CONFIG_HOME=" + cfgHome}, "mcp", "list")
	if code != 0 || !strings.Contains(out, "t: running, 6 tools") || !strings.Contains(out, "t__echo — Echo the text.") {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
	e2e.WaitGone(t, token)
}
