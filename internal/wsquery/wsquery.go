// Package wsquery is the workspace as a store, as the session uses it
// (issue 36): internal/wsindex indexes what this package gives it — the
// workspace's text files that the path policy lets the model read (not
// agents/, .git, the denylist, permissions:, .gitignore, binaries, files
// over 1 MB: internal/walk), each redacted as the model's view is before
// it is stored — and every hit is checked against the same policy again
// when it is returned, and against its file's lines now, so a file hidden
// after indexing is not returned and an index Harvey did not write cannot
// put words in a file's mouth. The index lives in agents/index.db
// (Harvey's own), is brought up to date from content hashes before each
// query, and needs no embedding model; with one (an Embedder), the
// chunks' vectors rank them too.
//
// Contract: a Store is one workspace's index in this process, its syncs
// one at a time (the REPL's build and a query wait for each other rather
// than meet SQLite's lock); Query is find_code's and harvey rag query's,
// Build the REPL's start, Progress what /rag status says meanwhile.
// Readable is the path policy at query time, for any store's hits.
package wsquery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/walk"
	"github.com/harvey-agent/harvey/internal/wsindex"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// Path is where the index is kept, in the workspace.
const Path = wspath.AgentsDir + "/index.db"

// Embedder turns texts into vectors with one model (Ollama's batch
// endpoint, or an any-llm-go provider: the root's anyllm_client.go, through internal/rag).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Name() string
}

// Store is one workspace's index in this process.
type Store struct {
	tree   *wspath.Tree
	bounds func() config.RagWorkspace // your config's rag: {workspace:}, read at each walk

	mu          sync.Mutex // one sync at a time
	building    atomic.Bool
	done, total atomic.Int64
	// HomeOK: you said yes to indexing a workspace that is your home or /.
	HomeOK atomic.Bool
}

// New is the store of tree's workspace; bounds gives the walk's settings.
func New(tree *wspath.Tree, bounds func() config.RagWorkspace) *Store {
	return &Store{tree: tree, bounds: bounds}
}

// Open opens the workspace's index (creating it).
func (s *Store) Open() (*wsindex.Index, error) {
	if !s.tree.HasAgents() {
		return nil, errors.New("no agents/ directory in this workspace for the index")
	}
	return wsindex.Open(filepath.Join(s.tree.Root, wspath.AgentsDir, "index.db"), Path)
}

// Docs is the index's walk with its bounds (from your config), refused
// where the workspace is the home directory or / (unless HomeOK).
func (s *Store) Docs() (iter.Seq[wsindex.Doc], *walk.Bounds, error) {
	cfg := s.bounds()
	if err := walk.Refusal(s.tree.Root, cfg, s.HomeOK.Load()); err != nil {
		return nil, nil, err
	}
	b := walk.NewBounds(s.tree.Root, cfg)
	return walk.Docs(s.tree, b), b, nil
}

// Progress is the build as /rag status says it: whether one runs, and
// its files done of total (total 0: still counting).
func (s *Store) Progress() (building bool, done, total int) {
	return s.building.Load(), int(s.done.Load()), int(s.total.Load())
}

// MarkBuilding says a build is under way from now (before its goroutine
// runs and before the index's file exists: a status does not open it
// half made); Build ends it.
func (s *Store) MarkBuilding() { s.building.Store(true) }

// Build brings the index up to date (the REPL's start, in the background;
// a failure is said by the first query, in one line).
func (s *Store) Build(ctx context.Context) {
	s.building.Store(true)
	defer s.building.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.Open()
	if err != nil {
		return
	}
	defer ix.Close()
	s.sync(ctx, ix, Report{})
}

// Report is who hears about a sync of the index: its progress (files
// done of total) and, once, a wait for a build already under way.
type Report struct {
	Progress func(done, total int)
	Waiting  func(done, total int)
	// EmbedFor chooses the embedder given the model the index is bound
	// to (nil, or a nil answer: the lexical ranking alone).
	EmbedFor func(bound string) Embedder
}

// lock takes the index for a sync, telling rep.Waiting first when a
// build holds it.
func (s *Store) lock(rep Report) {
	if s.mu.TryLock() {
		return
	}
	if rep.Waiting != nil && s.building.Load() {
		rep.Waiting(int(s.done.Load()), int(s.total.Load()))
	}
	s.mu.Lock()
}

// sync brings the index up to date with the workspace's files, with
// progress as files done of total: the total is the files the index held
// after its last sync (a query on an index up to date walks the workspace
// once), or, for a first build, a count by a walk of its own that reads no
// file. s.mu is held.
func (s *Store) sync(ctx context.Context, ix *wsindex.Index, rep Report) (wsindex.Stats, *walk.Bounds, error) {
	s.done.Store(0)
	s.total.Store(0) // counting
	s.building.Store(true)
	defer s.building.Store(false)
	total := ix.Files()
	if total == 0 {
		count, _, err := s.Docs()
		if err != nil {
			return wsindex.Stats{}, nil, err
		}
		for range count {
			total++
		}
	}
	s.total.Store(int64(total))
	docs, bounds, err := s.Docs()
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
			s.done.Store(int64(n))
			s.total.Store(int64(total))
			if rep.Progress != nil {
				rep.Progress(n, total)
			}
		}
	}
	st, err := ix.Sync(ctx, counted)
	return st, bounds, err
}

// Query brings the index up to date and returns the k best chunks for q
// that the path policy lets the model read now. With an embedder
// (rep.EmbedFor), the chunks' embeddings rank them too, and both rankings
// are fused, the embedding one weighed by the share of the index that is
// embedded (a few chunks embedded move the answer little); when embedding
// fails, the lexical ranking answers alone.
func (s *Store) Query(ctx context.Context, q string, k int, rep Report) ([]wsindex.Hit, wsindex.Stats, error) {
	s.lock(rep)
	defer s.mu.Unlock()
	ix, err := s.Open()
	if err != nil {
		return nil, wsindex.Stats{}, err
	}
	defer ix.Close()
	st, bounds, err := s.sync(ctx, ix, rep)
	if err != nil {
		return nil, st, err
	}
	st.LeftOut = bounds.Note()
	hits, err := ix.Query(ctx, q, k*wsindex.QueryDepth)
	if err != nil {
		return nil, st, err
	}
	if bound, _, _, err := ix.Embedded(ctx); err == nil && rep.EmbedFor != nil {
		if emb := rep.EmbedFor(bound); emb != nil {
			if near, err := nearestChunks(ctx, ix, emb, q, k*wsindex.QueryDepth); err == nil && len(near) > 0 {
				_, done, total, _ := ix.Embedded(ctx)
				st.Embedded, st.Total = done, total
				hits = wsindex.FuseWeighted([][]wsindex.Hit{hits, near}, []float64{1, float64(done) / float64(max(total, 1))})
			}
		}
	}
	readable := hits[:0:0]
	for _, h := range hits {
		if Readable(s.tree, h.Path) {
			readable = append(readable, h)
		}
	}
	// Files ranked as wholes, and spread: at most two pieces of one file
	// (more of a file the question names). Each piece returned is in its
	// file now, at its lines.
	lines := map[string][]string{}
	for {
		picked := wsindex.Spread(readable, q, k, 2)
		bad := slices.IndexFunc(picked, func(h wsindex.Hit) bool { return !hitHolds(s.tree, h, lines) })
		if bad < 0 {
			return picked, st, nil
		}
		readable = slices.DeleteFunc(readable, func(h wsindex.Hit) bool { return h.Path == picked[bad].Path && h.StartLine == picked[bad].StartLine })
	}
}

// hitHolds reports whether a hit's text is its file's lines now (the
// file read through the path policy and redacted, as it was indexed);
// lines keeps each file's lines for the other hits of a query.
func hitHolds(ws *wspath.Tree, h wsindex.Hit, lines map[string][]string) bool {
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
func fileLinesNow(ws *wspath.Tree, rel string) []string {
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

// EmbedWait bounds the embedding side of a query (a model loading on a
// Pi takes seconds); past it the lexical ranking answers alone.
const EmbedWait = 30 * time.Second

// nearestChunks embeds what changed (within the budget) and q, and ranks
// the chunks by their vectors.
func nearestChunks(ctx context.Context, ix *wsindex.Index, emb Embedder, q string, k int) ([]wsindex.Hit, error) {
	ctx, cancel := context.WithTimeout(ctx, EmbedWait)
	defer cancel()
	if _, err := EmbedPending(ctx, ix, emb, queryEmbedBudget, nil); err != nil {
		return nil, err
	}
	v, err := EmbedOne(ctx, emb, q)
	if err != nil {
		return nil, err
	}
	return ix.VectorQuery(ctx, emb.Name(), v, k)
}

// EmbedOne is text's vector.
func EmbedOne(ctx context.Context, emb Embedder, text string) ([]float32, error) {
	v, err := emb.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(v) != 1 {
		return nil, fmt.Errorf("the embedding model %s gave %d vectors for one text", emb.Name(), len(v))
	}
	return v[0], nil
}

// EmbedPending embeds up to limit chunks that have no vector yet (all of
// them when limit < 0), 32 to a request; progress is told the count.
func EmbedPending(ctx context.Context, ix *wsindex.Index, emb Embedder, limit int, progress func(done int)) (int, error) {
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

// Readable is the path policy at query time (the one path gate:
// agents/, the denylist and permissions: on the resolved file): rel is a
// regular file the model may read now.
func Readable(ws *wspath.Tree, rel string) bool {
	rp, err := ws.Resolve(rel, wspath.OpRead)
	if err != nil {
		return false
	}
	defer rp.Close()
	return rp.Info.Mode().IsRegular()
}

// FindBudget bounds find_code's answer: about 1,500 tokens, so a small
// model's window keeps room (a smaller result cap lowers it).
const FindBudget = 6 << 10

// FormatHits renders hits for the model, best first, within the budget:
// each as "path:start-end" and its lines, a long chunk cut.
func FormatHits(hits []wsindex.Hit, limit int) string {
	if len(hits) == 0 {
		return "nothing in the workspace matches; try other words, or search_files with a pattern"
	}
	budget := min(FindBudget, max(limit, 1024))
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
