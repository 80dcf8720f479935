package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/walk"
	"github.com/harvey-agent/harvey/internal/wsindex"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// The workspace as a store (issue 36, the lexical part): internal/wsindex
// indexes what this file gives it — the workspace's text files that the
// path policy lets the model read (not agents/, .git, the denylist,
// permissions:, .gitignore, binaries, files over 1 MB), each redacted as
// the model's view is before it is stored — and every hit is checked
// against the same policy again when it is returned, so a file hidden
// after indexing is not returned. The index lives in agents/index.db
// (Harvey's own), is brought up to date from content hashes before each
// query, and needs no embedding model.

// workspaceIndexPath is where the index is kept.
const workspaceIndexPath = AgentsDir + "/index.db"

// openWorkspaceIndex opens the workspace's index (creating it).
func openWorkspaceIndex(ws *Workspace) (*wsindex.Index, error) {
	if !ws.HasAgents() {
		return nil, errors.New("no agents/ directory in this workspace for the index")
	}
	return wsindex.Open(filepath.Join(ws.Root, AgentsDir, "index.db"), workspaceIndexPath)
}

// workspaceDocs is the workspace index's walk with its bounds (from your
// config), refused where the workspace is the home directory or /.
func workspaceDocs(ws *Workspace) (iter.Seq[wsindex.Doc], *walk.Bounds, error) {
	var cfg RagWorkspace
	if ws.config != nil {
		cfg = ws.config.Config.RAG.Workspace
	}
	if err := walk.Refusal(ws.Root, cfg, ws.homeOK.Load()); err != nil {
		return nil, nil, err
	}
	b := walk.NewBounds(ws.Root, cfg)
	return walk.Docs(ws.Tree, b), b, nil
}

// indexState is the workspace index's build as the rest of Harvey sees
// it: /rag status says "building" with the count, and a find_code that
// waits for it says so.
type indexState struct {
	building    atomic.Bool
	done, total atomic.Int64
}

// indexReport is who hears about a sync of the index: its progress (files
// done of total) and, once, a wait for a build already under way.
type indexReport struct {
	progress func(done, total int)
	waiting  func(done, total int)
	// embedFor chooses the embedder given the model the index is bound
	// to (nil, or a nil answer: the lexical ranking alone).
	embedFor func(bound string) Embedder
}

// lockIndex takes the index for a sync, telling rep.waiting first when a
// build holds it.
func lockIndex(ws *Workspace, rep indexReport) {
	if ws.indexMu.TryLock() {
		return
	}
	if rep.waiting != nil && ws.index.building.Load() {
		rep.waiting(int(ws.index.done.Load()), int(ws.index.total.Load()))
	}
	ws.indexMu.Lock()
}

// syncIndex brings the index up to date with the workspace's files, with
// progress as files done of total: the total is the files the index held
// after its last sync (a query on an index up to date walks the workspace
// once), or, for a first build, a count by a walk of its own that reads no
// file. ws.indexMu is held.
func syncIndex(ctx context.Context, ws *Workspace, ix *wsindex.Index, rep indexReport) (wsindex.Stats, *walk.Bounds, error) {
	ws.index.done.Store(0)
	ws.index.total.Store(0) // counting
	ws.index.building.Store(true)
	defer ws.index.building.Store(false)
	total := ix.Files()
	if total == 0 {
		count, _, err := workspaceDocs(ws)
		if err != nil {
			return wsindex.Stats{}, nil, err
		}
		for range count {
			total++
		}
	}
	ws.index.total.Store(int64(total))
	docs, bounds, err := workspaceDocs(ws)
	if err != nil {
		return wsindex.Stats{}, nil, err
	}
	counted := func(yield func(wsindex.Doc) bool) {
		n := 0
		for d := range docs {
			if !yield(d) {
				return
			}
			n++
			total = max(total, n) // files added since the last sync
			ws.index.done.Store(int64(n))
			ws.index.total.Store(int64(total))
			if rep.progress != nil {
				rep.progress(n, total)
			}
		}
	}
	st, err := ix.Sync(ctx, counted)
	return st, bounds, err
}

// Embedder turns texts into vectors with one model (Ollama's batch
// endpoint, or an any-llm-go provider: rag.go).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Name() string
}

// queryWorkspace brings the index up to date and returns the k best
// chunks for q that the path policy lets the model read now. With an
// embedder (workspaceEmbedder), the chunks' embeddings rank them too, and
// both rankings are fused, the embedding one weighed by the share of the
// index that is embedded (a few chunks embedded move the answer little);
// when embedding fails, the lexical ranking answers alone.
func queryWorkspace(ctx context.Context, ws *Workspace, q string, k int, rep indexReport) ([]wsindex.Hit, wsindex.Stats, error) {
	lockIndex(ws, rep)
	defer ws.indexMu.Unlock()
	ix, err := openWorkspaceIndex(ws)
	if err != nil {
		return nil, wsindex.Stats{}, err
	}
	defer ix.Close()
	st, bounds, err := syncIndex(ctx, ws, ix, rep)
	if err != nil {
		return nil, st, err
	}
	st.LeftOut = bounds.Note()
	hits, err := ix.Query(ctx, q, k*wsindex.QueryDepth)
	if err != nil {
		return nil, st, err
	}
	if bound, _, _, err := ix.Embedded(ctx); err == nil && rep.embedFor != nil {
		if emb := rep.embedFor(bound); emb != nil {
			if near, err := nearestChunks(ctx, ix, emb, q, k*wsindex.QueryDepth); err == nil && len(near) > 0 {
				_, done, total, _ := ix.Embedded(ctx)
				st.Embedded, st.Total = done, total
				hits = wsindex.FuseWeighted([][]wsindex.Hit{hits, near}, []float64{1, float64(done) / float64(max(total, 1))})
			}
		}
	}
	readable := hits[:0:0]
	for _, h := range hits {
		if stillReadable(ws, h.Path) {
			readable = append(readable, h)
		}
	}
	// Files ranked as wholes, and spread: at most two pieces of one file
	// (more of a file the question names). Each piece returned is in its
	// file now, at its lines: an index Harvey did not write (one a
	// repository shipped in agents/) cannot put words in a file's mouth.
	lines := map[string][]string{}
	for {
		picked := wsindex.Spread(readable, q, k, 2)
		bad := slices.IndexFunc(picked, func(h wsindex.Hit) bool { return !hitHolds(ws, h, lines) })
		if bad < 0 {
			return picked, st, nil
		}
		readable = slices.DeleteFunc(readable, func(h wsindex.Hit) bool { return h.Path == picked[bad].Path && h.StartLine == picked[bad].StartLine })
	}
}

// hitHolds reports whether a hit's text is its file's lines now (the
// file read through the path policy and redacted, as it was indexed);
// lines keeps each file's lines for the other hits of a query.
func hitHolds(ws *Workspace, h wsindex.Hit, lines map[string][]string) bool {
	ls, ok := lines[h.Path]
	if !ok {
		ls = fileLinesNow(ws, h.Path)
		lines[h.Path] = ls
	}
	if h.StartLine < 1 || h.EndLine < h.StartLine || h.EndLine > len(ls) {
		return false
	}
	return strings.Join(ls[h.StartLine-1:h.EndLine], "") == h.Text
}

// fileLinesNow is a workspace file's lines as the index reads them (nil
// when the policy refuses it or it is not a regular file up to 1 MB).
func fileLinesNow(ws *Workspace, rel string) []string {
	rp, err := ws.Resolve(rel, wspath.OpRead)
	if err != nil {
		return nil
	}
	defer rp.Close()
	if rp.Info == nil || !rp.Info.Mode().IsRegular() || rp.Info.Size() > walk.MaxFile {
		return nil
	}
	f, _, err := rp.OpenVerified()
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, walk.MaxFile))
	if err != nil {
		return nil
	}
	return strings.SplitAfter(secrets.Redact(string(data)), "\n")
}

// queryEmbedBudget is how many new chunks a query embeds before it
// answers (a few changed files); the rest wait for harvey rag ingest
// --store workspace, and rank lexically meanwhile.
const queryEmbedBudget = 64

// embedWait bounds the embedding side of a query (a model loading on a
// Pi takes seconds); past it the lexical ranking answers alone.
const embedWait = 30 * time.Second

// nearestChunks embeds what changed (within the budget) and q, and ranks
// the chunks by their vectors.
func nearestChunks(ctx context.Context, ix *wsindex.Index, emb Embedder, q string, k int) ([]wsindex.Hit, error) {
	ctx, cancel := context.WithTimeout(ctx, embedWait)
	defer cancel()
	if _, err := embedPending(ctx, ix, emb, queryEmbedBudget, nil); err != nil {
		return nil, err
	}
	v, err := embedOne(ctx, emb, q)
	if err != nil {
		return nil, err
	}
	return ix.VectorQuery(ctx, emb.Name(), v, k)
}

// embedOne is text's vector.
func embedOne(ctx context.Context, emb Embedder, text string) ([]float32, error) {
	v, err := emb.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(v) != 1 {
		return nil, fmt.Errorf("the embedding model %s gave %d vectors for one text", emb.Name(), len(v))
	}
	return v[0], nil
}

// embedPending embeds up to limit chunks that have no vector yet (all of
// them when limit < 0), 32 to a request; progress is told the count.
func embedPending(ctx context.Context, ix *wsindex.Index, emb Embedder, limit int, progress func(done int)) (int, error) {
	done := 0
	for limit < 0 || done < limit {
		n := 32
		if limit >= 0 {
			n = min(n, limit-done)
		}
		ps, err := ix.Pending(ctx, emb.Name(), n)
		if err != nil || len(ps) == 0 {
			return done, err
		}
		texts := make([]string, len(ps))
		for i, p := range ps {
			texts[i] = p.Text // redacted when indexed
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			return done, err
		}
		if err := ix.PutVectors(ctx, emb.Name(), ps, vecs); err != nil {
			return done, err
		}
		done += len(ps)
		if progress != nil {
			progress(done)
		}
	}
	return done, nil
}

// stillReadable is the path policy at query time (the one path gate:
// agents/, the denylist and permissions: on the resolved file): rel is a
// regular file the model may read now.
func stillReadable(ws *Workspace, rel string) bool {
	rp, err := ws.Resolve(rel, wspath.OpRead)
	if err != nil {
		return false
	}
	defer rp.Close()
	return rp.Info.Mode().IsRegular()
}

// findBudget bounds find_code's answer: about 1,500 tokens, so a small
// model's window keeps room (a smaller result cap lowers it).
const findBudget = 6 << 10

// formatHits renders hits for the model, best first, within the budget:
// each as "path:start-end" and its lines, a long chunk cut.
func formatHits(hits []wsindex.Hit, limit int) string {
	if len(hits) == 0 {
		return "nothing in the workspace matches; try other words, or search_files with a pattern"
	}
	budget := min(findBudget, max(limit, 1024))
	var b strings.Builder
	for _, h := range hits {
		lines := strings.Split(strings.TrimRight(h.Text, "\n"), "\n")
		head := fmt.Sprintf("%s:%d-%d\n", h.Path, h.StartLine, h.EndLine)
		room := budget - b.Len() - len(head)
		if room < 200 {
			break
		}
		b.WriteString(head)
		for i, l := range lines {
			if len(l)+1 > room || i == 40 {
				fmt.Fprintf(&b, "… (lines %d-%d: read_file %s offset=%d)\n", h.StartLine+i, h.EndLine, h.Path, h.StartLine+i)
				break
			}
			b.WriteString(l + "\n")
			room -= len(l) + 1
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// indexBuild is the index brought up to date in the background when the
// REPL starts, so the model's first find_code does not wait for a whole
// build (a query meanwhile waits for it, then finds it done).
type indexBuild struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// stop cancels the build (what it indexed is kept) and waits for it.
func (b *indexBuild) stop() {
	if b != nil {
		b.cancel()
		<-b.done
	}
}
