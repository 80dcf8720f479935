package rag

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/ragstore"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/walk"
	"github.com/harvey-agent/harvey/internal/wsindex"
	"github.com/harvey-agent/harvey/internal/wspath"
	"github.com/harvey-agent/harvey/internal/wsquery"
	"gopkg.in/yaml.v3"
)

// ragTopK, ragMinScore and ragContextBudget are the retrieval before a
// turn: at most 5 chunks, each above 0.3, within about 1,000 tokens (a
// Raspberry Pi evaluates that in seconds).
const (
	ragTopK          = 5
	ragMinScore      = 0.3
	ragContextBudget = 4 << 10
)

// NewEmbedder makes the embedder for model run by provider ("" or ollama:
// Ollama's batch endpoint at ollamaURL; any other: its any-llm-go provider,
// when that provider offers embeddings, at baseURL or its default). The
// agent's (the one embeddings client, beside its chat clients).
type NewEmbedder func(provider, baseURL, ollamaURL, model string) (wsquery.Embedder, error)

// WorkspaceEmbedder chooses the workspace index's embedder: the model your
// config names for every workspace (rag.workspace.embedding_model), or
// else the one this workspace's index was embedded with (harvey rag
// ingest --store workspace binds it, for this workspace only); nil when
// neither names one, or its provider cannot embed.
func WorkspaceEmbedder(rc config.RagConfig, ollamaURL string, newEmbedder NewEmbedder) func(bound string) wsquery.Embedder {
	return func(bound string) wsquery.Embedder {
		w := rc.Workspace
		model := cmp.Or(w.EmbeddingModel, bound)
		if model == "" {
			return nil
		}
		emb, err := newEmbedder(w.Provider, w.BaseURL, ollamaURL, model)
		if err != nil {
			return nil
		}
		return emb
	}
}

// embedder is the store's embedder for the session's generation model.
func storeEmbedder(s config.RagStoreEntry, ollamaURL, genModel string, newEmbedder NewEmbedder) (wsquery.Embedder, error) {
	return newEmbedder(s.Provider, s.BaseURL, ollamaURL, s.EmbeddingModelFor(genModel))
}

// newProgress shows work done of total on w: a bar redrawn in place on a
// terminal, plain lines at each tenth elsewhere (a log keeps no \r), and
// the end on a line of its own either way.
func newProgress(w io.Writer, what string) func(done, total int) {
	tty := termtext.IsTTY(w)
	last := -1
	return func(done, total int) {
		if w == nil || total <= 0 {
			return
		}
		switch {
		case tty && done*100/total == last && done != total:
			// redrawn when the percentage moves
		case tty:
			last = done * 100 / total
			fill := 30 * done / total
			fmt.Fprintf(w, "\r  [%s%s] %d/%d %s", strings.Repeat("#", fill), strings.Repeat(".", 30-fill), done, total, what)
			if done == total {
				fmt.Fprintln(w)
			}
		case done*10/total > last:
			last = done * 10 / total
			fmt.Fprintf(w, "  %d/%d %s\n", done, total, what)
		}
	}
}

// slowOnly passes progress on once a second has passed since the first
// report: a sync that finishes quickly (an index already up to date) shows
// nothing.
func slowOnly(show func(done, total int)) func(done, total int) {
	var start time.Time
	return func(done, total int) {
		if start.IsZero() {
			start = time.Now()
		}
		if time.Since(start) >= time.Second {
			show(done, total)
		}
	}
}

// ragPath is a store's database path (~ expanded; relative to the user's
// config directory).
func ragPath(p string) string {
	home, _ := os.UserHomeDir()
	p = datadir.ExpandHome(p, home)
	if !filepath.IsAbs(p) {
		p = filepath.Join(configfile.UserDir(), p)
	}
	return p
}

// Retrieved is the block added to the user's message before a turn
// (empty when RAG is off or no chunk qualifies). A failure is said once
// and the turn goes on without it.
func Retrieved(ctx context.Context, env Env, warn func(string), prompt string) string {
	rc := env.Cfg.RAG.Normalized()
	if !rc.Enabled {
		return ""
	}
	entry, ok := rc.Store("")
	if !ok {
		warn("· RAG is on but no store is active (harvey rag use NAME)")
		return ""
	}
	emb, err := storeEmbedder(entry, env.OllamaURL, env.GenModel, env.Embedder)
	block := ""
	if err == nil {
		block, err = retrieve(ctx, env.Tree, entry, emb, prompt)
	}
	if err != nil {
		warn("· RAG: " + termtext.OneLine(err.Error()) + " (the turn goes on without it)")
	}
	return block
}

// retrieve embeds q and renders the chunks of the store that qualify: a
// store made in another workspace gives none (its paths mean nothing
// here, and that workspace's policy is not this one's), and each chunk's
// file passes this workspace's path policy now, as read_file would.
func retrieve(ctx context.Context, ws *wspath.Tree, entry config.RagStoreEntry, emb wsquery.Embedder, q string) (string, error) {
	hits, w, err := queryStore(ctx, entry, emb, q, ragTopK, ragMinScore)
	if err != nil || len(hits) == 0 {
		return "", err
	}
	if w != "" && w != ws.Root {
		return "", fmt.Errorf("the store %s holds the files of %s, not of this workspace: its chunks are not sent (harvey rag use another store, or rag off)", entry.Name, w)
	}
	hits = slices.DeleteFunc(hits, func(h wsindex.Hit) bool { return !wsquery.Readable(ws, h.Path) })
	var b strings.Builder
	b.WriteString("### Context (from knowledge base)\n")
	for _, h := range hits {
		piece := fmt.Sprintf("\n[%s:%d-%d]\n%s\n", h.Path, h.StartLine, h.EndLine, strings.TrimRight(h.Text, "\n"))
		if b.Len()+len(piece) > ragContextBudget {
			break
		}
		b.WriteString(piece)
	}
	return b.String(), nil
}

// queryStore embeds q and returns the k chunks of the store nearest it
// above minScore, their text redacted (as every text the model or you
// see), and the workspace the store's files came from ("" when it does
// not say).
func queryStore(ctx context.Context, entry config.RagStoreEntry, emb wsquery.Embedder, q string, k int, minScore float64) ([]wsindex.Hit, string, error) {
	s, err := ragstore.Open(ragPath(entry.DBPath), "RAG store "+entry.Name, emb.Name())
	if err != nil {
		return nil, "", err
	}
	defer s.Close()
	v, err := wsquery.EmbedOne(ctx, emb, q)
	if err != nil {
		return nil, "", err
	}
	hits, err := s.Query(ctx, v, k, minScore)
	for i := range hits {
		hits[i].Text = secrets.Redact(hits[i].Text)
	}
	return hits, s.Workspace(), err
}

// ragIngest ingests workspace files, directories and globs into a store,
// with a progress line and a summary.
func ragIngest(ctx context.Context, ws *wspath.Tree, entry config.RagStoreEntry, emb wsquery.Embedder, args []string, progress io.Writer) (string, error) {
	// Each match goes through the path gate, then the walk search_files
	// and the workspace index use (a directory's files as the policy
	// lets the model read them; binaries and files over 1 MB left out).
	var docs []ragstore.Doc
	skipped := map[string]int{}
	seen := map[string]bool{}
	sink := walk.DocSink(func(d wsindex.Doc) bool {
		if !seen[d.Path] {
			seen[d.Path] = true
			if content, ok := d.Read(); ok {
				docs = append(docs, ragstore.Doc{Source: d.Path, Content: content})
			}
		}
		return ctx.Err() == nil
	}, skipped)
	for _, arg := range args {
		matches, err := fs.Glob(ws.FS(), path.Clean(filepath.ToSlash(arg)))
		if err != nil || len(matches) == 0 {
			skipped["not found"]++
			continue
		}
		for _, m := range matches {
			rp, err := ws.Resolve(m, wspath.OpRead)
			if err != nil {
				skipped["denied or hidden"]++
				continue
			}
			walk.Walk(ws, rp, sink)
			rp.Close()
		}
	}
	// A store your config names but no command created yet is made here.
	if err := os.MkdirAll(filepath.Dir(ragPath(entry.DBPath)), 0o700); err != nil {
		return "", err
	}
	s, err := ragstore.Open(ragPath(entry.DBPath), "RAG store "+entry.Name, emb.Name())
	if err != nil {
		return "", err
	}
	defer s.Close()
	// A store holds one workspace's files: its paths are relative to it,
	// and its chunks reach the model only there, through that
	// workspace's path policy (retrieve).
	if w := s.Workspace(); w != "" && w != ws.Root {
		return "", fmt.Errorf("RAG store %s holds the files of %s, not of this workspace; make one for this workspace: harvey rag create NAME, then harvey rag use NAME", entry.Name, w)
	}
	if err := s.SetWorkspace(ws.Root); err != nil {
		return "", err
	}
	st, err := s.Ingest(ctx, docs, emb.Embed, newProgress(progress, "files"))
	if err != nil {
		return "", err
	}
	sum := fmt.Sprintf("%s: %s, %s embedded (%s), %d unchanged", entry.Name, termtext.Plural(st.Sources, "file"), termtext.Plural(st.Embedded, "file"), termtext.Plural(st.Chunks, "chunk"), st.Unchanged)
	var why []string
	for k, n := range skipped {
		why = append(why, fmt.Sprintf("%d %s", n, k))
	}
	if len(why) > 0 {
		slices.Sort(why)
		sum += "; skipped: " + strings.Join(why, ", ")
	}
	return sum, nil
}

// saveRag writes the rag: block of the user's own config (keeping its
// other keys and comments).
func saveRag(rc config.RagConfig) (string, error) {
	rc = rc.Normalized()
	return configfile.EditUser(func(top *yaml.Node) error {
		var v yaml.Node
		if err := v.Encode(rc); err != nil {
			return err
		}
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value == "rag" {
				top.Content[i+1] = &v
				return nil
			}
		}
		top.Content = append(top.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "rag"}, &v)
		return nil
	})
}
