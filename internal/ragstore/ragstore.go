// Package ragstore is a store of embedded chunks, the original Harvey's
// RAG store: one SQLite database (the project's pure-Go driver) bound to
// one embedding model. Chunks are cut as the workspace index cuts them
// (internal/wsindex.Chunks) and their vectors kept normalised and int8
// quantized, so a query is a dot product; a query reads the vectors row by row and
// keeps only the best k, so a large store is never held in memory at once.
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
	"container/heap"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"strings"

	_ "modernc.org/sqlite"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/wsindex"
)

const appID = 0x48525232 // "HRR2"

const schema = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (path TEXT PRIMARY KEY, hash TEXT NOT NULL);
CREATE TABLE chunks (id INTEGER PRIMARY KEY, source TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, text TEXT NOT NULL, vec BLOB NOT NULL);
CREATE INDEX chunks_source ON chunks(source);
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
		if id != appID {
			return fmt.Errorf("%s is not a Harvey RAG store; left as it is", s.name)
		}
		if err := s.db.QueryRow("SELECT value FROM meta WHERE key = 'embedding_model'").Scan(&s.model); err != nil {
			return fmt.Errorf("%s is damaged (%s); left as it is", s.name, firstLine(err.Error()))
		}
		if model != "" && model != s.model {
			return fmt.Errorf("%s is bound to the embedding model %s; %s would give vectors that do not compare (create another store for it)", s.name, s.model, model)
		}
		return nil
	}
	s.model = model
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
	for _, q := range []string{"DELETE FROM chunks WHERE source = ?", "DELETE FROM sources WHERE path = ?"} {
		if _, err := tx.ExecContext(ctx, q, source); err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
	}
	for i, c := range chunks {
		if _, err := tx.ExecContext(ctx, "INSERT INTO chunks(source, start_line, end_line, text, vec) VALUES(?, ?, ?, ?, ?)",
			source, c.StartLine, c.EndLine, c.Text, quantize(normalize(vecs[i]))); err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO sources(path, hash) VALUES(?, ?)", source, hash); err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
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
// those below minScore left out.
func (s *Store) Query(ctx context.Context, vec []float32, k int, minScore float64) ([]Chunk, error) {
	q := normalize(vec)
	rows, err := s.db.QueryContext(ctx, "SELECT id, vec FROM chunks")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.name, err)
	}
	top := &scored{}
	for rows.Next() {
		var id int64
		var blob sql.RawBytes // the row's own bytes: no copy per vector
		if err := rows.Scan(&id, &blob); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%s: %v", s.name, err)
		}
		if len(blob) != len(q) {
			rows.Close()
			return nil, fmt.Errorf("%s holds vectors of %d dimensions; the query has %d (another embedding model?)", s.name, len(blob), len(q))
		}
		score := dotInt8(q, blob)
		if score < minScore {
			continue
		}
		if top.Len() < k {
			heap.Push(top, hit{id, score})
		} else if score > (*top)[0].score {
			(*top)[0] = hit{id, score}
			heap.Fix(top, 0)
		}
	}
	rows.Close()
	best := make([]hit, top.Len())
	for i := len(best) - 1; i >= 0; i-- {
		best[i] = heap.Pop(top).(hit)
	}
	var out []Chunk
	for _, h := range best {
		c := Chunk{Score: h.score}
		if err := s.db.QueryRowContext(ctx, "SELECT source, start_line, end_line, text FROM chunks WHERE id = ?", h.id).Scan(&c.Path, &c.StartLine, &c.EndLine, &c.Text); err != nil {
			return nil, fmt.Errorf("%s: %v", s.name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

type hit struct {
	id    int64
	score float64
}

// scored is a min-heap of the best hits so far.
type scored []hit

func (h scored) Len() int           { return len(h) }
func (h scored) Less(i, j int) bool { return h[i].score < h[j].score }
func (h scored) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scored) Push(x any)        { *h = append(*h, x.(hit)) }
func (h *scored) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := 1 / math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// quantize stores a normalised vector as int8 (each component times 127,
// rounded): a quarter of float32's bytes, and a cosine within about 1%.
func quantize(v []float32) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(int8(math.Round(float64(max(-1, min(1, x))) * 127)))
	}
	return b
}

// dotInt8 is the dot product of a float vector and an int8 one.
func dotInt8(q []float32, b []byte) float64 {
	var s float32
	for i, x := range q {
		s += x * float32(int8(b[i]))
	}
	return float64(s) / 127
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
