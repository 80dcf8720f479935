package harvey

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	anyllm "github.com/mozilla-ai/any-llm-go"
	"gopkg.in/yaml.v3"

	"github.com/harvey-agent/harvey/internal/ragstore"
	"github.com/harvey-agent/harvey/internal/wsindex"
)

// The original Harvey's RAG, as it was specified (issue 36): named SQLite
// stores of embedded chunks (internal/ragstore), each bound to one
// embedding model, in the user's own config under rag: (a workspace's
// agents/harvey.yaml cannot set it); only the active store is opened.
// Before each turn, when RAG is on, the prompt is embedded and the top 5
// chunks above a cosine similarity of 0.3 go into the user's message (never
// the system prompt, so the warm prefix stays reusable) in a
// "### Context (from knowledge base)" block with each chunk's source,
// within a budget; nothing is added when none qualifies. What is ingested
// passes the workspace's path policy and is redacted first.

// DefaultEmbeddingModel is the suggested embedding model.
const DefaultEmbeddingModel = "nomic-embed-text"

// ragTopK, ragMinScore and ragContextBudget are the retrieval before a
// turn: at most 5 chunks, each above 0.3, within about 1,000 tokens (a
// Raspberry Pi evaluates that in seconds).
const (
	ragTopK          = 5
	ragMinScore      = 0.3
	ragContextBudget = 4 << 10
)

// normalized is the config with the old form migrated to a store named
// default.
func (r RagConfig) normalized() RagConfig {
	if r.DBPath != "" && len(r.Stores) == 0 {
		r.Stores = []RagStoreEntry{{Name: "default", DBPath: r.DBPath, EmbeddingModel: r.EmbeddingModel}}
		if r.Active == "" {
			r.Active = "default"
		}
	}
	r.DBPath, r.EmbeddingModel = "", ""
	return r
}

// store finds a store by name ("" is the active one).
func (r RagConfig) store(name string) (RagStoreEntry, bool) {
	r = r.normalized()
	if name == "" {
		name = r.Active
	}
	for _, s := range r.Stores {
		if s.Name == name {
			return s, true
		}
	}
	return RagStoreEntry{}, false
}

// embeddingModel is the model a store embeds with for a generation model.
func (s RagStoreEntry) embeddingModel(genModel string) string {
	if s.EmbeddingModel != "" {
		return s.EmbeddingModel
	}
	if m := s.ModelMap[genModel]; m != "" {
		return m
	}
	return DefaultEmbeddingModel
}

// newEmbedder is the embedder for model run by provider ("" or ollama:
// Ollama's batch endpoint at ollamaURL; any other: its any-llm-go provider,
// when that provider offers embeddings, at baseURL or its default).
func newEmbedder(provider, baseURL, ollamaURL, model string) (Embedder, error) {
	if provider == "" || provider == "ollama" {
		return newOllamaEmbedder(cmp.Or(baseURL, ollamaURL), model), nil
	}
	c, err := newAnyLLMClient(provider, baseURL, model, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	ep, ok := c.provider.(anyllm.EmbeddingProvider)
	if !ok {
		return nil, fmt.Errorf("%s offers no embeddings through any-llm-go; embed with Ollama (leave provider: out) or another provider", provider)
	}
	return &anyllmEmbedder{p: ep, model: model, provider: provider}, nil
}

// anyllmEmbedder embeds through an any-llm-go provider (OpenAI's
// /v1/embeddings and the servers that speak it, Mistral, Gemini...).
type anyllmEmbedder struct {
	p               anyllm.EmbeddingProvider
	model, provider string
}

func (e *anyllmEmbedder) Name() string { return e.model }

func (e *anyllmEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	resp, err := e.p.Embedding(ctx, anyllm.EmbeddingParams{Model: e.model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("embedding with %s (%s): %s", e.model, e.provider, oneLine(explainAnyLLM(e.provider, err).Error()))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			return nil, fmt.Errorf("embedding with %s (%s): the answer's vectors do not match the %d texts", e.model, e.provider, len(texts))
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	for _, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embedding with %s (%s): the answer has %d vectors for %d texts", e.model, e.provider, len(resp.Data), len(texts))
		}
	}
	return out, nil
}

// workspaceEmbedder chooses the workspace index's embedder: the model your
// config names for every workspace (rag.workspace.embedding_model), or
// else the one this workspace's index was embedded with (harvey rag
// ingest --store workspace binds it, for this workspace only); nil when
// neither names one, or its provider cannot embed.
func workspaceEmbedder(rc RagConfig, ollamaURL string) func(bound string) Embedder {
	return func(bound string) Embedder {
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
func (s RagStoreEntry) embedder(ollamaURL, genModel string) (Embedder, error) {
	return newEmbedder(s.Provider, s.BaseURL, ollamaURL, s.embeddingModel(genModel))
}

// ollamaEmbedder is Ollama's batch embedding endpoint (POST /api/embed).
type ollamaEmbedder struct {
	base, model string
	hc          *http.Client
}

func newOllamaEmbedder(base, model string) *ollamaEmbedder {
	return &ollamaEmbedder{base: strings.TrimRight(base, "/"), model: model, hc: &http.Client{Timeout: 5 * time.Minute}}
}

func (e *ollamaEmbedder) Name() string { return e.model }

func (e *ollamaEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, _ := json.Marshal(map[string]any{"model": e.model, "input": texts})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/api/embed", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embedding with %s: %v", e.model, err)
	}
	defer resp.Body.Close()
	var out struct {
		Embeddings [][]float32 `json:"embeddings"`
		Error      string      `json:"error"`
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("embedding with %s: %s: the reply was cut off (%v)", e.model, resp.Status, err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		// Not Ollama's JSON: a proxy's or another server's page. Say what
		// answered, not the decoder's words.
		return nil, fmt.Errorf("embedding with %s: %s at %s answered %s, not Ollama's JSON: %q — is --ollama / OLLAMA_HOST an Ollama server?", e.model, resp.Status, e.base, cmp.Or(resp.Header.Get("Content-Type"), "no content type"), clip(flatText(string(raw)), 80))
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("embedding model %s not found; pull it with: ollama pull %s", e.model, e.model)
	}
	if resp.StatusCode >= 400 || out.Error != "" {
		return nil, fmt.Errorf("embedding with %s: %s %s", e.model, resp.Status, out.Error)
	}
	return out.Embeddings, nil
}

// newProgress shows work done of total on w: a bar redrawn in place on a
// terminal, plain lines at each tenth elsewhere (a log keeps no \r), and
// the end on a line of its own either way.
func newProgress(w io.Writer, what string) func(done, total int) {
	tty := isTTY(w)
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
	p = expandHome(p, home)
	if !filepath.IsAbs(p) {
		p = filepath.Join(userConfigDir(), p)
	}
	return p
}

// retrievedContext is the block added to the user's message before a turn
// (empty when RAG is off or no chunk qualifies). A failure is said once
// and the turn goes on without it.
func (a *Agent) retrievedContext(ctx context.Context, prompt string) string {
	rc := a.Config.RAG.normalized()
	if !rc.Enabled {
		return ""
	}
	entry, ok := rc.store("")
	if !ok {
		a.logf("%s", a.colorize("33", "· RAG is on but no store is active (harvey rag use NAME)"))
		return ""
	}
	emb, err := entry.embedder(a.OllamaURL, a.ModelName)
	block := ""
	if err == nil {
		block, err = retrieve(ctx, a.Workspace, entry, emb, prompt)
	}
	if err != nil {
		a.logf("%s", a.colorize("33", "· RAG: "+oneLine(err.Error())+" (the turn goes on without it)"))
	}
	return block
}

// retrieve embeds q and renders the chunks of the store that qualify: a
// store made in another workspace gives none (its paths mean nothing
// here, and that workspace's policy is not this one's), and each chunk's
// file passes this workspace's path policy now, as read_file would.
func retrieve(ctx context.Context, ws *Workspace, entry RagStoreEntry, emb Embedder, q string) (string, error) {
	hits, w, err := queryStore(ctx, entry, emb, q, ragTopK, ragMinScore)
	if err != nil || len(hits) == 0 {
		return "", err
	}
	if w != "" && w != ws.Root {
		return "", fmt.Errorf("the store %s holds the files of %s, not of this workspace: its chunks are not sent (harvey rag use another store, or rag off)", entry.Name, w)
	}
	hits = slices.DeleteFunc(hits, func(h wsindex.Hit) bool { return !stillReadable(ws, h.Path) })
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
func queryStore(ctx context.Context, entry RagStoreEntry, emb Embedder, q string, k int, minScore float64) ([]wsindex.Hit, string, error) {
	s, err := ragstore.Open(ragPath(entry.DBPath), "RAG store "+entry.Name, emb.Name())
	if err != nil {
		return nil, "", err
	}
	defer s.Close()
	v, err := embedOne(ctx, emb, q)
	if err != nil {
		return nil, "", err
	}
	hits, err := s.Query(ctx, v, k, minScore)
	for i := range hits {
		hits[i].Text = redactSecrets(hits[i].Text)
	}
	return hits, s.Workspace(), err
}

// ragIngest ingests workspace files, directories and globs into a store,
// with a progress line and a summary.
func ragIngest(ctx context.Context, ws *Workspace, entry RagStoreEntry, emb Embedder, args []string, progress io.Writer) (string, error) {
	// Each match goes through the path gate, then the walk search_files
	// and the workspace index use (a directory's files as the policy
	// lets the model read them; binaries and files over 1 MB left out).
	var docs []ragstore.Doc
	skipped := map[string]int{}
	seen := map[string]bool{}
	sink := &indexSink{skipped: skipped, yield: func(d wsindex.Doc) bool {
		if !seen[d.Path] {
			seen[d.Path] = true
			if content, ok := d.Read(); ok {
				docs = append(docs, ragstore.Doc{Source: d.Path, Content: content})
			}
		}
		return ctx.Err() == nil
	}}
	for _, arg := range args {
		matches, err := fs.Glob(ws.FS(), path.Clean(filepath.ToSlash(arg)))
		if err != nil || len(matches) == 0 {
			skipped["not found"]++
			continue
		}
		for _, m := range matches {
			rp, err := resolveWorkspacePath(ws, m, opRead)
			if err != nil {
				skipped["denied or hidden"]++
				continue
			}
			walkWorkspace(ws, rp, sink)
			rp.close()
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
	sum := fmt.Sprintf("%s: %s, %s embedded (%s), %d unchanged", entry.Name, plural(st.Sources, "file"), plural(st.Embedded, "file"), plural(st.Chunks, "chunk"), st.Unchanged)
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
func saveRag(rc RagConfig) (string, error) {
	rc = rc.normalized()
	return editUserConfig(func(top *yaml.Node) error {
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

// ragEnv is what harvey rag and /rag work with.
type ragEnv struct {
	ws        *Workspace
	cfg       *Config // the session's config (its RAG block is updated on a change)
	ollamaURL string
	genModel  string
	progress  io.Writer // the ingest's progress line (stderr)
}

const ragUsage = `usage: harvey rag query "TEXT" [--store NAME] [-k N] [--json]
       harvey rag create NAME [--model EMBEDDING_MODEL] [--db PATH]
       harvey rag ingest PATH|DIR|GLOB... [--store NAME]
       harvey rag ingest --store workspace [--model EMBEDDING_MODEL]
       harvey rag list | use NAME | on | off | status [NAME] | remove NAME`

// ragDo runs one rag command (harvey rag ARGS, or /rag ARGS).
func ragDo(ctx context.Context, env ragEnv, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(ragUsage)
	}
	opts, words, err := ragFlags(args[1:])
	if err != nil {
		return err
	}
	rc := env.cfg.RAG.normalized()
	save := func(what string) error {
		p, err := saveRag(rc)
		if err != nil {
			return err
		}
		env.cfg.RAG = rc
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
		e, ok := rc.store(opts["store"])
		if !ok || len(words) == 0 {
			return errors.New("usage: harvey rag ingest PATH|DIR|GLOB... [--store NAME] (create a store first: harvey rag create NAME)")
		}
		emb, err := e.embedder(env.ollamaURL, env.genModel)
		if err != nil {
			return err
		}
		sum, err := ragIngest(ctx, env.ws, e, emb, words, env.progress)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, sum)
		return nil
	case "list":
		kind := "lexical index of this workspace (no setup; find_code)"
		if m := rc.Workspace.EmbeddingModel; m != "" {
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
		return nil
	case "use":
		if len(words) != 1 {
			return errors.New("usage: harvey rag use NAME")
		}
		if _, ok := rc.store(words[0]); !ok {
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
	case "status":
		return ragStatus(ctx, env, rc, strings.Join(words, " "), out)
	}
	return errors.New(ragUsage)
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
func ragQuery(ctx context.Context, env ragEnv, rc RagConfig, opts map[string]string, q string, out io.Writer) error {
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
		e, ok := rc.store(name)
		if !ok {
			return fmt.Errorf("no RAG store %s (harvey rag list)", name)
		}
		emb, err := e.embedder(env.ollamaURL, env.genModel)
		if err != nil {
			return err
		}
		if hits, _, err = queryStore(ctx, e, emb, q, k, 0); err != nil {
			return err
		}
	}
	if opts["json"] != "" {
		return queryJSON(out, hits, embedded)
	}
	if embedded != nil && env.progress != nil {
		fmt.Fprintf(env.progress, "ranked with embeddings too: %d of %d chunks embedded\n", embedded.Embedded, embedded.Total)
	}
	if len(hits) == 0 {
		fmt.Fprintln(out, "no match")
	}
	for _, h := range hits {
		fmt.Fprintf(out, "%s:%d-%d  (score %.2f)\n", sanitizeForTerminal(h.Path), h.StartLine, h.EndLine, h.Score)
		lines := strings.Split(strings.TrimRight(sanitizeForTerminal(h.Text), "\n"), "\n")
		for _, l := range lines[:min(len(lines), 8)] {
			fmt.Fprintln(out, "    "+l)
		}
		if len(lines) > 8 {
			fmt.Fprintf(out, "    … %s\n", plural(len(lines)-8, "more line"))
		}
	}
	return nil
}

// ragStatus says what a store holds: its model, chunks, size, and the
// sources that changed since they were ingested.
func ragStatus(ctx context.Context, env ragEnv, rc RagConfig, name string, out io.Writer) error {
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
	e, ok := rc.store(name)
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
	fmt.Fprintf(out, "store %s: model %s, %s, %s\n", e.Name, s.Model(), plural(s.Count(), "chunk"), humanSize(size))
	srcs, err := s.Sources()
	if err != nil {
		return err
	}
	var stale []string
	for p, h := range srcs {
		data, err := fs.ReadFile(env.ws.FS(), p)
		sum := sha256Hex([]byte(redactSecrets(string(data))))
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
func ingestWorkspace(ctx context.Context, env ragEnv, rc *RagConfig, opts map[string]string, words []string, save func(string) error, out io.Writer) error {
	if len(words) > 0 {
		return errors.New("usage: harvey rag ingest --store workspace [--model EMBEDDING_MODEL] (the workspace index takes no paths: it is the whole workspace)")
	}
	model := cmp.Or(opts["model"], rc.Workspace.EmbeddingModel, DefaultEmbeddingModel)
	emb, err := newEmbedder(rc.Workspace.Provider, rc.Workspace.BaseURL, env.ollamaURL, model)
	if err != nil {
		return err
	}
	ix, err := openWorkspaceIndex(env.ws)
	if err != nil {
		return err
	}
	defer ix.Close()
	docs, bounds, err := workspaceDocs(env.ws)
	if err != nil {
		return err
	}
	if _, err := ix.Sync(ctx, docs); err != nil {
		return err
	}
	if n := bounds.note(); n != "" && env.progress != nil {
		fmt.Fprintln(env.progress, n)
	}
	if err := ix.Bind(ctx, model); err != nil {
		return err
	}
	_, have, total, err := ix.Embedded(ctx)
	if err != nil {
		return err
	}
	todo := total - have
	show := newProgress(env.progress, "chunks")
	n, err := embedPending(ctx, ix, emb, -1, func(done int) { show(min(done, todo), todo) })
	if err != nil {
		return fmt.Errorf("%v (%d chunks embedded before it; ingest again to go on)", err, n)
	}
	fmt.Fprintf(out, "workspace: %s embedded with %s, %d already were; find_code and harvey rag query in this workspace now fuse its ranking with the lexical one\n", plural(n, "chunk"), model, have)
	return nil
}

// workspaceStatus says what the workspace index holds and whether its
// embeddings answer (a status never creates the index).
func workspaceStatus(ctx context.Context, env ragEnv, rc RagConfig, out io.Writer) {
	model, done, total := "", 0, 0
	if env.ws.index.building.Load() {
		// Not opened meanwhile: the build may be making it.
		if total := env.ws.index.total.Load(); total > 0 {
			fmt.Fprintf(out, "workspace: building the index: %d of %d files\n", env.ws.index.done.Load(), total)
		} else {
			fmt.Fprintln(out, "workspace: building the index: counting the files")
		}
		return
	}
	if _, err := os.Lstat(filepath.Join(env.ws.Root, AgentsDir, "index.db")); err != nil {
		fmt.Fprintln(out, "workspace: not indexed yet (built when the REPL starts, or by the first query)")
	} else {
		ix, err := openWorkspaceIndex(env.ws)
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
		fmt.Fprintf(out, "workspace: lexical index of %s, %s (as of its last query)\n", plural(len(paths), "file"), plural(total, "chunk"))
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
	emb, err := newEmbedder(rc.Workspace.Provider, rc.Workspace.BaseURL, env.ollamaURL, want)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, embedWait)
		_, err = emb.Embed(cctx, []string{"status"})
		cancel()
	}
	if err != nil {
		fmt.Fprintf(out, "; not answering, so queries rank lexically alone: %s\n", oneLine(err.Error()))
		return
	}
	fmt.Fprintln(out, "; the model answers")
}

// startIndexing starts the build: in an interactive session with an
// agents/ directory only (a headless run builds the index at its first
// query, if it has one).
func (a *Agent) startIndexing() {
	ws := a.Workspace
	if !a.Interactive || ws == nil || !ws.HasAgents() {
		return
	}
	if !askIndexHome(&a.Terminal, ws) {
		return
	}
	a.indexing.stop() // one build at a time
	ctx, cancel := context.WithCancel(context.Background())
	b := &indexBuild{cancel: cancel, done: make(chan struct{})}
	a.indexing = b
	go func() {
		defer close(b.done)
		ws.indexMu.Lock()
		defer ws.indexMu.Unlock()
		ix, err := openWorkspaceIndex(ws)
		if err != nil {
			return // said by the first query, in one line
		}
		defer ix.Close()
		syncIndex(ctx, ws, ix, indexReport{})
	}()
}

// askIndexHome asks, in the REPL, before the index walks a workspace that
// is your home directory or / (headless, the first query refuses). False:
// no index this session, and the line says which setting allows it.
func askIndexHome(tm *Terminal, ws *Workspace) bool {
	var cfg RagWorkspace
	if ws.config != nil {
		cfg = ws.config.Config.RAG.Workspace
	}
	if indexRefusal(ws, cfg) == nil {
		return true
	}
	ans, err := tm.In.Ask(fmt.Sprintf("%s is your home directory (or /). Index all of it for find_code? It reads every file under it, up to the index's caps. [y/N] ", ws.Root))
	if err == nil && strings.EqualFold(strings.TrimSpace(ans), "y") {
		ws.homeOK.Store(true)
		return true
	}
	tm.logf("%s", tm.dim("· no workspace index this session: find_code refuses (rag: {workspace: {index_home: true}} in your own config indexes a home)"))
	return false
}

// workspaceHits is rag query of the workspace index: its hits, and the
// count of chunks embedded when embeddings ranked them too (nil: none).
func workspaceHits(ctx context.Context, env ragEnv, rc RagConfig, q string, k int) ([]wsindex.Hit, *wsindex.Stats, error) {
	hits, st, err := queryWorkspace(ctx, env.ws, q, k, indexReport{embedFor: workspaceEmbedder(rc, env.ollamaURL), progress: slowOnly(newProgress(env.progress, "files indexed"))})
	if err != nil {
		return nil, nil, err
	}
	if st.LeftOut != "" && env.progress != nil {
		fmt.Fprintln(env.progress, st.LeftOut)
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
func ragCreate(ctx context.Context, env ragEnv, rc *RagConfig, opts map[string]string, words []string, save func(string) error) error {
	if len(words) != 1 || !validServerName(words[0]) {
		return errors.New("usage: harvey rag create NAME [--model EMBEDDING_MODEL] [--db PATH] (NAME: letters, digits, - and _)")
	}
	if _, taken := rc.store(words[0]); taken || words[0] == "workspace" {
		return fmt.Errorf("a store named %s exists", words[0])
	}
	e := RagStoreEntry{Name: words[0], DBPath: cmp.Or(opts["db"], "rag/"+words[0]+".db"), EmbeddingModel: cmp.Or(opts["model"], DefaultEmbeddingModel)}
	if emb, err := e.embedder(env.ollamaURL, env.genModel); err == nil {
		cctx, cancel := context.WithTimeout(ctx, embedWait)
		_, err = emb.Embed(cctx, []string{"harvey"})
		cancel()
		switch {
		case err != nil && strings.Contains(strings.ToLower(err.Error()), "not found"):
			hint := ""
			if e.Provider == "" || e.Provider == "ollama" {
				hint = fmt.Sprintf("; install it with: ollama pull %s", e.EmbeddingModel)
			}
			return fmt.Errorf("the embedding model %s is not there (%s)%s", e.EmbeddingModel, oneLine(err.Error()), hint)
		case err != nil && env.progress != nil:
			fmt.Fprintf(env.progress, "warning: could not check the embedding model %s: %s (ingest needs it)\n", e.EmbeddingModel, oneLine(err.Error()))
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
