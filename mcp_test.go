package harvey

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	e2e.Helpers["mcp-badnames"] = func(string) int { return mcptest.RunStdio(mcptest.BadNames()) }
	e2e.Helpers["mcp-extra"] = func(string) int { return mcptest.RunStdio(mcptest.Extra()) }
	e2e.Helpers["mcp-plant"] = func(string) int { return mcptest.RunStdio(mcptest.Plant()) }
}

// mcpEnv is a test agent with the stdio test server configured as "t".
func mcpEnv(t *testing.T, f *fakeollama.Server, token string, models ...string) *testEnv {
	t.Helper()
	return mcpEnvTimed(t, f, token, 0, models...)
}

// mcpEnvTimed is mcpEnv with the session's run_timeout (0: the default),
// which the servers are given as they start.
func mcpEnvTimed(t *testing.T, f *fakeollama.Server, token string, runTimeout time.Duration, models ...string) *testEnv {
	t.Helper()
	env := newTestEnv(t, f, "llama3.2")
	if runTimeout > 0 {
		env.a.Config.RunTimeout = config.Duration(runTimeout)
	}
	// The test binary is the server: the sandbox must let it be read.
	env.a.Config.Sandbox.Readable = []string{filepath.Dir(os.Args[0])}
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"t": {Command: []string{os.Args[0], "-mcp-token=" + token}, Env: map[string]string{"HARVEY_TEST_HELPER": "mcp-server"}, Models: models}}
	env.a.startMCP(t.Context(), false)
	t.Cleanup(env.a.mcp.Close)
	return env
}

// A real stdio server: discovery, the schema whole on the wire to Ollama,
// a call with coerced arguments, isError, a crash (error, restart), a hang
// (timeout), approvals and audit; no server process outlives Harvey.
func TestMCPStdioServer(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	token := fmt.Sprintf("tok%d", time.Now().UnixNano())
	env := mcpEnvTimed(t, f, token, 2*time.Second, "llama3.2")
	var out strings.Builder
	cmdMCP(t.Context(), env.a, nil, &out)
	if !strings.Contains(out.String(), "t: running, 6 tools") || !strings.Contains(out.String(), "t__add — Add two integers.") {
		t.Fatalf("/mcp = %q", out.String())
	}
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c1", Name: "t__add", Args: map[string]any{"a": "2", "b": 3}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c2", Name: "t__fail", Args: map[string]any{}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c3", Name: "t__crash", Args: map[string]any{}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c4", Name: "t__echo", Args: map[string]any{"text": "after the restart"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c5", Name: "t__hang", Args: map[string]any{}}),
		fakeollama.TextReply("llama3.2", "Done."),
	)
	if err := env.a.RunPrompt(t.Context(), "use the tools"); err != nil {
		t.Fatal(err)
	}
	reqs := f.ChatRequests()
	var addSchema string
	for _, tl := range reqs[0]["tools"].([]any) {
		fn := tl.(map[string]any)["function"].(map[string]any)
		if fn["name"] == "t__add" {
			b, _ := json.Marshal(fn["parameters"])
			addSchema = string(b)
		}
	}
	if !strings.Contains(addSchema, `"enum":["sum","twice"]`) || !strings.Contains(addSchema, `"round":{"type":"boolean"}`) {
		t.Fatalf("schema on the wire = %s", addSchema)
	}
	res := fakeollama.ToolResults(reqs)
	for id, want := range map[string]string{"c1": "\n5\n", "c2": "error: boom: the thing is broken", "c3": "restarted", "c4": "echo: after the restart", "c5": "no answer within run_timeout"} {
		if !strings.Contains(res[id], want) {
			t.Errorf("%s: want %q in %q", id, want, res[id])
		}
	}
	var audit strings.Builder
	env.a.Audit.Print(&audit, 20)
	if !strings.Contains(audit.String(), "tool:t__add") {
		t.Errorf("audit = %s", audit.String())
	}
	// Headless without --yes, an MCP tool is refused like run_command.
	env.a.approvals.auto = false
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "d1", Name: "t__echo", Args: map[string]any{"text": "x"}}), fakeollama.TextReply("llama3.2", "ok"))
	env.a.RunPrompt(t.Context(), "echo")
	if r := fakeollama.ToolResults(f.ChatRequests())["d1"]; !strings.Contains(r, "needs approval") {
		t.Errorf("unapproved call: %q", r)
	}
	env.a.Close()
	e2e.WaitGone(t, token)
}

// A streamable HTTP server works the same way, headers from the
// environment.
func TestMCPHTTPServer(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.Header.Get("Authorization") != "Bearer sekrit" {
			return nil
		}
		return mcptest.Tools()
	}, nil))
	defer srv.Close()
	t.Setenv("TEST_MCP_TOKEN", "sekrit")
	env := newTestEnv(t, nil, "")
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"h": {URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${TEST_MCP_TOKEN}"}, ReadOnly: []string{"echo"}}}
	env.a.approvals.auto = false // echo is marked read-only: no approval
	env.a.startMCP(t.Context(), false)
	defer env.a.mcp.Close()
	out, err := callTool(t, env, "h__echo", map[string]any{"text": "over http"})
	if err != nil || out != "echo: over http" {
		t.Fatalf("%q %v", out, err)
	}
	if _, err := callTool(t, env, "h__add", map[string]any{"a": 1, "b": 2}); err == nil || !strings.Contains(err.Error(), "needs approval") {
		t.Fatalf("add without approval: %v", err)
	}
}

// A cloned repository's agents/harvey.yaml cannot start an MCP server:
// headless it is ignored (one warning), nothing runs.
func TestMCPServerFromWorkspaceNeedsConfirmation(t *testing.T) {
	e2e.FreshConfigHome(t)
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	e2e.WriteFile(t, dir, "agents/harvey.yaml", "mcp:\n  servers:\n    evil:\n      command: [sh, -c, 'touch "+marker+"']\n")
	a, errOut := startIn(t, dir, false, "")
	if a.mcp.Len() > 0 {
		t.Fatalf("servers started: %v", a.mcp.Names())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the workspace's MCP command ran")
	}
	if !strings.Contains(errOut.String(), `sets mcp (MCP server evil: runs sh -c "touch `) || !strings.Contains(errOut.String(), "ignored headless") {
		t.Fatalf("no warning: %s", errOut.String())
	}
}

// models: narrows a server's tools to the models it names, and a model
// cannot call what it was not offered.
func TestMCPToolsOnlyForEnabledModels(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	env := mcpEnv(t, f, fmt.Sprintf("tok%d", time.Now().UnixNano()), "mistral") // models: names another
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "e1", Name: "t__echo", Args: map[string]any{"text": "x"}}), fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "echo"); err != nil {
		t.Fatal(err)
	}
	reqs := f.ChatRequests()
	for _, tl := range reqs[0]["tools"].([]any) {
		if n := tl.(map[string]any)["function"].(map[string]any)["name"]; strings.HasPrefix(fmt.Sprint(n), "t__") {
			t.Fatalf("%v was sent to a model not enabled for the server", n)
		}
	}
	if r := fakeollama.ToolResults(reqs)["e1"]; !strings.Contains(r, `tool "t__echo" is not offered to this model`) || strings.Contains(r, "t__echo,") {
		t.Fatalf("call of a tool not offered: %q", r)
	}
}

// A server that announces a new tool list gets it re-read between turns.
func TestMCPToolListChanged(t *testing.T) {
	t.Parallel()
	env := mcpEnv(t, nil, fmt.Sprintf("tok%d", time.Now().UnixNano()), "*")
	if _, err := callTool(t, env, "t__grow", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	s, _ := env.a.mcp.Server("t")
	for i := 0; i < 200 && !s.ListChanged(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, ok := env.a.Tools.GetTool("t__late"); ok {
		t.Fatal("the tool list changed in the middle of a turn")
	}
	env.a.mcp.Refresh(t.Context())
	if out, err := callTool(t, env, "t__late", map[string]any{}); err != nil || out != "late tool" {
		t.Fatalf("%q %v", out, err)
	}
}

// The reference server @modelcontextprotocol/server-everything, where Node
// and the npm registry are there: its tools are listed and echo and
// get-sum are called through a scripted model.
func TestMCPServerEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("installs an npm package")
	}
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node here")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm here")
	}
	// Installed once per machine into the user's cache (reused by later
	// runs), from npm's own cache when it has the package.
	dir := filepath.Join(e2e.FixtureCache, "harvey-tests", "server-everything")
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		install := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefer-offline", "--prefix", dir, "@modelcontextprotocol/server-everything")
		if out, err := install.CombinedOutput(); err != nil {
			t.Skipf("npm install failed (no registry?): %v %s", err, string(out[max(0, len(out)-300):]))
		}
	}
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.Config.Sandbox.Readable = []string{dir}
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"ev": {Command: []string{node, entry, "stdio"}, Models: []string{"*"}}}
	env.a.startMCP(t.Context(), false)
	defer env.a.mcp.Close()
	var out strings.Builder
	cmdMCP(t.Context(), env.a, nil, &out)
	if !strings.Contains(out.String(), "ev: running") || !strings.Contains(out.String(), "ev__echo") || !strings.Contains(out.String(), "ev__get-sum") {
		t.Fatalf("/mcp = %s", out.String())
	}
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "e", Name: "ev__echo", Args: map[string]any{"message": "hello everything"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "s", Name: "ev__get-sum", Args: map[string]any{"a": "2", "b": 40}}),
		fakeollama.TextReply("llama3.2", "Done."),
	)
	if err := env.a.RunPrompt(t.Context(), "use them"); err != nil {
		t.Fatal(err)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	if !strings.Contains(res["e"], "hello everything") || !strings.Contains(res["s"], "42") {
		t.Fatalf("echo %q\nsum %q", res["e"], res["s"])
	}
}

// A server that never answers initialize is reported in one line and the
// session goes on.
func TestMCPHangingServer(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, nil, "")
	// Reads its input, never answers; ends when its stdin closes.
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"slow": {Command: []string{"sh", "-c", "cat > /dev/null"}, Models: []string{"*"}, Lazy: true}}
	env.a.startMCP(t.Context(), false)
	env.a.mcp.SetTimeout(300 * time.Millisecond)
	defer env.a.mcp.Close()
	env.a.mcp.StartLazy(t.Context())
	if !strings.Contains(env.errOut.String(), "warning: MCP server slow: did not answer initialize within 300ms") {
		t.Fatalf("stderr = %q", env.errOut.String())
	}
	var out strings.Builder
	if err := env.a.Dispatch(t.Context(), "/files", &out); err != nil {
		t.Fatal(err)
	}
}

// A lazy server starts at the first prompt, and /tools says what each
// server adds to the model's prompt.
func TestMCPLazyStartAndPromptCost(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.Config.Sandbox.Readable = []string{filepath.Dir(os.Args[0])}
	token := fmt.Sprintf("tok%d", time.Now().UnixNano())
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"t": {Command: []string{os.Args[0], "-mcp-token=" + token}, Env: map[string]string{"HARVEY_TEST_HELPER": "mcp-server"}, Models: []string{"*"}, Lazy: true}}
	env.a.startMCP(t.Context(), false)
	defer env.a.mcp.Close()
	if len(e2e.ProcessesWith(token)) != 0 {
		t.Fatal("a lazy server started with Harvey")
	}
	f.Script(fakeollama.TextReply("llama3.2", "hi"))
	if err := env.a.RunPrompt(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	var sent bool
	for _, tl := range f.ChatRequests()[0]["tools"].([]any) {
		sent = sent || tl.(map[string]any)["function"].(map[string]any)["name"] == "t__echo"
	}
	if !sent {
		t.Fatal("the lazy server's tools were not in the first request")
	}
	var out strings.Builder
	env.a.Dispatch(t.Context(), "/tools", &out)
	if !strings.Contains(out.String(), "MCP t: 6 of 6 tools offered to llama3.2:latest (~") {
		t.Fatalf("/tools = %s", out.String())
	}
}

// Tool names outside [A-Za-z0-9_-]{1,64} (with the server's prefix) are
// refused at registration, in one line naming the server, shown escaped;
// the good one is offered and the request carries only valid names.
func TestMCPToolNamesRefused(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.Config.Sandbox.Readable = []string{filepath.Dir(os.Args[0])}
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"b": {Command: []string{os.Args[0]}, Env: map[string]string{"HARVEY_TEST_HELPER": "mcp-badnames"}, Models: []string{"llama3.2"}}}
	env.a.startMCP(t.Context(), false)
	t.Cleanup(env.a.mcp.Close)
	warn := env.errOut.String()
	if strings.Count(warn, "MCP server b: 3 tools not added") != 1 || strings.Contains(warn, "\x1b") || !strings.Contains(warn, `with space`) {
		t.Fatalf("warning = %q", warn)
	}
	f.Script(fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	names := fakeollama.ToolNamesOf(f.ChatRequests()[0])
	if !slices.Contains(names, "b__good_tool") {
		t.Fatalf("the good tool is missing: %v", names)
	}
	for _, n := range names {
		if !config.ToolNameRE().MatchString(n) {
			t.Fatalf("a name providers refuse reached the request: %q", n)
		}
	}
}

// Issue 26: a configured server's tools reach every model by default,
// within the model's budget — built-in tools first, then MCP tools while
// max_tools and a quarter of the window last — and one line per server
// says what was left out and why, and what the tools take of the window.
func TestMCPToolsOnByDefaultWithinBudget(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	env := mcpEnv(t, f, fmt.Sprintf("tok%d", time.Now().UnixNano())) // no models: every model
	names := func() []string {
		var out []string
		for _, tl := range env.a.toolsFor("llama3.2:latest", env.a.window(env.a.Client)) {
			out = append(out, tl.Function.Name)
		}
		return out
	}
	if n := names(); !slices.Contains(n, "t__echo") || !slices.Contains(n, "read_file") {
		t.Fatalf("offered %v", n)
	}
	lines := env.a.offerLines("llama3.2:latest", env.a.window(env.a.Client))
	if len(lines) != 2 || !strings.Contains(lines[0], "MCP t: 6 of 6 tools offered") || !strings.Contains(lines[1], "% of the 8.2k-token window") {
		t.Fatalf("lines %q", lines)
	}
	// A small budget: max_tools 11 leaves room for one MCP tool and
	// tool_search after the nine built-in ones (issue 77).
	env.a.Config.Models = map[string]config.ModelConfig{"llama3.2": {MaxTools: 11}}
	if n := names(); len(n) != 11 || !slices.Contains(n, "read_file") || !slices.Contains(n, "tool_search") {
		t.Fatalf("max_tools 11: %v", n)
	}
	if l := env.a.offerLines("llama3.2:latest", 8192); !strings.Contains(l[0], "1 of 6 tools offered") || !strings.Contains(l[0], "5 tools left out: max_tools 11 reached") ||
		!strings.Contains(l[len(l)-1], "tool_search finds the 8 left out") {
		t.Fatalf("lines %q", l)
	}
	// A call to one left out by the budget reaches it: the budget keeps
	// schemas out of the prompt, it forbids nothing (issue 77); from then
	// on the tools field carries it.
	var left string
	for _, tn := range env.a.Tools.Names() {
		if strings.HasPrefix(tn, "t__") && !slices.Contains(names(), tn) {
			left = tn
			break
		}
	}
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "l", Name: left, Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "ok"))
	env.a.RunPrompt(t.Context(), "call it")
	reqs := f.ChatRequests()
	m := fakeollama.MessagesOf(reqs[len(reqs)-1])
	if c := m[len(m)-1]["content"].(string); strings.Contains(c, "not offered") || strings.Contains(c, "unknown tool") || !strings.Contains(c, "tool="+left) {
		t.Fatalf("the result for %s, left out: %q", left, c)
	}
	if n := fakeollama.ToolNamesOf(reqs[len(reqs)-1]); !slices.Contains(n, left) || len(n) != 12 {
		t.Fatalf("the next request's tools: %v", n)
	}
	// A small window: the built-in tools alone fill a quarter of 2k tokens.
	env.a.Config.Models = nil
	if l := env.a.offerLines("llama3.2:latest", 2048)[0]; !strings.Contains(l, "0 of 6 tools offered") || !strings.Contains(l, "the tool budget (a quarter of the 2k-token window) is full") {
		t.Fatalf("line %q", l)
	}
}

// A server's prompt runs as /SERVER:PROMPT (issue 26), its arguments by
// name or in order, and becomes the request to the model.
func TestMCPPromptsAsSlashCommands(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	env := extraServerEnv(t, f)
	var out strings.Builder
	cmdMCP(t.Context(), env.a, nil, &out)
	if !strings.Contains(out.String(), "prompt /x:review — Review one file.") {
		t.Fatalf("/mcp = %s", out.String())
	}
	for _, line := range []string{"/x:review main.go", "/x:review focus=errors file=main.go", "/x:review main.go errors"} {
		f.Script(fakeollama.TextReply("llama3.2", "Reviewed."))
		if err := env.a.RunPrompt(t.Context(), line); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		reqs := f.ChatRequests()
		m := fakeollama.MessagesOf(reqs[len(reqs)-1])
		last := m[len(m)-1]["content"].(string)
		if !strings.Contains(last, "Review the file main.go carefully.") || strings.Contains(line, "errors") != strings.Contains(last, "Focus on errors.") {
			t.Fatalf("%s sent %q", line, last)
		}
	}
	for line, want := range map[string]string{"/x:review": "needs file", "/x:nosuch": "has no prompt", "/y:review a": "no MCP server", "/x:review a b c": "takes file=VALUE [focus=VALUE]"} {
		if err := env.a.RunPrompt(t.Context(), line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// rootsServerJS is a server on an older protocol version that, once
// initialized, asks the client for its roots (as filesystem and git
// servers do) and reports them from a tool.
const rootsServerJS = `const rl = require('readline').createInterface({ input: process.stdin });
const send = m => process.stdout.write(JSON.stringify(Object.assign({ jsonrpc: '2.0' }, m)) + '\n');
let roots = 'none yet';
rl.on('line', line => {
  const m = JSON.parse(line);
  if (m.method === 'notifications/initialized') return send({ id: 'roots-1', method: 'roots/list', params: {} });
  if (m.id === 'roots-1') { roots = m.result ? m.result.roots.map(r => r.uri).join(' ') : JSON.stringify(m.error); return; }
  if (m.id === undefined) return;
  if (m.method === 'initialize') return send({ id: m.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'roots', version: '1.0.0' } } });
  if (m.method === 'tools/list') return send({ id: m.id, result: { tools: [{ name: 'roots', description: 'The client roots.', inputSchema: { type: 'object', properties: {} } }] } });
  if (m.method === 'tools/call') return send({ id: m.id, result: { content: [{ type: 'text', text: 'roots: ' + roots }] } });
  send({ id: m.id, error: { code: -32601, message: 'no such method' } });
});
`

// A server that asks for roots is given the workspace (issue 26).
func TestMCPRootsAreTheWorkspace(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	script := filepath.Join(t.TempDir(), "roots.js")
	os.WriteFile(script, []byte(rootsServerJS), 0o644)
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.Config.Sandbox.Readable = []string{filepath.Dir(script)}
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"r": {Command: []string{node, script}}}
	env.a.startMCP(t.Context(), false)
	t.Cleanup(env.a.mcp.Close)
	// The server asks once initialized: wait until it has its answer.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if out, _ := invokeTool(env.a, "r__roots", t.Context(), map[string]any{}); !strings.Contains(out, "none yet") {
			break
		}
	}
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r", Name: "r__roots", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "where am I"); err != nil {
		t.Fatal(err)
	}
	if r := fakeollama.ToolResults(f.ChatRequests())["r"]; !strings.Contains(r, "roots: file://"+env.ws.Root) {
		t.Fatalf("roots: %s", r)
	}
}

// Ctrl-C during a long MCP call (the turn's context cancelled) sends the
// protocol's cancellation — the server's handler sees it — and the session
// goes on with the same server (issue 26).
func TestMCPCallCancelledOnInterrupt(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	env := mcpEnv(t, f, fmt.Sprintf("tok%d", time.Now().UnixNano()))
	env.a.Config.RunTimeout = config.Duration(time.Minute)
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "h", Name: "t__hang", Args: map[string]any{}})) // the turn ends with Ctrl-C
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(500*time.Millisecond, cancel)
	env.a.RunPrompt(ctx, "wait")
	marker := filepath.Join(env.dir, "mcp-call-cancelled.txt")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never saw the cancellation")
		}
	}
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "e", Name: "t__echo", Args: map[string]any{"text": "still here"}}), fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "echo"); err != nil {
		t.Fatal(err)
	}
	if r := fakeollama.ToolResults(f.ChatRequests())["e"]; !strings.Contains(r, "echo: still here") {
		t.Fatalf("after the cancellation: %s", r)
	}
}

// A long call's progress notifications are shown while it runs (issue 26):
// headless, a line; the result still comes back.
func TestMCPProgressShown(t *testing.T) {
	t.Parallel()
	f := fakeollama.New(t, "llama3.2:latest")
	env := extraServerEnv(t, f)
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "s", Name: "x__slow", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "work"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.errOut.String(), "⋯ x: step 1 (1/3)") {
		t.Fatalf("no progress shown: %s", env.errOut.String())
	}
	if r := fakeollama.ToolResults(f.ChatRequests())["s"]; !strings.Contains(r, "done in three steps") {
		t.Fatalf("result: %s", r)
	}
}

// extraServerEnv is a test agent with the extra test server (a prompt, a
// slow tool) configured as "x".
func extraServerEnv(t *testing.T, f *fakeollama.Server) *testEnv {
	t.Helper()
	env := newTestEnv(t, f, "llama3.2")
	env.a.Config.Sandbox.Readable = []string{filepath.Dir(os.Args[0])}
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"x": {Command: []string{os.Args[0]}, Env: map[string]string{"HARVEY_TEST_HELPER": "mcp-extra"}}}
	env.a.startMCP(t.Context(), false)
	t.Cleanup(env.a.mcp.Close)
	return env
}

// A stdio server's call is checked as a command is (issue 45), from the
// snapshot the check between calls took: a change it hid from git during
// the call is shown again and said, and the file it made is named, in the
// call's result.
func TestMCPCallChecked(t *testing.T) {
	t.Parallel()
	e2e.RequireSandbox(t)
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	root := env.a.Workspace.Root
	gitEnv := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	e2e.GitSh(t, root, gitEnv, "git init -q -b main && echo a > a.txt && git add a.txt && git commit -qm first")
	env.a.Config.Sandbox.Readable = []string{filepath.Dir(os.Args[0])}
	env.a.Config.MCP.Servers = map[string]config.MCPServer{"p": {Command: []string{os.Args[0]}, Env: map[string]string{"HARVEY_TEST_HELPER": "mcp-plant"}, Models: []string{"*"}}}
	env.a.startMCP(t.Context(), false)
	t.Cleanup(env.a.mcp.Close)
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c", Name: "p__plant", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "Done."))
	if err := env.a.RunPrompt(t.Context(), "plant"); err != nil {
		t.Fatal(err)
	}
	r := fakeollama.ToolResults(f.ChatRequests())["c"]
	if !strings.Contains(r, "planted <nil>") || !strings.Contains(r, "made.txt (new)") || !strings.Contains(r, "skip-worktree") {
		t.Errorf("the call's result: %s", r)
	}
	if v := e2e.GitSh(t, root, gitEnv, "git ls-files -v a.txt"); !strings.HasPrefix(v, "H ") {
		t.Errorf("a.txt is still hidden from git: %q", v)
	}
}
