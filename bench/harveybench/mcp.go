package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// mcpServerPy is a stdio MCP server of one tool, in Python: what a small
// server of the user's costs to start (an interpreter, initialize,
// tools/list).
const mcpServerPy = `import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("id") is None:
        continue
    m, p = msg.get("method"), msg.get("params") or {}
    if m == "initialize":
        res = {"protocolVersion": p.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}}, "serverInfo": {"name": "bench", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": [{"name": "echo", "description": "Echo the text.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    elif m == "tools/call":
        res = {"content": [{"type": "text", "text": json.dumps(p.get("arguments"))}]}
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + "\n")
    sys.stdout.flush()
`

// mcpRow is a -p turn that calls no MCP tool with three servers configured
// (two that work, one that fails at once) against the same turn with none
// (issue 62's goal: at most 1.3×), after one session that started them.
func mcpRow(work, fake string) {
	ws := filepath.Join(work, "mcp")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "server.py"), []byte(mcpServerPy), 0o644)
	with, without := filepath.Join(work, "mcp-config"), filepath.Join(work, "mcp-none")
	os.MkdirAll(filepath.Join(with, "harvey"), 0o755)
	os.MkdirAll(filepath.Join(without, "harvey"), 0o755)
	os.WriteFile(filepath.Join(with, "harvey", "harvey.yaml"), []byte("mcp:\n  servers:\n"+
		"    a: {command: [python3, server.py]}\n    b: {command: [python3, server.py]}\n    broken: {command: [sh, -c, 'exit 3']}\n"), 0o644)
	data := filepath.Join(work, "mcp-data")
	run := func(cfg string) string {
		return fmt.Sprintf("env XDG_CONFIG_HOME=%s XDG_DATA_HOME=%s %s -p hello --model llama3.2 --ollama %s", cfg, data, *harvey, fake)
	}
	// The first session starts the servers and keeps what they offer.
	first := exec.Command("sh", "-c", run(with))
	first.Dir = ws
	first.Run()
	d := hyperfine(ws, run(with), run(without))
	r := ratio(d[0], d[1])
	add(row{"-p turn calling no MCP tool, 3 servers configured (1 failing), after their first session", ms(d[0]), "no servers " + ms(d[1]), fmt.Sprintf("%.2f×", r), "≤ 1.3×", yes(r <= 1.3)})
}
