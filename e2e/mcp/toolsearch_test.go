package mcp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// toolTokens is what a request's tools take, as Harvey estimates it (4
// bytes a token).
func toolTokens(tools []any) int {
	b, _ := json.Marshal(tools)
	return len(b) / 4
}

// 120 MCP tools on a 4k window (issue 77): the first request carries the
// tools that fit and tool_search, fewer tool tokens than the budget's
// fill of MCP tools alone took; a scripted model searches, the tool that
// did not fit is found (its signature in the result), called, and reaches
// the server; the next request's tools field carries it.
func TestEndToEndToolSearchReachesWhatDidNotFit(t *testing.T) {
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	for _, window := range []int{4096, 8192} {
		t.Run(fmt.Sprint(window), func(t *testing.T) { toolSearchIn(t, bin, window) })
	}
}

func toolSearchIn(t *testing.T, bin string, window int) {
	root := t.TempDir()
	dir, cfg := filepath.Join(root, "ws"), filepath.Join(root, "config")
	os.MkdirAll(dir, 0o755)
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("num_ctx: %d\nsandbox:\n  readable: [%q]\nmcp:\n  servers:\n    many:\n      command: [%q]\n      env: {HARVEY_TEST_HELPER: mcp-many}\n      read_only: [zz_create_invoice]\n",
		window, filepath.Dir(os.Args[0]), os.Args[0]))
	env := []string{"XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + filepath.Join(root, "data")}
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "s", Name: "tool_search", Args: map[string]any{"query": "create an invoice for a customer"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c", Name: "many__zz_create_invoice", Args: map[string]any{"customer": "ACME", "amount": 12}}),
		fakeollama.TextReply("llama3.2", "Done."))
	out, errOut, code := e2e.RunKernel(t, "", bin, dir, "", env, "-p", "bill ACME 12", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	reqs := f.ChatRequests()
	if code != 0 || len(reqs) != 3 {
		t.Fatalf("exit %d, %d requests: %s %s", code, len(reqs), out, errOut)
	}
	first := fakeollama.ToolNamesOf(reqs[0])
	if !slices.Contains(first, "tool_search") || slices.Contains(first, "many__zz_create_invoice") || !slices.Contains(first, "read_file") {
		t.Fatalf("the first request's tools: %v", first)
	}
	// What the budget alone gave before: the tools that are not MCP's, then
	// the server's tools in name order while a quarter of the window lasts.
	// One of the server's records tools as Harvey sends it: the shape of
	// the invoice tool the last request carries, with a records tool's
	// name, description and parameters.
	tools, _ := reqs[0]["tools"].([]any)
	var core []any
	for _, tl := range tools {
		if name := fakeollama.ToolNamesOf(map[string]any{"tools": []any{tl}})[0]; !strings.HasPrefix(name, "many__") && name != "tool_search" {
			core = append(core, tl)
		}
	}
	var one map[string]any
	for _, tl := range reqs[2]["tools"].([]any) {
		if fakeollama.ToolNamesOf(map[string]any{"tools": []any{tl}})[0] == "many__zz_create_invoice" {
			b, _ := json.Marshal(tl)
			json.Unmarshal(b, &one)
		}
	}
	fn, _ := one["function"].(map[string]any)
	if fn == nil {
		t.Fatalf("the found tool is not in the last request: %v", fakeollama.ToolNamesOf(reqs[2]))
	}
	fn["name"], fn["description"] = "many__records_000", "Operation 0 on the records of the index."
	fn["parameters"] = map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string", "description": "Record id"}}, "required": []any{"id"}}
	before := core
	for toolTokens(append(before, one)) <= window/4 {
		before = append(before, one)
	}
	now, then := toolTokens(tools), toolTokens(before)
	if now >= then {
		t.Errorf("the first request carries %d tool tokens; the budget's fill alone took %d", now, then)
	}
	t.Logf("%d-token window: the first request's tools take ~%d tokens (%d tools); the budget's fill alone took ~%d (%d tools)", window, now, len(tools), then, len(before))
	res := fakeollama.ToolResults(reqs)
	if !strings.Contains(res["s"], "many__zz_create_invoice(amount: integer, customer: string)") {
		t.Errorf("the search: %s", res["s"])
	}
	if !strings.Contains(res["c"], `reached zz_create_invoice with {"amount":12,"customer":"ACME"}`) {
		t.Errorf("the call did not reach the server: %s", res["c"])
	}
	if n := fakeollama.ToolNamesOf(reqs[2]); !slices.Contains(n, "many__zz_create_invoice") {
		t.Errorf("the next request's tools: %v", n)
	}
}
