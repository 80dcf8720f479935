package ragstore

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bagEmbed is a stand-in embedding model: words hashed into 64 dimensions
// (texts that share words are near).
func bagEmbed(_ context.Context, texts []string) ([][]float32, error) {
	var out [][]float32
	for _, t := range texts {
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			if len(w) <= 3 {
				continue
			}
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(w, ".,;:()")))
			v[h.Sum32()%64]++
		}
		out = append(out, v)
	}
	return out, nil
}

func vecOf(t *testing.T, s string) []float32 {
	v, _ := bagEmbed(context.Background(), []string{s})
	return v[0]
}

// A store is bound to its model; another is refused, naming both. Ingest
// embeds only what changed; a query keeps what passes the threshold, best
// first.
func TestStore(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "kb.db")
	s, err := Open(p, "kb.db", "nomic-embed-text")
	if err != nil {
		t.Fatal(err)
	}
	docs := []Doc{
		{Source: "notes/deploy.md", Content: []byte("# Deploy\n\nThe service is deployed with the blue green strategy on Fridays.\n")},
		{Source: "notes/cats.md", Content: []byte("# Cats\n\nCats sleep most of the day and purr.\n")},
	}
	st, err := s.Ingest(ctx, docs, bagEmbed, nil)
	if err != nil || st.Embedded != 2 {
		t.Fatalf("%+v %v", st, err)
	}
	hits, err := s.Query(ctx, vecOf(t, "how is the service deployed"), 5, 0.3)
	if err != nil || len(hits) != 1 || hits[0].Path != "notes/deploy.md" || hits[0].Score < 0.3 {
		t.Fatalf("hits %+v %v", hits, err)
	}
	docs[1].Content = []byte("# Cats\n\nCats chase the red dot.\n")
	if st, _ := s.Ingest(ctx, docs, bagEmbed, nil); st.Embedded != 1 || st.Unchanged != 1 {
		t.Fatalf("re-ingest: %+v", st)
	}
	s.Close()
	if _, err := Open(p, "kb.db", "all-minilm"); err == nil || !strings.Contains(err.Error(), "nomic-embed-text") || !strings.Contains(err.Error(), "all-minilm") {
		t.Fatalf("another model: %v", err)
	}
	s, err = Open(p, "kb.db", "")
	if err != nil || s.Model() != "nomic-embed-text" || s.Count() != 2 {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte(strings.Repeat("junk ", 1000)), 0o600)
	if _, err := Open(junk, "junk.db", "m"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a corrupt file: %v", err)
	}
	if b, _ := os.ReadFile(junk); string(b) != strings.Repeat("junk ", 1000) {
		t.Fatal("a corrupt file was changed")
	}
}

// BenchmarkCosine is a query over stored 768-dimension vectors, read row
// by row with only the best k kept (HARVEY_BENCH_VECTORS sets how many;
// 100,000 for BENCHMARKS.md, 5,000 in CI's one run).
func BenchmarkCosine(b *testing.B) {
	n := 5000
	if v, err := strconv.Atoi(os.Getenv("HARVEY_BENCH_VECTORS")); err == nil && v > 0 {
		n = v
	}
	s, err := Open(filepath.Join(b.TempDir(), "v.db"), "v.db", "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	rv := func() []float32 {
		v := make([]float32, 768)
		for i := range v {
			v[i] = rng.Float32() - 0.5
		}
		return v
	}
	tx, _ := s.db.Begin()
	for i := 0; i < n; i++ {
		tx.Exec("INSERT INTO chunks(source, start_line, end_line, text, vec) VALUES(?, 1, 1, 'x', ?)", "s"+strconv.Itoa(i), quantize(normalize(rv())))
	}
	tx.Commit()
	q := rv()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Query(context.Background(), q, 5, -1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "vectors")
}

// An ingest interrupted half way leaves a usable store: what was embedded
// is there, and the next ingest embeds the rest.
func TestIngestInterrupted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kb.db")
	s, err := Open(p, "kb.db", "m")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var docs []Doc
	for i := 0; i < 6; i++ {
		docs = append(docs, Doc{Source: "d" + strconv.Itoa(i) + ".md", Content: []byte("document number " + strconv.Itoa(i) + " about deployment pipelines\n")})
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	embed := func(c context.Context, texts []string) ([][]float32, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return bagEmbed(c, texts)
	}
	if _, err := s.Ingest(ctx, docs, embed, nil); err == nil {
		t.Fatal("the interrupted ingest said nothing")
	}
	if n := s.Count(); n == 0 || n >= 6 {
		t.Fatalf("%d chunks after the interruption", n)
	}
	if hits, err := s.Query(context.Background(), vecOf(t, "deployment pipelines"), 3, 0.1); err != nil || len(hits) == 0 {
		t.Fatalf("the store after an interruption: %v %v", hits, err)
	}
	st, err := s.Ingest(context.Background(), docs, bagEmbed, nil)
	if err != nil || st.Embedded+st.Unchanged != 6 || s.Count() != 6 {
		t.Fatalf("the next ingest: %+v %v (%d chunks)", st, err, s.Count())
	}
}
