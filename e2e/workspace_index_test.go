// Feature: the workspace index through the built binary: find_code and
// harvey rag query, embeddings from another provider, where the index
// stops, a home's projects before its caches.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/fakeopenai"
)

// harvey rag query on a fresh workspace, through the built binary (issue
// 36, the workspace store): a question in plain words finds the file that
// defines the function, with no embedding model and no setup; a secret in
// a workspace file never reaches the index's bytes; a denied file is never
// returned, and a file hidden by permissions: after indexing is not
// returned either.
func TestEndToEndWorkspaceQuery(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir := t.TempDir()
	secret := "sk-proj-" + strings.Repeat("Q7", 20)
	WriteFile(t, dir, "internal/cfg/load.go", "package cfg\n\n// parseConfigFile reads the settings from a file on disk.\nfunc parseConfigFile(path string) (map[string]string, error) {\n\treturn nil, nil\n}\n")
	WriteFile(t, dir, "internal/net/serve.go", "package net\n\n// startServer listens for requests.\nfunc startServer(addr string) error { return nil }\n")
	WriteFile(t, dir, "internal/keys/keys.go", "package keys\n\n// openaiKey is the config file key used by the client.\nconst openaiKey = \""+secret+"\"\n")
	WriteFile(t, dir, ".env", "CONFIG_FILE_PARSER_TOKEN="+secret+"\n")
	WriteFile(t, dir, "private/notes.md", "# Notes\n\nparse config file notes nobody may read\n")
	WriteFile(t, dir, "vendor.txt", "config config config file\n")
	WriteFile(t, dir, ".gitignore", "vendor.txt\n")
	out, errOut, code := Run(t, bin, dir, "", "rag", "query", "where is the config file parsed?", "--json")
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
	out, _, _ = Run(t, bin, dir, "", "rag", "query", "notes nobody may read")
	if !strings.Contains(out, "private/notes.md") {
		t.Fatalf("before hiding: %s", out)
	}
	WriteFile(t, dir, "agents/harvey.yaml", "permissions:\n  \".\": [read, write, exec, delete]\n  private: []\n")
	out, errOut, code = Run(t, bin, dir, "", "rag", "query", "notes nobody may read")
	if code != 0 || strings.Contains(out, "private/notes.md") {
		t.Fatalf("a file hidden after indexing was returned: %s %s", out, errOut)
	}
}

// The workspace embedded too, through the built binary against the fake
// Ollama's /api/embed: status says there are no embeddings; ingest
// --store workspace embeds every chunk (redacted: no secret is ever sent)
// and saves the model in your config; a query then fuses both rankings
// (reciprocal rank fusion's scores) and embeds only the chunks of a file
// that changed; with the embedding server gone, the query still answers
// from the lexical ranking alone and status says why.
func TestEndToEndWorkspaceEmbedded(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	dir, cfg := t.TempDir(), t.TempDir()
	secret := "sk-proj-" + strings.Repeat("Z9", 20)
	WriteFile(t, dir, "internal/cfg/load.go", "package cfg\n\n// parseConfigFile reads the settings from a file on disk.\nfunc parseConfigFile(path string) (map[string]string, error) {\n\treturn nil, nil\n}\n")
	WriteFile(t, dir, "internal/net/serve.go", "package net\n\n// startServer listens for requests on the network.\nfunc startServer(addr string) error { return nil }\n")
	WriteFile(t, dir, "internal/keys/keys.go", "package keys\n\n// apiKey is the key the client sends.\nconst apiKey = \""+secret+"\"\n")
	WriteFile(t, dir, "docs/deploy.md", "# Deploying\n\nThe service is deployed with the blue green strategy every Friday afternoon.\n")
	env := []string{"XDG_CONFIG_HOME=" + cfg, "OLLAMA_HOST=" + f.URL()}
	h := func(args ...string) (string, string, int) { return RunEnv(t, bin, dir, "", env, args...) }
	type hit struct {
		Source string  `json:"source"`
		Score  float64 `json:"score"`
	}
	query := func(q string) []hit {
		t.Helper()
		out, errOut, code := h("rag", "query", q, "--json")
		var hits []hit
		if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) == 0 {
			t.Fatalf("query %q: exit %d\n%s\n%s", q, code, out, errOut)
		}
		return hits
	}
	if out, _, _ := h("rag", "status"); !strings.Contains(out, "workspace: not indexed yet") || !strings.Contains(out, "workspace embeddings: none") {
		t.Fatalf("status before: %s", out)
	}
	if _, err := os.Lstat(filepath.Join(dir, "agents", "index.db")); err == nil {
		t.Fatal("status created the index")
	}
	lexical := query("when is the service deployed")
	if lexical[0].Source != "docs/deploy.md" || lexical[0].Score < 0.1 {
		t.Fatalf("lexical: %+v", lexical)
	}
	out, errOut, code := h("rag", "ingest", "--store", "workspace")
	if code != 0 || !strings.Contains(out, "embedded with nomic-embed-text, 0 already were") || !strings.Contains(errOut, "chunks") {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	sent := f.EmbedTexts()
	if len(sent) < 4 {
		t.Fatalf("embedded %d texts", len(sent))
	}
	for _, s := range sent {
		if strings.Contains(s, "Z9Z9Z9") {
			t.Fatal("a secret was sent to the embedding model")
		}
	}
	// The choice is this workspace's (issue 49): your config is not
	// changed, and another workspace's query embeds nothing and ranks
	// lexically as before.
	if b, _ := os.ReadFile(filepath.Join(cfg, "harvey", "harvey.yaml")); strings.Contains(string(b), "embedding_model") {
		t.Fatalf("the ingest changed your config: %s", b)
	}
	other := t.TempDir()
	WriteFile(t, other, "docs/deploy.md", "# Deploying\n\nThe service is deployed with the blue green strategy every Friday afternoon.\n")
	WriteFile(t, other, "notes.md", "# Notes\n\nNothing about shipping here.\n")
	embeddedBefore := len(f.EmbedTexts())
	if out, errOut, code := RunEnv(t, bin, other, "", env, "rag", "query", "when is the service deployed", "--json"); code != 0 || !strings.Contains(out, `"score"`) || len(f.EmbedTexts()) != embeddedBefore || strings.Contains(out, "chunks_embedded") {
		t.Fatalf("another workspace: exit %d, %d texts embedded\n%s\n%s", code, len(f.EmbedTexts())-embeddedBefore, out, errOut)
	}
	if out, _, _ := h("rag", "status", "workspace"); !strings.Contains(out, "nomic-embed-text") || !strings.Contains(out, "the model answers") || !strings.Contains(out, "chunks embedded") {
		t.Fatalf("status after: %s", out)
	}
	if out, _, _ := h("rag", "list"); !strings.Contains(out, "fused with nomic-embed-text embeddings") {
		t.Fatalf("rag list does not name this workspace's embeddings: %s", out)
	}
	if out, _, _ := h("rag", "query", "when is the service deployed", "--json"); !strings.Contains(out, `"chunks_embedded": `) {
		t.Fatalf("query --json does not say how much is embedded: %s", out)
	}
	fused := query("when is the service deployed")
	if fused[0].Source != "docs/deploy.md" || fused[0].Score > 2.0/61+1e-9 || fused[0].Score < 1.0/61-1e-9 {
		t.Fatalf("fused: %+v (reciprocal rank fusion scores lie in 1/61..2/61)", fused)
	}
	// One file changes: the next query embeds its chunk (and the question) only.
	before := len(f.EmbedTexts())
	changed := "package net\n\n// startServer listens for requests on the network and logs them.\nfunc startServer(addr string) error { return nil }\n"
	WriteFile(t, dir, "internal/net/serve.go", changed)
	query("which function listens for network requests")
	got := f.EmbedTexts()[before:]
	if len(got) < 2 || got[len(got)-1] != "which function listens for network requests" || !strings.Contains(strings.Join(got, ""), "logs them") {
		t.Fatalf("after one change the query embedded %q", got)
	}
	for _, s := range got[:len(got)-1] {
		if !strings.Contains(changed, s) {
			t.Fatalf("a chunk of an unchanged file was embedded again: %q", s)
		}
	}
	// The embedding server gone: lexical alone, and status says so.
	env[1] = "OLLAMA_HOST=http://127.0.0.1:1"
	if again := query("when is the service deployed"); again[0].Source != "docs/deploy.md" || again[0].Score < 0.1 {
		t.Fatalf("without the embedding server: %+v, want a lexical (BM25) ranking as %+v", again, lexical)
	}
	if out, _, _ := h("rag", "status", "workspace"); !strings.Contains(out, "not answering, so queries rank lexically alone") {
		t.Fatalf("status without the server: %s", out)
	}
}

// A RAG store embedded by another provider through any-llm-go (an
// OpenAI-compatible server's /v1/embeddings): ingest and query work as
// with Ollama.
func TestRagStoreOtherProvider(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	o := fakeopenai.New(t)
	dir, cfg := t.TempDir(), t.TempDir()
	WriteFile(t, dir, "docs/deploy.md", "# Deploy\n\nThe service is deployed with the blue green strategy every Friday afternoon.\n")
	WriteFile(t, dir, "docs/cats.md", "# Cats\n\nCats sleep most of the day and purr loudly.\n")
	WriteFile(t, cfg, "harvey/harvey.yaml", "rag:\n  active: notes\n  stores:\n    - name: notes\n      db_path: rag/notes.db\n      embedding_model: text-embedding-3-small\n      provider: openai-compatible\n      base_url: "+o.URL()+"\n")
	env := []string{"XDG_CONFIG_HOME=" + cfg, "OLLAMA_HOST=http://127.0.0.1:1"}
	h := func(args ...string) (string, string, int) { return RunEnv(t, bin, dir, "", env, args...) }
	if out, errOut, code := h("rag", "ingest", "docs"); code != 0 || !strings.Contains(out, "2 files embedded") {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	out, errOut, code := h("rag", "query", "how is the service deployed", "--store", "notes", "--json")
	var hits []struct {
		Source string `json:"source"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) == 0 || hits[0].Source != "docs/deploy.md" {
		t.Fatalf("query: %d %s %s", code, out, errOut)
	}
}

// The index knows where to stop (issue 49): started in a tree holding
// dependency directories, a mounted proc and a tmpfs (where the test may
// mount: as root), and more files than its cap, it enters none of them,
// stays under the cap and says so; a workspace that is the home directory
// is refused headless, naming the setting.
func TestEndToEndIndexKnowsWhereToStop(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir, cfg := t.TempDir(), t.TempDir()
	WriteFile(t, cfg, "harvey/harvey.yaml", "rag:\n  workspace:\n    max_files: 40\n")
	for i := range 60 {
		WriteFile(t, dir, fmt.Sprintf("src/f%02d.go", i), fmt.Sprintf("package src\n\n// F%d is part of the project.\nfunc F%d() {}\n", i, i))
	}
	WriteFile(t, dir, "node_modules/left/index.js", "// zebrafinch in a dependency\n")
	WriteFile(t, dir, "rs/Cargo.toml", "[package]\nname = \"rs\"\n")
	WriteFile(t, dir, "rs/target/debug/build.rs", "// zebrafinch in build output\n")
	WriteFile(t, dir, "vendor/modules.txt", "# example.com/x v1.0.0\n")
	WriteFile(t, dir, "vendor/example.com/x/x.go", "package x // zebrafinch vendored\n")
	WriteFile(t, dir, "cmd/dist/dist.go", "package main // zebrafinch in a source directory named dist\n")
	mounted := []string{}
	if os.Geteuid() == 0 {
		for _, m := range [][2]string{{"proc", "proc"}, {"tmp", "tmpfs"}} {
			p := filepath.Join(dir, "mnt", m[0])
			os.MkdirAll(p, 0o755)
			if mountForTest(t, m[1], p) {
				mounted = append(mounted, p)
			}
		}
		if len(mounted) == 2 {
			os.WriteFile(filepath.Join(mounted[1], "z.go"), []byte("package z // zebrafinch on a tmpfs\n"), 0o644)
		}
	}
	out, errOut, code := RunEnv(t, bin, dir, "", []string{"XDG_CONFIG_HOME=" + cfg}, "rag", "query", "zebrafinch", "--store", "workspace", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "cmd/dist/dist.go") {
		t.Errorf("a source directory named dist was left out: %s", out)
	}
	for _, p := range []string{"node_modules", "rs/target", "vendor/", "mnt/"} {
		if strings.Contains(out, p) {
			t.Errorf("the index entered %s: %s", p, out)
		}
	}
	if !strings.Contains(errOut, "stopped at its cap of 40 files") || !strings.Contains(errOut, "The workspace index left out") || !strings.Contains(errOut, "of dependencies or build output (") || !strings.Contains(errOut, "node_modules") {
		t.Errorf("what was left out is not said: %q", errOut)
	}
	if len(mounted) == 2 && !strings.Contains(errOut, "another filesystem") {
		t.Errorf("the mounts are not named: %q", errOut)
	}
	// The home directory: refused headless, naming the setting.
	_, errOut, code = RunEnv(t, bin, dir, "", []string{"XDG_CONFIG_HOME=" + cfg, "HOME=" + dir}, "rag", "query", "zebrafinch", "--store", "workspace")
	if code == 0 || !strings.Contains(errOut, "index_home: true") {
		t.Errorf("the home directory was indexed: exit %d %q", code, errOut)
	}
}

// The home's index (issue 55): caches and toolchains are left out by what
// they are, projects come first, and a query for a project's function
// finds it with a full build cache beside it, under a cap the cache alone
// would fill.
func TestHomeIndexFindsProjectsNotCaches(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	home, cfg := t.TempDir(), t.TempDir()
	WriteFile(t, cfg, "harvey/harvey.yaml", "rag:\n  workspace:\n    index_home: true\n    max_files: 30\n")
	for i := range 60 {
		WriteFile(t, home, fmt.Sprintf(".cache/go-build/%02x/%064x-a", i, i), "package cached // parseZebra in a build cache\n")
		WriteFile(t, home, fmt.Sprintf("go/pkg/mod/cache/download/example.com/m%d/@v/v1.0.0.info", i), "{}\n")
	}
	WriteFile(t, home, "tool/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")
	WriteFile(t, home, "tool/blob.go", "package blob // parseZebra in a tagged cache\n")
	WriteFile(t, home, "proj/zebra.go", "package proj\n\n// parseZebra reads the zebra file.\nfunc parseZebra() {}\n")
	out, errOut, code := RunEnv(t, bin, home, "", []string{"XDG_CONFIG_HOME=" + cfg, "HOME=" + home}, "rag", "query", "parseZebra", "--store", "workspace", "--json")
	if code != 0 || !strings.Contains(out, "proj/zebra.go") {
		t.Fatalf("the project's function was not found: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, p := range []string{".cache/", "go/pkg/mod", "tool/blob.go"} {
		if strings.Contains(out, p) {
			t.Errorf("the index holds %s: %s", p, out)
		}
	}
	if !strings.Contains(errOut, "of caches and toolchains (") || !strings.Contains(errOut, ".cache") {
		t.Errorf("what was left out is not named: %q", errOut)
	}
}
