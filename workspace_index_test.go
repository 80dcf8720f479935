package harvey

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// harvey rag query on a fresh workspace, through the built binary (issue
// 36, the workspace store): a question in plain words finds the file that
// defines the function, with no embedding model and no setup; a secret in
// a workspace file never reaches the index's bytes; a denied file is never
// returned, and a file hidden by permissions: after indexing is not
// returned either.
func TestEndToEndWorkspaceQuery(t *testing.T) {
	t.Parallel()
	bin := buildHarvey(t)
	dir := t.TempDir()
	secret := "sk-proj-" + strings.Repeat("Q7", 20)
	writeFile(t, dir, "internal/cfg/load.go", "package cfg\n\n// parseConfigFile reads the settings from a file on disk.\nfunc parseConfigFile(path string) (map[string]string, error) {\n\treturn nil, nil\n}\n")
	writeFile(t, dir, "internal/net/serve.go", "package net\n\n// startServer listens for requests.\nfunc startServer(addr string) error { return nil }\n")
	writeFile(t, dir, "internal/keys/keys.go", "package keys\n\n// openaiKey is the config file key used by the client.\nconst openaiKey = \""+secret+"\"\n")
	writeFile(t, dir, ".env", "CONFIG_FILE_PARSER_TOKEN="+secret+"\n")
	writeFile(t, dir, "private/notes.md", "# Notes\n\nparse config file notes nobody may read\n")
	writeFile(t, dir, "vendor.txt", "config config config file\n")
	writeFile(t, dir, ".gitignore", "vendor.txt\n")
	out, errOut, code := runHarvey(t, bin, dir, "", "rag", "query", "where is the config file parsed?", "--json")
	var hits []struct {
		Source    string  `json:"source"`
		StartLine int     `json:"start_line"`
		EndLine   int     `json:"end_line"`
		Score     float64 `json:"score"`
		Text      string  `json:"text"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) == 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if hits[0].Source != "internal/cfg/load.go" || hits[0].StartLine != 3 || !strings.Contains(hits[0].Text, "func parseConfigFile") {
		t.Fatalf("first hit: %+v", hits[0])
	}
	for _, h := range hits {
		if h.Source == ".env" || h.Source == "vendor.txt" || strings.Contains(h.Text, secret) {
			t.Errorf("returned %s: %q", h.Source, h.Text)
		}
	}
	db, err := os.ReadFile(filepath.Join(dir, "agents", "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(filepath.Join(dir, "agents", "index.db-wal"))
	if bytes.Contains(db, []byte(secret)) || bytes.Contains(wal, []byte(secret)) || bytes.Contains(append(db, wal...), []byte("Q7Q7Q7Q7")) {
		t.Fatal("a secret reached the index's bytes")
	}
	// Hidden after indexing (permissions: may be tightened without a
	// confirmation): no longer returned.
	out, _, _ = runHarvey(t, bin, dir, "", "rag", "query", "notes nobody may read")
	if !strings.Contains(out, "private/notes.md") {
		t.Fatalf("before hiding: %s", out)
	}
	writeFile(t, dir, "agents/harvey.yaml", "permissions:\n  \".\": [read, write, exec, delete]\n  private: []\n")
	out, errOut, code = runHarvey(t, bin, dir, "", "rag", "query", "notes nobody may read")
	if code != 0 || strings.Contains(out, "private/notes.md") {
		t.Fatalf("a file hidden after indexing was returned: %s %s", out, errOut)
	}
}

// find_code through the tool loop: a small model asks in plain words and
// gets the defining piece with its file and lines, within the budget; a
// denied file's text never comes back.
func TestFindCodeTool(t *testing.T) {
	f := newFakeOllama(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	writeFile(t, env.dir, "internal/cfg/load.go", "package cfg\n\n// parseConfigFile reads the settings from a file on disk.\nfunc parseConfigFile(path string) (map[string]string, error) {\n\treturn nil, nil\n}\n")
	writeFile(t, env.dir, ".env", "PARSE_CONFIG_FILE_TOKEN=hunter2hunter2\n")
	f.script(toolReply("llama3.2", fakeCall{id: "f1", name: "find_code", args: map[string]any{"question": "where is the config file parsed"}}), textReply("llama3.2", "In load.go."))
	if err := env.a.RunPrompt(t.Context(), "where is the config parsed?"); err != nil {
		t.Fatal(err)
	}
	r := toolResults(f.chatRequests())["f1"]
	if !strings.Contains(r, "internal/cfg/load.go:3-6") || !strings.Contains(r, "func parseConfigFile") || strings.Contains(r, "hunter2") || len(r) > findBudget+500 {
		t.Fatalf("find_code: %s", r)
	}
}
