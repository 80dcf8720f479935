// Feature: harvey rag's stores through the built binary: create, ingest,
// query, use, on and off, against the fake Ollama's embedding model.
package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// The original Harvey's RAG end to end through the built binary, against
// the fake Ollama's embedding endpoint: a store is created bound to its
// model, workspace files ingested (a denied one skipped, a secret redacted
// before it is embedded), queried; with RAG on, a turn's user message
// carries the "### Context (from knowledge base)" block with each chunk's
// source (and nothing when no chunk passes 0.3), the earlier messages stay
// as they were (append-only); another embedding model is refused, naming
// both; ingesting again embeds only what changed.
func TestEndToEndRagStores(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	dir, cfg := t.TempDir(), t.TempDir()
	WriteFile(t, dir, "docs/deploy.md", "# Deploy\n\nThe service is deployed with the blue green strategy every Friday afternoon.\n")
	WriteFile(t, dir, "docs/cats.md", "# Cats\n\nCats sleep most of the day and purr loudly.\n")
	WriteFile(t, dir, "docs/keys.md", "# Keys\n\nThe deploy token is API_TOKEN=ghp_"+strings.Repeat("K", 36)+"\n")
	WriteFile(t, dir, ".env", "DEPLOY_PASSWORD=hunter2hunter2\n")
	env := []string{"XDG_CONFIG_HOME=" + cfg}
	h := func(args ...string) (string, string, int) {
		return RunEnv(t, bin, dir, "", append(env, "OLLAMA_HOST="+f.URL()), args...)
	}
	// Bad usage exits 2, as the README says (issue 49).
	for _, args := range [][]string{{"rag"}, {"rag", "bogus"}, {"rag", "query"}, {"rag", "use"}} {
		if _, errOut, code := h(args...); code != 2 || !strings.Contains(errOut, "usage: ") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
	// A model the server does not have: refused at create, with the
	// command that installs it (issue 49).
	if _, errOut, code := h("rag", "create", "other", "--model", "all-minilm"); code == 0 || !strings.Contains(errOut, "ollama pull all-minilm") {
		t.Fatalf("create with a missing model: %d %s", code, errOut)
	}
	if out, errOut, code := h("rag", "create", "notes"); code != 0 || !strings.Contains(out, "bound to nomic-embed-text") {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	out, errOut, code := h("rag", "ingest", "docs", ".env")
	if code != 0 || !strings.Contains(out, "notes: 3 files, 3 files embedded") || !strings.Contains(out, "1 denied or hidden") {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	db, _ := os.ReadFile(filepath.Join(cfg, "harvey", "rag", "notes.db"))
	if len(db) == 0 || strings.Contains(string(db), "KKKKKKKK") || strings.Contains(string(db), "hunter2") {
		t.Fatal("a secret reached the store, or no store")
	}
	out, _, code = h("rag", "query", "how is the service deployed", "--store", "notes", "--json")
	var hits []struct {
		Source string  `json:"source"`
		Score  float64 `json:"score"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) == 0 || hits[0].Source != "docs/deploy.md" {
		t.Fatalf("query: %s", out)
	}
	if out, _, _ := h("rag", "ingest", "docs"); !strings.Contains(out, "0 files embedded") || !strings.Contains(out, "3 unchanged") {
		t.Fatalf("ingest again: %s", out)
	}
	if out, _, code := h("rag", "on"); code != 0 || !strings.Contains(out, "RAG is on") {
		t.Fatalf("on: %s", out)
	}
	f.Script(fakeollama.TextReply("llama3.2", "Blue green."), fakeollama.TextReply("llama3.2", "Purring."), fakeollama.TextReply("llama3.2", "No idea."),
		fakeollama.TextReply("llama3.2", "Fridays."), fakeollama.TextReply("llama3.2", "Loudly."))
	WriteFile(t, dir, "turns.txt", "how is the service deployed?\nwhat do cats do all day?\nquantum chromodynamics lattice\nwhen is the service deployed?\nhow do cats purr?\n")
	if out, errOut, code := h("--run", "turns.txt", "--model", "llama3.2"); code != 0 {
		t.Fatalf("turns: %d %s %s", code, out, errOut)
	}
	reqs := f.ChatRequests()
	last := func(i int) string {
		m := fakeollama.MessagesOf(reqs[i])
		return m[len(m)-1]["content"].(string)
	}
	if u := last(0); !strings.Contains(u, "### Context (from knowledge base)") || !strings.Contains(u, "[docs/deploy.md:") || !strings.HasSuffix(u, "how is the service deployed?") {
		t.Fatalf("turn 1's message: %q", u)
	}
	if u := last(2); strings.Contains(u, "### Context") {
		t.Fatalf("a block with no chunk above 0.3: %q", u)
	}
	// Append-only over five turns: each request begins with the one
	// before it.
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := fakeollama.MessagesOf(reqs[i-1]), fakeollama.MessagesOf(reqs[i])
		for j := range prev {
			if MustJSON(prev[j]) != MustJSON(cur[j]) {
				t.Fatalf("request %d changed message %d of the one before", i, j)
			}
		}
	}
	// A file hidden after ingest (permissions: in your config) never
	// reaches the model through the store; the store's chunks never reach
	// another workspace's turns, though a file there has the same path
	// (issue 45).
	cfgFile := filepath.Join(cfg, "harvey", "harvey.yaml")
	b, _ := os.ReadFile(cfgFile)
	os.WriteFile(cfgFile, append(b, []byte("permissions:\n  \".\": [read, write, exec, delete]\n  docs/deploy.md: []\n")...), 0o600)
	f.Script(fakeollama.TextReply("llama3.2", "Hidden."))
	WriteFile(t, dir, "turn2.txt", "how is the service deployed?\n")
	if out, errOut, code := h("--run", "turn2.txt", "--model", "llama3.2"); code != 0 {
		t.Fatalf("turn after hiding: %d %s %s", code, out, errOut)
	}
	reqs = f.ChatRequests()
	if u := last(len(reqs) - 1); strings.Contains(u, "blue green") || strings.Contains(u, "docs/deploy.md") {
		t.Fatalf("a file hidden after ingest reached the model: %q", u)
	}
	os.WriteFile(cfgFile, b, 0o600)
	other := t.TempDir()
	WriteFile(t, other, "docs/deploy.md", "# Deploy\n\nSomething else entirely.\n")
	WriteFile(t, other, "turn.txt", "how is the service deployed?\n")
	f.Script(fakeollama.TextReply("llama3.2", "Elsewhere."))
	_, errOut, code = RunEnv(t, bin, other, "", append(env, "OLLAMA_HOST="+f.URL()), "--run", "turn.txt", "--model", "llama3.2")
	reqs = f.ChatRequests()
	if u := last(len(reqs) - 1); code != 0 || strings.Contains(u, "### Context") || !strings.Contains(errOut, "holds the files of "+dir) {
		t.Fatalf("another workspace: exit %d, message %q, stderr %s", code, u, errOut)
	}
	if _, errOut, code := RunEnv(t, bin, other, "", append(env, "OLLAMA_HOST="+f.URL()), "rag", "ingest", "docs"); code == 0 || !strings.Contains(errOut, "harvey rag create") {
		t.Fatalf("ingest from another workspace: %d %s", code, errOut)
	}
	// Another embedding model for the same store: refused, naming both.
	b, _ = os.ReadFile(cfgFile)
	os.WriteFile(cfgFile, []byte(strings.Replace(string(b), "embedding_model: nomic-embed-text", "embedding_model: all-minilm", 1)), 0o600)
	if _, errOut, code := h("rag", "ingest", "docs"); code == 0 || !strings.Contains(errOut, "nomic-embed-text") || !strings.Contains(errOut, "all-minilm") {
		t.Fatalf("another model: %d %s", code, errOut)
	}
}
