package rag

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/ragstore"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wsindex"
	"github.com/harvey-agent/harvey/internal/wspath"
	"github.com/harvey-agent/harvey/internal/wsquery"
)

// harvey rag and /rag: the commands over the workspace index and the RAG
// stores (rag.go has the stores, the embedders and retrieval before a
// turn; internal/wsquery the index).

// Env is what harvey rag and /rag work with: the workspace's tree and its
// index, the session's config (its RAG block is updated on a change), the
// Ollama server and generation model, and where progress goes (stderr).
type Env struct {
	Tree      *wspath.Tree
	Index     *wsquery.Store
	Cfg       *config.Config
	OllamaURL string
	GenModel  string
	Progress  io.Writer
	Embedder  NewEmbedder
}

// Usage is harvey rag's and /rag's.
const Usage = `usage: harvey rag query "TEXT" [--store NAME] [-k N] [--json]
       harvey rag create NAME [--model EMBEDDING_MODEL] [--db PATH]
       harvey rag ingest PATH|DIR|GLOB... [--store NAME]
       harvey rag ingest --store workspace [--model EMBEDDING_MODEL]
       harvey rag list | use NAME | on | off | status [NAME] | remove NAME`

// Do runs one rag command (harvey rag ARGS, or /rag ARGS).
func Do(ctx context.Context, env Env, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(Usage)
	}
	opts, words, err := ragFlags(args[1:])
	if err != nil {
		return err
	}
	rc := env.Cfg.RAG.Normalized()
	save := func(what string) error {
		p, err := saveRag(rc)
		if err != nil {
			return err
		}
		env.Cfg.RAG = rc
		fmt.Fprintf(out, "%s (in %s)\n", what, p)
		return nil
	}
	switch args[0] {
	case "query":
		return ragQuery(ctx, env, rc, opts, strings.Join(words, " "), out)
	case "create":
		return ragCreate(ctx, env, &rc, opts, words, save)
	case "ingest":
		if opts["store"] == "workspace" {
			return ingestWorkspace(ctx, env, &rc, opts, words, save, out)
		}
		return ingestStore(ctx, env, rc, opts["store"], words, out)
	case "list":
		ragList(ctx, env, rc, out)
		return nil
	case "use":
		if len(words) != 1 {
			return errors.New("usage: harvey rag use NAME")
		}
		if _, ok := rc.Store(words[0]); !ok {
			return fmt.Errorf("no RAG store %s (harvey rag list)", words[0])
		}
		rc.Active = words[0]
		return save("RAG store " + words[0] + " is active")
	case "on", "off":
		rc.Enabled = args[0] == "on"
		if !rc.Enabled {
			return save("RAG is off (no chunks are added to your messages)")
		}
		return save("RAG is on (before each turn: the top 5 chunks above 0.3 of the active store)")
	case "remove":
		return ragRemove(&rc, words, save)
	case "status":
		return ragStatus(ctx, env, rc, strings.Join(words, " "), out)
	}
	return errors.New(Usage)
}

// ingestStore is harvey rag ingest PATH... [--store NAME].
func ingestStore(ctx context.Context, env Env, rc config.RagConfig, name string, words []string, out io.Writer) error {
	e, ok := rc.Store(name)
	if !ok || len(words) == 0 {
		return errors.New("usage: harvey rag ingest PATH|DIR|GLOB... [--store NAME] (create a store first: harvey rag create NAME)")
	}
	emb, err := storeEmbedder(e, env.OllamaURL, env.GenModel, env.Embedder)
	if err != nil {
		return err
	}
	sum, err := ragIngest(ctx, env.Tree, e, emb, words, env.Progress)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, sum)
	return nil
}

// ragList is harvey rag list: the workspace index (and the model its
// embeddings are from: your config's, or the one this workspace bound) and
// the stores, the active one marked.
func ragList(ctx context.Context, env Env, rc config.RagConfig, out io.Writer) {
	kind := "lexical index of this workspace (no setup; find_code)"
	m := rc.Workspace.EmbeddingModel
	if _, err := os.Lstat(filepath.Join(env.Tree.Root, wspath.AgentsDir, "index.db")); m == "" && err == nil {
		if ix, err := env.Index.Open(); err == nil {
			m, _, _, _ = ix.Embedded(ctx) // the model this workspace's index is bound to
			ix.Close()
		}
	}
	if m != "" {
		kind = "lexical index of this workspace fused with " + m + " embeddings (find_code)"
	}
	fmt.Fprintln(out, "  workspace  "+kind)
	for _, s := range rc.Stores {
		mark := " "
		if s.Name == rc.Active {
			mark = "*"
		}
		fmt.Fprintf(out, "%s %s  %s  %s\n", mark, s.Name, s.EmbeddingModel, ragPath(s.DBPath))
	}
}

// ragRemove is harvey rag remove NAME: the store leaves your config, its
// database stays.
func ragRemove(rc *config.RagConfig, words []string, save func(string) error) error {
	if len(words) != 1 {
		return errors.New("usage: harvey rag remove NAME")
	}
	kept := rc.Stores[:0:0]
	for _, s := range rc.Stores {
		if s.Name != words[0] {
			kept = append(kept, s)
		}
	}
	if len(kept) == len(rc.Stores) {
		return fmt.Errorf("no RAG store %s", words[0])
	}
	rc.Stores = kept
	if rc.Active == words[0] {
		rc.Active = ""
	}
	return save("removed RAG store " + words[0] + " from your config (its database file is left as it is)")
}

// ragFlags reads --store, --model, --db, -k and --json anywhere among args.
func ragFlags(args []string) (map[string]string, []string, error) {
	opts := map[string]string{}
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "--store", "--model", "--db", "-k":
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("%s needs a value", a)
			}
			opts[strings.TrimLeft(a, "-")] = args[i+1]
			i++
		case "--json":
			opts["json"] = "1"
		default:
			if strings.HasPrefix(a, "--") {
				return nil, nil, fmt.Errorf("unknown option %s", a)
			}
			words = append(words, a)
		}
	}
	return opts, words, nil
}

// ragQuery prints the hits of the workspace index or of a store.
func ragQuery(ctx context.Context, env Env, rc config.RagConfig, opts map[string]string, q string, out io.Writer) error {
	k := 5
	if v := opts["k"]; v != "" {
		if _, err := fmt.Sscan(v, &k); err != nil || k < 1 || k > 50 {
			return errors.New("-k is 1 to 50")
		}
	}
	if strings.TrimSpace(q) == "" {
		return errors.New(`usage: harvey rag query "TEXT" [--store NAME] [-k N] [--json]`)
	}
	var hits []wsindex.Hit
	var embedded *wsindex.Stats
	if name := cmp.Or(opts["store"], "workspace"); name == "workspace" {
		var err error
		if hits, embedded, err = workspaceHits(ctx, env, rc, q, k); err != nil {
			return err
		}
	} else {
		e, ok := rc.Store(name)
		if !ok {
			return fmt.Errorf("no RAG store %s (harvey rag list)", name)
		}
		emb, err := storeEmbedder(e, env.OllamaURL, env.GenModel, env.Embedder)
		if err != nil {
			return err
		}
		if hits, _, err = queryStore(ctx, e, emb, q, k, 0); err != nil {
			return err
		}
	}
	bestFirst(hits)
	if opts["json"] != "" {
		return queryJSON(out, hits, embedded)
	}
	if embedded != nil && env.Progress != nil {
		fmt.Fprintf(env.Progress, "ranked with embeddings too: %d of %d chunks embedded\n", embedded.Embedded, embedded.Total)
	}
	if len(hits) == 0 {
		fmt.Fprintln(out, "no match")
	}
	for _, h := range hits {
		fmt.Fprintf(out, "%s:%d-%d  (score %.2f)\n", termtext.Sanitize(h.Path), h.StartLine, h.EndLine, h.Score)
		lines := strings.Split(strings.TrimRight(termtext.Sanitize(h.Text), "\n"), "\n")
		for _, l := range lines[:min(len(lines), 8)] {
			fmt.Fprintln(out, "    "+l)
		}
		if len(lines) > 8 {
			fmt.Fprintf(out, "    … %s\n", termtext.Plural(len(lines)-8, "more line"))
		}
	}
	return nil
}

// ragStatus says what a store holds: its model, chunks, size, and the
// sources that changed since they were ingested.
func ragStatus(ctx context.Context, env Env, rc config.RagConfig, name string, out io.Writer) error {
	state := "off"
	if rc.Enabled {
		state = "on"
	}
	fmt.Fprintf(out, "RAG: %s; active store: %s; the workspace index (lexical, no setup) is always there\n", state, cmp.Or(rc.Active, "none"))
	if name == "" || name == "workspace" {
		workspaceStatus(ctx, env, rc, out)
		if name == "workspace" {
			return nil
		}
	}
	e, ok := rc.Store(name)
	if !ok {
		return nil
	}
	s, err := ragstore.Open(ragPath(e.DBPath), "RAG store "+e.Name, "")
	if err != nil {
		return err
	}
	defer s.Close()
	size := int64(0)
	if fi, err := os.Stat(ragPath(e.DBPath)); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(out, "store %s: model %s, %s, %s\n", e.Name, s.Model(), termtext.Plural(s.Count(), "chunk"), termtext.Size(size))
	srcs, err := s.Sources()
	if err != nil {
		return err
	}
	var stale []string
	for p, h := range srcs {
		data, err := fs.ReadFile(env.Tree.FS(), p)
		sum := datadir.SHA256Hex([]byte(secrets.Redact(string(data))))
		if err != nil || sum != h {
			stale = append(stale, p)
		}
	}
	slices.Sort(stale)
	if len(stale) > 0 {
		fmt.Fprintf(out, "stale (changed or gone since ingested; ingest again): %s\n", strings.Join(stale, ", "))
	}
	return nil
}

// ingestWorkspace embeds the workspace index's chunks (rag ingest --store
// workspace [--model M]): the model is saved as rag.workspace in your
// config, the index brought up to date, and every chunk without a vector
// embedded, with a progress line; from then on find_code and rag query
// fuse both rankings. rc is the config save writes.
func ingestWorkspace(ctx context.Context, env Env, rc *config.RagConfig, opts map[string]string, words []string, save func(string) error, out io.Writer) error {
	if len(words) > 0 {
		return errors.New("usage: harvey rag ingest --store workspace [--model EMBEDDING_MODEL] (the workspace index takes no paths: it is the whole workspace)")
	}
	model := cmp.Or(opts["model"], rc.Workspace.EmbeddingModel, config.DefaultEmbeddingModel)
	emb, err := env.Embedder(rc.Workspace.Provider, rc.Workspace.BaseURL, env.OllamaURL, model)
	if err != nil {
		return err
	}
	ix, err := env.Index.Open()
	if err != nil {
		return err
	}
	defer ix.Close()
	docs, bounds, err := env.Index.Docs()
	if err != nil {
		return err
	}
	if _, err := ix.Sync(ctx, docs); err != nil {
		return err
	}
	if n := bounds.Note(); n != "" && env.Progress != nil {
		fmt.Fprintln(env.Progress, n)
	}
	if err := ix.Bind(ctx, model); err != nil {
		return err
	}
	_, have, total, err := ix.Embedded(ctx)
	if err != nil {
		return err
	}
	todo := total - have
	show := newProgress(env.Progress, "chunks")
	n, err := wsquery.EmbedPending(ctx, ix, emb, -1, func(done int) { show(min(done, todo), todo) })
	if err != nil {
		return fmt.Errorf("%v (%d chunks embedded before it; ingest again to go on)", err, n)
	}
	fmt.Fprintf(out, "workspace: %s embedded with %s, %d already were; find_code and harvey rag query in this workspace now fuse its ranking with the lexical one\n", termtext.Plural(n, "chunk"), model, have)
	return nil
}

// workspaceStatus says what the workspace index holds and whether its
// embeddings answer (a status never creates the index).
func workspaceStatus(ctx context.Context, env Env, rc config.RagConfig, out io.Writer) {
	model, done, total := "", 0, 0
	if building, done, total := env.Index.Progress(); building {
		// Not opened meanwhile: the build may be making it.
		if total > 0 {
			fmt.Fprintf(out, "workspace: building the index: %d of %d files\n", done, total)
		} else {
			fmt.Fprintln(out, "workspace: building the index: counting the files")
		}
		return
	}
	if _, err := os.Lstat(filepath.Join(env.Tree.Root, wspath.AgentsDir, "index.db")); err != nil {
		fmt.Fprintln(out, "workspace: not indexed yet (built when the REPL starts, or by the first query)")
	} else {
		ix, err := env.Index.Open()
		if err != nil {
			fmt.Fprintf(out, "workspace: %v\n", err)
			return
		}
		paths, _ := ix.Paths()
		model, done, total, err = ix.Embedded(ctx)
		ix.Close()
		if err != nil {
			fmt.Fprintf(out, "workspace: %v\n", err)
			return
		}
		fmt.Fprintf(out, "workspace: lexical index of %s, %s (as of its last query)\n", termtext.Plural(len(paths), "file"), termtext.Plural(total, "chunk"))
	}
	want := cmp.Or(rc.Workspace.EmbeddingModel, model)
	if want == "" {
		fmt.Fprintln(out, "workspace embeddings: none, the lexical ranking alone (harvey rag ingest --store workspace adds them)")
		return
	}
	if model != want {
		done = 0
	}
	fmt.Fprintf(out, "workspace embeddings: %s, %d of %d chunks embedded", want, done, total)
	emb, err := env.Embedder(rc.Workspace.Provider, rc.Workspace.BaseURL, env.OllamaURL, want)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, wsquery.EmbedWait)
		_, err = emb.Embed(cctx, []string{"status"})
		cancel()
	}
	if err != nil {
		fmt.Fprintf(out, "; not answering, so queries rank lexically alone: %s\n", termtext.OneLine(err.Error()))
		return
	}
	fmt.Fprintln(out, "; the model answers")
}

// workspaceHits is rag query of the workspace index: its hits, and the
// count of chunks embedded when embeddings ranked them too (nil: none).
func workspaceHits(ctx context.Context, env Env, rc config.RagConfig, q string, k int) ([]wsindex.Hit, *wsindex.Stats, error) {
	hits, st, err := env.Index.Query(ctx, q, k, wsquery.Report{EmbedFor: WorkspaceEmbedder(rc, env.OllamaURL, env.Embedder), Progress: slowOnly(newProgress(env.Progress, "files indexed"))})
	if err != nil {
		return nil, nil, err
	}
	if st.LeftOut != "" && env.Progress != nil {
		fmt.Fprintln(env.Progress, st.LeftOut)
	}
	if st.Total == 0 {
		return hits, nil, nil
	}
	return hits, &st, nil
}

// queryJSON prints hits as a JSON array; a workspace query ranked with
// embeddings too gives each hit the count of chunks embedded, of all.
func queryJSON(out io.Writer, hits []wsindex.Hit, embedded *wsindex.Stats) error {
	type jsonHit struct {
		wsindex.Hit
		Embedded *int `json:"chunks_embedded,omitempty"`
		Chunks   *int `json:"chunks,omitempty"`
	}
	list := make([]jsonHit, len(hits))
	for i, h := range hits {
		list[i].Hit = h
		if embedded != nil {
			list[i].Embedded, list[i].Chunks = &embedded.Embedded, &embedded.Total
		}
	}
	b, _ := json.MarshalIndent(list, "", "  ")
	_, err := fmt.Fprintln(out, string(b))
	return err
}

// ragCreate makes a store bound to an embedding model, after asking the
// model to embed one text: a model the server does not have is refused
// with the command that installs it (not found only at the first ingest);
// a server that does not answer is said, and the store is made.
func ragCreate(ctx context.Context, env Env, rc *config.RagConfig, opts map[string]string, words []string, save func(string) error) error {
	if len(words) != 1 || !configfile.ValidServerName(words[0]) {
		return errors.New("usage: harvey rag create NAME [--model EMBEDDING_MODEL] [--db PATH] (NAME: letters, digits, - and _)")
	}
	if _, taken := rc.Store(words[0]); taken || words[0] == "workspace" {
		return fmt.Errorf("a store named %s exists", words[0])
	}
	e := config.RagStoreEntry{Name: words[0], DBPath: cmp.Or(opts["db"], "rag/"+words[0]+".db"), EmbeddingModel: cmp.Or(opts["model"], config.DefaultEmbeddingModel)}
	if emb, err := storeEmbedder(e, env.OllamaURL, env.GenModel, env.Embedder); err == nil {
		cctx, cancel := context.WithTimeout(ctx, wsquery.EmbedWait)
		_, err = emb.Embed(cctx, []string{"harvey"})
		cancel()
		switch {
		case err != nil && strings.Contains(strings.ToLower(err.Error()), "not found"):
			hint := ""
			if e.Provider == "" || e.Provider == "ollama" {
				hint = fmt.Sprintf("; install it with: ollama pull %s", e.EmbeddingModel)
			}
			return fmt.Errorf("the embedding model %s is not there (%s)%s", e.EmbeddingModel, termtext.OneLine(err.Error()), hint)
		case err != nil && env.Progress != nil:
			fmt.Fprintf(env.Progress, "warning: could not check the embedding model %s: %s (ingest needs it)\n", e.EmbeddingModel, termtext.OneLine(err.Error()))
		}
	}
	if err := os.MkdirAll(filepath.Dir(ragPath(e.DBPath)), 0o700); err != nil {
		return err
	}
	s, err := ragstore.Open(ragPath(e.DBPath), "RAG store "+e.Name, e.EmbeddingModel)
	if err != nil {
		return err
	}
	s.Close()
	rc.Stores = append(rc.Stores, e)
	if rc.Active == "" {
		rc.Active = e.Name
	}
	return save(fmt.Sprintf("created RAG store %s bound to %s at %s", e.Name, e.EmbeddingModel, ragPath(e.DBPath)))
}

// bestFirst orders what rag query prints by score, best first: the
// ranking that chose the hits spreads them over files (wsindex.Spread), so
// its order is not the scores' (issue 62).
func bestFirst(hits []wsindex.Hit) {
	slices.SortStableFunc(hits, func(a, b wsindex.Hit) int { return cmp.Compare(b.Score, a.Score) })
}
