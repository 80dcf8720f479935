package wsindex

import (
	"context"
	"hash/fnv"
	"path/filepath"
	"strings"
	"testing"
)

// bag is a stand-in embedding model: words hashed into 32 dimensions.
func bag(texts ...string) [][]float32 {
	var out [][]float32
	for _, t := range texts {
		v := make([]float32, 32)
		for _, w := range strings.Fields(strings.ToLower(Words(t))) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%32]++
		}
		out = append(out, v)
	}
	return out
}

func embedAll(t *testing.T, ix *Index, model string) int {
	t.Helper()
	n := 0
	for {
		ps, err := ix.Pending(context.Background(), model, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			return n
		}
		var texts []string
		for _, p := range ps {
			texts = append(texts, p.Text)
		}
		if err := ix.PutVectors(context.Background(), model, ps, bag(texts...)); err != nil {
			t.Fatal(err)
		}
		n += len(ps)
	}
}

// A vector belongs to the text it was made from: a file indexed again
// loses its chunks' vectors, a vector for a chunk that is gone is not
// stored, another model's vectors are dropped, and a query ranks only the
// model's vectors.
func TestVectorsFollowTheIndex(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(filepath.Join(t.TempDir(), "index.db"), "index.db")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	a := Doc{Path: "a.md", Content: []byte("deployment pipelines run on fridays\n\ncats purr when they sleep\n")}
	b := Doc{Path: "b.md", Content: []byte("database migrations are reversible\n")}
	if _, err := ix.Sync(ctx, docs(a, b)); err != nil {
		t.Fatal(err)
	}
	_, _, total, _ := ix.Embedded(ctx)
	if n := embedAll(t, ix, "m1"); n != total || total < 2 {
		t.Fatalf("%d chunks embedded, want %d", n, total)
	}
	hits, err := ix.VectorQuery(ctx, "m1", bag("when do the deployment pipelines run")[0], 2)
	if err != nil || len(hits) != 2 || hits[0].Path != "a.md" {
		t.Fatalf("%+v %v", hits, err)
	}
	if hits, _ := ix.VectorQuery(ctx, "m2", bag("deployment")[0], 2); len(hits) != 0 {
		t.Fatalf("another model's query ranked m1's vectors: %+v", hits)
	}
	stale, _ := ix.Pending(ctx, "m1", 10)
	if len(stale) != 0 {
		t.Fatalf("pending after embedding: %+v", stale)
	}
	// b.md changes: its chunk is new and has no vector; a's keep theirs.
	b.Content = []byte("database migrations are reversible and tested\n")
	var was Pending
	ix.db.QueryRow("SELECT id, body FROM chunks WHERE path = 'b.md'").Scan(&was.ID, &was.Text)
	if _, err := ix.Sync(ctx, docs(a, b)); err != nil {
		t.Fatal(err)
	}
	ps, _ := ix.Pending(ctx, "m1", 10)
	if len(ps) != 1 || !strings.Contains(ps[0].Text, "tested") {
		t.Fatalf("pending after a change: %+v", ps)
	}
	if _, done, now, _ := ix.Embedded(ctx); done != total-1 || now != total {
		t.Fatalf("embedded %d of %d", done, now)
	}
	// A vector computed for the old chunk is not stored.
	if err := ix.PutVectors(ctx, "m1", []Pending{was}, bag(was.Text)); err != nil {
		t.Fatal(err)
	}
	if _, done, _, _ := ix.Embedded(ctx); done != total-1 {
		t.Fatalf("a vector for a chunk that is gone was stored (%d)", done)
	}
	// Another model: the vectors are dropped, every chunk pending again.
	if ps, _ = ix.Pending(ctx, "m2", 10); len(ps) != total {
		t.Fatalf("pending for another model: %d", len(ps))
	}
	if err := ix.PutVectors(ctx, "m1", ps[:1], bag("x")); err == nil {
		t.Fatal("vectors of the old model stored after the switch")
	}
}

// Reciprocal rank fusion: a chunk both rankings place well beats one that
// only one ranks first.
func TestFuse(t *testing.T) {
	h := func(p string) Hit { return Hit{Path: p, StartLine: 1, EndLine: 2} }
	got := FuseWeighted([][]Hit{{h("lex-only"), h("both"), h("c")}, {h("vec-only"), h("both")}}, []float64{1, 1})
	if got[0].Path != "both" || len(got) != 4 {
		t.Fatalf("%+v", got)
	}
	if got[1].Score != got[2].Score || got[1].Path != "lex-only" {
		t.Fatalf("ties keep the first ranking's order: %+v", got)
	}
}
