package wsindex

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/harvey-agent/harvey/internal/vecmath"
)

// The workspace's embeddings: a vector per chunk from one model (named in
// meta), kept beside the lexical index so that re-indexing a file drops
// its vectors with its chunks. Embedding is the caller's (Pending, then
// PutVectors); a query ranks the chunks that have a vector.

// Pending is a chunk that has no vector yet.
type Pending struct {
	ID   int64
	Text string
}

// model is the embedding model the vectors are from ("" when none).
func (ix *Index) model(ctx context.Context) string {
	var m string
	ix.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'embedding_model'").Scan(&m)
	return m
}

// Bind makes model the one the vectors are from: vectors of another
// model are dropped (they do not compare) and every chunk waits for one.
func (ix *Index) Bind(ctx context.Context, model string) error {
	var cur string
	err := ix.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'embedding_model'").Scan(&cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return ix.explain(err)
	}
	if cur == model {
		return nil
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return ix.explain(err)
	}
	defer tx.Rollback()
	for _, q := range []string{"DELETE FROM vecs", "DELETE FROM todo", "INSERT INTO todo(chunk) SELECT id FROM chunks"} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return ix.explain(err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO meta(key, value) VALUES('embedding_model', ?)", model); err != nil {
		return ix.explain(err)
	}
	return ix.explain0(tx.Commit())
}

func (ix *Index) explain0(err error) error {
	if err == nil {
		return nil
	}
	return ix.explain(err)
}

// Pending returns up to n chunks with no vector from model (binding the
// index to model first). The chunks waiting are kept in a table of their
// own, so asking costs what waits, not the index's size.
func (ix *Index) Pending(ctx context.Context, model string, n int) ([]Pending, error) {
	if err := ix.Bind(ctx, model); err != nil {
		return nil, err
	}
	rows, err := ix.db.QueryContext(ctx, "SELECT c.id, c.body FROM todo t JOIN chunks c ON c.id = t.chunk ORDER BY t.chunk LIMIT ?", n)
	if err != nil {
		return nil, ix.explain(err)
	}
	defer rows.Close()
	var out []Pending
	for rows.Next() {
		var p Pending
		if err := rows.Scan(&p.ID, &p.Text); err != nil {
			return nil, ix.explain(err)
		}
		out = append(out, p)
	}
	return out, ix.explain0(rows.Err())
}

// PutVectors stores the vectors of the chunks ps, made by model; a chunk
// indexed again meanwhile is skipped (its vector would be of old text: a
// chunk's id may be reused, so its text is compared too).
func (ix *Index) PutVectors(ctx context.Context, model string, ps []Pending, vecs [][]float32) error {
	if len(ps) != len(vecs) {
		return fmt.Errorf("%s: %d vectors for %d chunks", ix.name, len(vecs), len(ps))
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return ix.explain(err)
	}
	defer tx.Rollback()
	var cur string
	tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'embedding_model'").Scan(&cur)
	if cur != model {
		return fmt.Errorf("%s: the vectors are from %s, not %s", ix.name, cmp.Or(cur, "no model"), model)
	}
	for i, p := range ps {
		res, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO vecs(chunk, vec) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ? AND body = ?)",
			p.ID, vecmath.Quantize(vecmath.Normalize(vecs[i])), p.ID, p.Text)
		if err != nil {
			return ix.explain(err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			if _, err := tx.ExecContext(ctx, "DELETE FROM todo WHERE chunk = ?", p.ID); err != nil {
				return ix.explain(err)
			}
		}
	}
	return ix.explain0(tx.Commit())
}

// Embedded says which model the vectors are from and how many of the
// chunks have one.
func (ix *Index) Embedded(ctx context.Context) (model string, done, total int, err error) {
	ix.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'embedding_model'").Scan(&model)
	if err := ix.db.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM vecs), (SELECT count(*) FROM chunks)").Scan(&done, &total); err != nil {
		return "", 0, 0, ix.explain(err)
	}
	return model, done, total, nil
}

// VectorQuery returns the k chunks whose vectors from model are nearest
// vec (cosine), best first; none when the vectors are another model's.
func (ix *Index) VectorQuery(ctx context.Context, model string, vec []float32, k int) ([]Hit, error) {
	var cur string
	ix.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'embedding_model'").Scan(&cur)
	if cur != model || k <= 0 {
		return nil, nil
	}
	q := vecmath.Normalize(vec)
	rows, err := ix.db.QueryContext(ctx, "SELECT chunk, vec FROM vecs")
	if err != nil {
		return nil, ix.explain(err)
	}
	top := vecmath.TopK{K: k}
	for rows.Next() {
		var id int64
		var b sql.RawBytes
		if err := rows.Scan(&id, &b); err != nil {
			rows.Close()
			return nil, ix.explain(err)
		}
		if len(b) != len(q) {
			continue // another model's length: never compared
		}
		top.Offer(vecmath.Scored{ID: id, Score: vecmath.Dot(q, b)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, ix.explain(err)
	}
	best := top.Best()
	var out []Hit
	for _, b := range best {
		h := Hit{Score: b.Score}
		if err := ix.db.QueryRowContext(ctx, "SELECT path, start_line, end_line, body FROM chunks WHERE id = ?", b.ID).Scan(&h.Path, &h.StartLine, &h.EndLine, &h.Text); err != nil {
			continue // dropped since
		}
		out = append(out, h)
	}
	return out, nil
}

// rrfK is reciprocal rank fusion's constant (Cormack et al.: 60).
const rrfK = 60

// FuseWeighted merges rankings by reciprocal rank fusion: each chunk
// scores the sum of w/(60 + its rank) over the rankings it is in, w the
// ranking's weight (an embedding ranking over a tenth of the index counts
// a tenth), so a chunk both rank high beats one only one ranks first.
// Scores are the fused ones.
func FuseWeighted(rankings [][]Hit, weights []float64) []Hit {
	type key struct {
		path       string
		start, end int
	}
	score := map[key]float64{}
	first := map[key]Hit{}
	var order []key
	for i, r := range rankings {
		for rank, h := range r {
			k := key{h.Path, h.StartLine, h.EndLine}
			if _, ok := first[k]; !ok {
				first[k] = h
				order = append(order, k)
			}
			score[k] += weights[i] / float64(rrfK+rank+1)
		}
	}
	out := make([]Hit, 0, len(order))
	for _, k := range order {
		h := first[k]
		h.Score = score[k]
		out = append(out, h)
	}
	slices.SortStableFunc(out, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
	return out
}
