// Package ragstore is a store of embedded chunks, the original Harvey's
// RAG store: one SQLite database (the project's pure-Go driver) bound to
// one embedding model. Chunks are cut as the workspace index cuts them
// (internal/wsindex.Chunks) and their vectors kept normalised and int8
// quantized, so a query is a dot product; a query reads the vectors a
// block of 64 at a time and keeps only the best k, so a large store is
// never held in memory at once.
//
// Contract: Open binds a new store to the model it is given and refuses,
// naming both, a store bound to another; it refuses (in one line, leaving
// the file as it was) a link, a hard-linked, corrupt or foreign file. The
// caller decides what is ingested (filtered and redacted before Ingest: an
// embedding of a secret is a copy of it). Ingest re-embeds only the sources
// whose content hash changed, each source in one transaction, so an
// interrupted ingest leaves a usable store.
package ragstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"

	_ "modernc.org/sqlite"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/vecmath"
	"github.com/harvey-agent/harvey/internal/wsindex"
)

// appID marks a store; oldAppID is the first format, whose vectors sat in
// the chunk rows (read and moved into blocks on open).
const (
	appID    = 0x48525233 // "HRR3"
	oldAppID = 0x48525232 // "HRR2"
)

// A query reads vectors in blocks of blockSize: one row per block, so the
// database is stepped 1,600 times for 100,000 vectors instead of 100,000
// (most of a query's time was SQLite's per-row work, not the arithmetic).
// A block holds its chunks' ids (int64, little-endian) and their vectors
// (int8, one after the other); chunks.block says which block holds a
// chunk's vector.
const blockSize = 64

const schema = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (path TEXT PRIMARY KEY, hash TEXT NOT NULL);
CREATE TABLE chunks (id INTEGER PRIMARY KEY, source TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, text TEXT NOT NULL, block INTEGER NOT NULL);
CREATE INDEX chunks_source ON chunks(source);
CREATE TABLE blocks (id INTEGER PRIMARY KEY, ids BLOB NOT NULL, vecs BLOB NOT NULL);
`

// Doc is one source to ingest, filtered and redacted by the caller.
type Doc struct {
	Source  string
	Content []byte
}

// Chunk is what a query returns: the workspace index's hit (source, lines,
// score, text), so both answer in one shape.
type Chunk = wsindex.Hit

// EmbedFunc embeds texts with the store's model.
type EmbedFunc func(ctx context.Context, texts []string) ([][]float32, error)

// Stats is what an Ingest did.
type Stats struct {
	Sources, Embedded, Unchanged, Chunks int
}

// Store is an open store.
type Store struct {
	db    *sql.DB
	name  string
	model string
}

// Open opens the store at path, creating it bound to model when it does
// not exist.
func Open(path, name, model string) (*Store, error) {
	fresh, err := fsinfo.OwnDatabase(path, name, model != "")
	if err != nil {
		return nil, err
	}
	if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist; create it with an embedding model (harvey rag create)", name)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(2000)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	db.SetMaxOpenConns(1)
	s := &Store{db: db, name: name}
	if err := s.prepare(fresh, model); err != nil {
		db.Close()
		if fresh {
			os.Remove(path)
		}
		return nil, err
	}
	return s, nil
}

func (s *Store) prepare(fresh bool, model string) error {
	var id int
	if err := s.db.QueryRow("PRAGMA application_id").Scan(&id); err != nil {
		return fmt.Errorf("%s is not a store Harvey can read (%s); left as it is", s.name, firstLine(err.Error()))
	}
	if !fresh {
		if id != appID && id != oldAppID {
			return fmt.Errorf("%s is not a Harvey RAG store; left as it is", s.name)
		}
		if err := s.db.QueryRow("SELECT value FROM meta WHERE key = 'embedding_model'").Scan(&s.model); err != nil {
			return fmt.Errorf("%s is damaged (%s); left as it is", s.name, firstLine(err.Error()))
		}
		if model != "" && model != s.model {
			return fmt.Errorf("%s is bound to the embedding model %s; %s would give vectors that do not compare (create another store for it)", s.name, s.model, model)
		}
		if id == oldAppID {
			return s.upgrade()
		}
		return nil
	}
	s.model = model
	// Large pages: a block of vectors (49 KB) is read in one or two reads
	// rather than a dozen.
	if _, err := s.db.Exec("PRAGMA page_size = 65536"); err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	defer tx.Rollback()
	for _, q := range []string{schema, fmt.Sprintf("PRAGMA application_id = %d", appID)} {
		if _, err := tx.Exec(q); err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
	}
	if _, err := tx.Exec("INSERT INTO meta(key, value) VALUES('embedding_model', ?)", model); err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	return tx.Commit()
}

// Model is the embedding model the store is bound to.
func (s *Store) Model() string { return s.model }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Workspace is the directory the store's sources are relative to ("" for
// a store made before it was recorded).
func (s *Store) Workspace() string {
	var w string
	s.db.QueryRow("SELECT value FROM meta WHERE key = 'workspace'").Scan(&w)
	return w
}

// SetWorkspace records the directory the store's sources are relative to.
func (s *Store) SetWorkspace(dir string) error {
	if _, err := s.db.Exec("INSERT INTO meta(key, value) VALUES('workspace', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", dir); err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	return nil
}

// embedBatch is how many chunks one embedding request carries.
const embedBatch = 32

// Ingest embeds what changed among docs (progress is told each source).
func (s *Store) Ingest(ctx context.Context, docs []Doc, embed EmbedFunc, progress func(done, total int)) (Stats, error) {
	var st Stats
	for i, d := range docs {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if progress != nil {
			progress(i, len(docs))
		}
		st.Sources++
		sum := sha256.Sum256(d.Content)
		hash := hex.EncodeToString(sum[:])
		var old string
		s.db.QueryRowContext(ctx, "SELECT hash FROM sources WHERE path = ?", d.Source).Scan(&old)
		if old == hash {
			st.Unchanged++
			continue
		}
		chunks := wsindex.Chunks(d.Source, d.Content)
		var vecs [][]float32
		for j := 0; j < len(chunks); j += embedBatch {
			var texts []string
			for _, c := range chunks[j:min(j+embedBatch, len(chunks))] {
				texts = append(texts, c.Text)
			}
			v, err := embed(ctx, texts)
			if err != nil {
				return st, err
			}
			if len(v) != len(texts) {
				return st, fmt.Errorf("the embedding model gave %d vectors for %d texts", len(v), len(texts))
			}
			vecs = append(vecs, v...)
		}
		if err := s.put(ctx, d.Source, hash, chunks, vecs); err != nil {
			return st, err
		}
		st.Embedded++
		st.Chunks += len(chunks)
	}
	if progress != nil {
		progress(len(docs), len(docs))
	}
	return st, nil
}

func (s *Store) put(ctx context.Context, source, hash string, chunks []wsindex.Chunk, vecs [][]float32) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	defer tx.Rollback()
	w := &blockWriter{tx: tx, ctx: ctx, blocks: map[int64]*block{}}
	if err := w.drop(source); err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	for _, q := range []string{"DELETE FROM chunks WHERE source = ?", "DELETE FROM sources WHERE path = ?"} {
		if _, err := tx.ExecContext(ctx, q, source); err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
	}
	for i, c := range chunks {
		b, err := w.tail()
		if err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO chunks(source, start_line, end_line, text, block) VALUES(?, ?, ?, ?, ?)",
			source, c.StartLine, c.EndLine, c.Text, b.id)
		if err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
		id, _ := res.LastInsertId()
		b.add(id, vecmath.Quantize(vecmath.Normalize(vecs[i])))
	}
	if err := w.flush(); err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO sources(path, hash) VALUES(?, ?)", source, hash); err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	return tx.Commit()
}

// block is one row of blocks, in memory while a source is written.
type block struct {
	id    int64
	ids   []byte // int64 little-endian per vector
	vecs  []byte
	dirty bool
}

func (b *block) count() int { return len(b.ids) / 8 }

func (b *block) add(id int64, vec []byte) {
	b.ids = binary.LittleEndian.AppendUint64(b.ids, uint64(id))
	b.vecs = append(b.vecs, vec...)
	b.dirty = true
}

// blockWriter changes blocks within one transaction: the vectors of a
// source's old chunks are taken out of their blocks, new ones appended to
// the last block until it is full.
type blockWriter struct {
	tx     *sql.Tx
	ctx    context.Context
	blocks map[int64]*block
	last   *block
}

func (w *blockWriter) load(id int64) (*block, error) {
	if b, ok := w.blocks[id]; ok {
		return b, nil
	}
	b := &block{id: id}
	err := w.tx.QueryRowContext(w.ctx, "SELECT ids, vecs FROM blocks WHERE id = ?", id).Scan(&b.ids, &b.vecs)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	w.blocks[id] = b
	return b, nil
}

// drop takes source's vectors out of their blocks.
func (w *blockWriter) drop(source string) error {
	rows, err := w.tx.QueryContext(w.ctx, "SELECT id, block FROM chunks WHERE source = ?", source)
	if err != nil {
		return err
	}
	gone := map[int64]map[int64]bool{}
	for rows.Next() {
		var id, blk int64
		if err := rows.Scan(&id, &blk); err != nil {
			rows.Close()
			return err
		}
		if gone[blk] == nil {
			gone[blk] = map[int64]bool{}
		}
		gone[blk][id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for blk, ids := range gone {
		b, err := w.load(blk)
		if err != nil {
			return err
		}
		if b.count() == 0 {
			continue
		}
		dim := len(b.vecs) / b.count()
		var keptIDs, keptVecs []byte
		for k := range b.count() {
			if !ids[int64(binary.LittleEndian.Uint64(b.ids[8*k:]))] {
				keptIDs = append(keptIDs, b.ids[8*k:8*k+8]...)
				keptVecs = append(keptVecs, b.vecs[dim*k:dim*k+dim]...)
			}
		}
		b.ids, b.vecs, b.dirty = keptIDs, keptVecs, true
	}
	return nil
}

// tail is the block the next vector goes into.
func (w *blockWriter) tail() (*block, error) {
	if w.last == nil {
		var id sql.NullInt64
		if err := w.tx.QueryRowContext(w.ctx, "SELECT max(id) FROM blocks").Scan(&id); err != nil {
			return nil, err
		}
		b, err := w.load(max(id.Int64, 1))
		if err != nil {
			return nil, err
		}
		w.last = b
	}
	if w.last.count() >= blockSize {
		b, err := w.load(w.last.id + 1)
		if err != nil {
			return nil, err
		}
		w.last = b
	}
	return w.last, nil
}

// flush writes the blocks that changed (an emptied one is deleted).
func (w *blockWriter) flush() error {
	for _, b := range w.blocks {
		switch {
		case !b.dirty:
		case b.count() == 0:
			if _, err := w.tx.ExecContext(w.ctx, "DELETE FROM blocks WHERE id = ?", b.id); err != nil {
				return err
			}
		default:
			if _, err := w.tx.ExecContext(w.ctx, "INSERT OR REPLACE INTO blocks(id, ids, vecs) VALUES(?, ?, ?)", b.id, b.ids, b.vecs); err != nil {
				return err
			}
		}
	}
	return nil
}

// upgrade moves a first-format store's vectors (a column of chunks) into
// blocks, in one transaction: an interrupted upgrade leaves the old store.
func (s *Store) upgrade() error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	defer tx.Rollback()
	fail := func(err error) error {
		return fmt.Errorf("%s could not be upgraded (%s); left as it is", s.name, firstLine(err.Error()))
	}
	for _, q := range []string{
		"CREATE TABLE blocks (id INTEGER PRIMARY KEY, ids BLOB NOT NULL, vecs BLOB NOT NULL)",
		"ALTER TABLE chunks ADD COLUMN block INTEGER NOT NULL DEFAULT 0",
	} {
		if _, err := tx.Exec(q); err != nil {
			return fail(err)
		}
	}
	rows, err := tx.Query("SELECT id, vec FROM chunks ORDER BY id")
	if err != nil {
		return fail(err)
	}
	var all []*block
	for rows.Next() {
		var id int64
		var vec []byte
		if err := rows.Scan(&id, &vec); err != nil {
			rows.Close()
			return fail(err)
		}
		if len(all) == 0 || all[len(all)-1].count() >= blockSize {
			all = append(all, &block{id: int64(len(all) + 1)})
		}
		all[len(all)-1].add(id, vec)
	}
	rows.Close()
	for _, b := range all {
		if _, err := tx.Exec("INSERT INTO blocks(id, ids, vecs) VALUES(?, ?, ?)", b.id, b.ids, b.vecs); err != nil {
			return fail(err)
		}
		if _, err := tx.Exec("UPDATE chunks SET block = ? WHERE id >= ? AND id <= ?", b.id,
			int64(binary.LittleEndian.Uint64(b.ids)), int64(binary.LittleEndian.Uint64(b.ids[len(b.ids)-8:]))); err != nil {
			return fail(err)
		}
	}
	for _, q := range []string{"ALTER TABLE chunks DROP COLUMN vec", fmt.Sprintf("PRAGMA application_id = %d", appID)} {
		if _, err := tx.Exec(q); err != nil {
			return fail(err)
		}
	}
	return tx.Commit()
}

// Sources lists the ingested sources and their content hashes.
func (s *Store) Sources() (map[string]string, error) {
	rows, err := s.db.Query("SELECT path, hash FROM sources")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.name, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var p, h string
		rows.Scan(&p, &h)
		out[p] = h
	}
	return out, rows.Err()
}

// Count is the number of chunks.
func (s *Store) Count() int {
	var n int
	s.db.QueryRow("SELECT count(*) FROM chunks").Scan(&n)
	return n
}

// Query returns the k chunks most similar to vec (cosine), best first,
// those below minScore left out. The database is read one block at a time
// while workers (one per core, at most four) score the blocks read before,
// each keeping its own best k: memory is a few blocks, whatever the size.
func (s *Store) Query(ctx context.Context, vec []float32, k int, minScore float64) ([]Chunk, error) {
	q := vecmath.Normalize(vec)
	rows, err := s.db.QueryContext(ctx, "SELECT ids, vecs FROM blocks")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.name, err)
	}
	type job struct{ ids, vecs []byte }
	workers := min(runtime.GOMAXPROCS(0), 4)
	jobs := make(chan job, 2*workers)
	free := make(chan job, 3*workers) // buffers handed back for reuse
	tops := make([]vecmath.TopK, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			top := &tops[w]
			top.K = k
			for j := range jobs {
				scoreBlock(top, q, j.ids, j.vecs, minScore)
				select {
				case free <- j:
				default:
				}
			}
		})
	}
	var bad error
	for rows.Next() {
		var ids, vecs sql.RawBytes // the row's own bytes, valid until the next row
		if err := rows.Scan(&ids, &vecs); err != nil {
			bad = fmt.Errorf("%s: %v", s.name, err)
			break
		}
		n := len(ids) / 8
		if n == 0 {
			continue
		}
		if len(vecs) != n*len(q) {
			bad = fmt.Errorf("%s holds vectors of %d dimensions; the query has %d (another embedding model?)", s.name, len(vecs)/n, len(q))
			break
		}
		var j job
		select {
		case j = <-free:
		default:
		}
		j.ids, j.vecs = append(j.ids[:0], ids...), append(j.vecs[:0], vecs...)
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	rows.Close()
	if bad == nil {
		bad = rows.Err()
	}
	if bad != nil {
		return nil, bad
	}
	top := vecmath.TopK{K: k}
	for _, t := range tops {
		for _, h := range t.Kept() {
			top.Offer(h)
		}
	}
	best := top.Best()
	var out []Chunk
	for _, h := range best {
		c := Chunk{Score: h.Score}
		if err := s.db.QueryRowContext(ctx, "SELECT source, start_line, end_line, text FROM chunks WHERE id = ?", h.ID).Scan(&c.Path, &c.StartLine, &c.EndLine, &c.Text); err != nil {
			return nil, fmt.Errorf("%s: %v", s.name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// scoreBlock scores a block's vectors into top.
func scoreBlock(top *vecmath.TopK, q []float32, ids, vecs []byte, minScore float64) {
	for v := range len(ids) / 8 {
		score := vecmath.Dot(q, vecs[v*len(q):(v+1)*len(q)])
		if floor, full := top.Floor(); score < minScore || full && score <= floor {
			continue
		}
		top.Offer(vecmath.Scored{ID: int64(binary.LittleEndian.Uint64(ids[8*v:])), Score: score})
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
