package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// mcpKeptFixture is a workspace and a user config with three MCP servers:
// two that work (each start counted in the workspace's starts.log) and one
// that fails at once (its tries counted in fails.log).
func mcpKeptFixture(t *testing.T) (dir string, env []string) {
	t.Helper()
	e2e.RequireSandbox(t)
	root := t.TempDir()
	dir, cfg := filepath.Join(root, "ws"), filepath.Join(root, "config")
	os.MkdirAll(dir, 0o755)
	token := fmt.Sprintf("kept%d", time.Now().UnixNano())
	good := func(name string) string {
		return fmt.Sprintf("    %s:\n      command: [sh, -c, 'echo %s >> starts.log; exec \"$0\" -mcp-token=%s', %q]\n      env: {HARVEY_TEST_HELPER: mcp-server}\n      models: [\"*\"]\n", name, name, token, os.Args[0])
	}
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("sandbox:\n  readable: [%q]\nmcp:\n  servers:\n%s%s    broken:\n      command: [sh, -c, 'echo try >> fails.log; exit 3']\n",
		filepath.Dir(os.Args[0]), good("one"), good("two")))
	return dir, []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + filepath.Join(root, "data")}
}

func countLines(t *testing.T, p string) int {
	t.Helper()
	b, _ := os.ReadFile(p)
	return strings.Count(string(b), "\n")
}

// MCP that costs nothing until used (issue 62): the first session starts
// the servers, says the failing one and keeps what each offered; the next
// offers the same tools without starting any, and does not try the failing
// one again; a call starts its server then; harvey mcp list still starts
// every server, as the check it is.
func TestEndToEndMCPServersStartAtFirstUse(t *testing.T) {
	bin := e2e.Build(t)
	dir, env := mcpKeptFixture(t)
	starts, fails := filepath.Join(dir, "starts.log"), filepath.Join(dir, "fails.log")
	turn := func(replies ...fakeollama.Reply) ([]map[string]any, string) {
		f := fakeollama.New(t, "llama3.2:latest")
		f.Script(replies...)
		out, errOut, code := e2e.RunKernel(t, "", bin, dir, "", env, "-p", "hello", "--yes", "--model", "llama3.2", "--ollama", f.URL())
		if code != 0 {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
		return f.ChatRequests(), out + errOut
	}

	reqs, said := turn(fakeollama.TextReply("llama3.2", "Hi."))
	if countLines(t, starts) != 2 || countLines(t, fails) != 1 || !strings.Contains(said, "MCP server broken") {
		t.Fatalf("the first session: %d starts, %d tries of the failing server:\n%s", countLines(t, starts), countLines(t, fails), said)
	}
	first := fakeollama.ToolNamesOf(reqs[0])

	reqs, said = turn(fakeollama.TextReply("llama3.2", "Hi again."))
	if n, m := countLines(t, starts), countLines(t, fails); n != 2 || m != 1 {
		t.Errorf("a turn that calls no MCP tool started %d servers and tried the failing one %d times", n-2, m-1)
	}
	if got := fakeollama.ToolNamesOf(reqs[0]); !slices.Equal(got, first) || !slices.Contains(got, "one__echo") {
		t.Errorf("the tools offered from what was kept: %v, first %v", got, first)
	}
	if strings.Contains(said, "MCP server broken") {
		t.Errorf("the failing server was said again:\n%s", said)
	}

	reqs, said = turn(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "e", Name: "two__echo", Args: map[string]any{"text": "started now"}}), fakeollama.TextReply("llama3.2", "Done."))
	if r := fakeollama.ToolResults(reqs)["e"]; !strings.Contains(r, "started now") || countLines(t, starts) != 3 {
		t.Errorf("a call to a kept server's tool: %q, %d starts\n%s", r, countLines(t, starts), said)
	}
	if b, _ := os.ReadFile(starts); !strings.HasSuffix(string(b), "two\n") {
		t.Errorf("the server called is not the one started: %q", b)
	}

	out, _, _ := e2e.RunKernel(t, "", bin, dir, "", env, "mcp", "list")
	if countLines(t, starts) != 5 || countLines(t, fails) != 2 || !strings.Contains(out, "one: running") {
		t.Errorf("harvey mcp list did not start every server: %d starts, %d tries\n%s", countLines(t, starts), countLines(t, fails), out)
	}
}
