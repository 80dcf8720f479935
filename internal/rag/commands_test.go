package rag

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/ollama"
	"github.com/harvey-agent/harvey/internal/wspath"
	"github.com/harvey-agent/harvey/internal/wsquery"
)

// ollamaOnly is an agent's embedder without the cloud providers: Ollama's
// batch endpoint, and a refusal for anything else.
func ollamaOnly(provider, baseURL, ollamaURL, model string) (wsquery.Embedder, error) {
	if provider != "" && provider != "ollama" {
		return nil, errors.New(provider + " offers no embeddings here")
	}
	return ollama.NewEmbedder(cmp.Or(baseURL, ollamaURL), model), nil
}

// ragEnv is a workspace with two documents and a secret, a config of the
// user's own in a fresh home, and a fake Ollama whose one embedding model
// is nomic-embed-text.
func ragEnv(t *testing.T) (Env, *fakeollama.Server) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
	dir := t.TempDir()
	for name, body := range map[string]string{
		"docs/deploy.md":  "Deploying the service: build the binary, copy it to the server, restart the service unit.\n",
		"docs/testing.md": "Testing: run the unit tests with go test, then the integration tests against the fake server.\n",
		"docs/secret.md":  "The deploy token is ghp_0123456789abcdefghijABCDEFGHIJ012345 for the service.\n",
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	tree, err := wspath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	cfg := config.Default()
	f := fakeollama.New(t, "llama3.2:latest", "nomic-embed-text:latest")
	var progress strings.Builder
	return Env{Tree: tree, Index: wsquery.New(tree, func() config.RagWorkspace { return cfg.RAG.Workspace }), Cfg: cfg, OllamaURL: f.URL(),
		GenModel: "llama3.2", Progress: &progress, Embedder: ollamaOnly}, f
}

func do(t *testing.T, env Env, line string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := Do(context.Background(), env, strings.Fields(line), &out)
	return out.String(), err
}

// A store's whole life through Do, as harvey rag and /rag run it: create,
// ingest through the path gate (redacted), query best first, use, on,
// the block before a turn, status, list, off, remove; each change saved
// in the user's own config.
func TestStoreLifecycle(t *testing.T) {
	env, f := ragEnv(t)
	if out, err := do(t, env, "create notes"); err != nil || !strings.Contains(out, "notes") {
		t.Fatalf("create: %q %v", out, err)
	}
	if out, err := do(t, env, "ingest docs --store notes"); err != nil || !strings.Contains(out, "3 files") {
		t.Fatalf("ingest: %q %v", out, err)
	}
	if out, err := do(t, env, "ingest nothing-here --store notes"); err != nil || !strings.Contains(out, "not found") {
		t.Errorf("ingest of a path that is not there: %q %v", out, err)
	}
	out, err := do(t, env, "query deploying the service binary --store notes")
	if err != nil || !strings.Contains(out, "deploy.md") || strings.Contains(out, "ghp_0123456789") {
		t.Fatalf("query: %q %v", out, err)
	}
	for _, line := range []string{"use notes", "on"} {
		if _, err := do(t, env, line); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	saved, _ := os.ReadFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "harvey", "harvey.yaml"))
	if !strings.Contains(string(saved), "active: notes") || !strings.Contains(string(saved), "enabled: true") {
		t.Errorf("the user's config:\n%s", saved)
	}
	var warned []string
	block := Retrieved(context.Background(), env, func(s string) { warned = append(warned, s) }, "how do I deploy the service binary?")
	if !strings.HasPrefix(block, "### Context (from knowledge base)") || !strings.Contains(block, "[docs/deploy.md:1-1]") || len(warned) > 0 {
		t.Errorf("the block before a turn: %q, warned %q", block, warned)
	}
	if len(f.EmbedTexts()) == 0 {
		t.Error("nothing was embedded")
	}
	for line, want := range map[string]string{"status notes": "store notes: model nomic-embed-text", "list": "notes"} {
		if out, err := do(t, env, line); err != nil || !strings.Contains(out, want) {
			t.Errorf("%s: %q %v", line, out, err)
		}
	}
	if _, err := do(t, env, "off"); err != nil || Retrieved(context.Background(), env, func(string) {}, "deploy") != "" {
		t.Errorf("off: %v", err)
	}
	if _, err := do(t, env, "remove notes"); err != nil {
		t.Errorf("remove: %v", err)
	}
	if _, err := do(t, env, "use notes"); err == nil {
		t.Error("a removed store is still there")
	}
}

// Usage errors start with "usage: " (harvey rag exits 2 on them).
func TestUsageErrors(t *testing.T) {
	env, _ := ragEnv(t)
	for _, line := range []string{"", "bogus", "use", "ingest docs", "ingest --store workspace docs"} {
		if _, err := do(t, env, line); err == nil || !strings.HasPrefix(err.Error(), "usage: ") {
			t.Errorf("%q: %v", line, err)
		}
	}
}

// RAG on with no active store is said, and the turn goes on without it.
func TestRetrievedSaysWhatIsMissing(t *testing.T) {
	env, _ := ragEnv(t)
	env.Cfg.RAG.Enabled = true
	var warned []string
	if block := Retrieved(context.Background(), env, func(s string) { warned = append(warned, s) }, "x"); block != "" || len(warned) != 1 || !strings.Contains(warned[0], "no store is active") {
		t.Errorf("block %q, warned %q", block, warned)
	}
}

// The workspace index gains embeddings (ingest --store workspace), and a
// query of it fuses them; status says the model and how many chunks.
func TestWorkspaceEmbeddings(t *testing.T) {
	env, _ := ragEnv(t)
	if _, err := do(t, env, "ingest --store workspace"); err != nil {
		t.Fatalf("ingest --store workspace: %v", err)
	}
	out, err := do(t, env, "query integration tests")
	if err != nil || !strings.Contains(out, "testing.md") {
		t.Fatalf("query of the workspace: %q %v", out, err)
	}
	if out, err := do(t, env, "status"); err != nil || !strings.Contains(out, "workspace embeddings: nomic-embed-text") {
		t.Errorf("status: %q %v", out, err)
	}
	if out, err := do(t, env, "query --json integration tests"); err != nil || !strings.HasPrefix(strings.TrimSpace(out), "{") && !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Errorf("query --json: %q %v", out, err)
	}
}
