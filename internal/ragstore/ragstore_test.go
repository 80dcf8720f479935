package ragstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/vecmath"
	"github.com/harvey-agent/harvey/internal/wsindex"
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
	// Sources of 50 chunks each (a file of Go's source tree has 16 on
	// average): the vectors are written as Ingest writes them.
	for i := 0; i < n; i += 50 {
		var chunks []wsindex.Chunk
		var vecs [][]float32
		for j := i; j < min(i+50, n); j++ {
			chunks = append(chunks, wsindex.Chunk{StartLine: j, EndLine: j, Text: "x"})
			vecs = append(vecs, rv())
		}
		if err := s.put(context.Background(), "s"+strconv.Itoa(i), "h", chunks, vecs); err != nil {
			b.Fatal(err)
		}
	}
	if s.Count() != n {
		b.Fatalf("%d chunks stored, want %d", s.Count(), n)
	}
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

// Vectors live in blocks of 64: sources ingested, changed and re-ingested
// in any order leave exactly one vector per chunk, in the block the chunk
// names, and a query finds what a scan of every chunk would.
func TestBlocksFollowChanges(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "kb.db"), "kb.db", "m")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	topics := []string{"deployment pipelines", "cat behaviour", "database migrations", "kernel modules", "garden tomatoes"}
	doc := func(i, version int) Doc {
		var b strings.Builder
		for c := 0; c < 1+i%4; c++ { // one to four chunks, blank lines apart
			fmt.Fprintf(&b, "paragraph %d of doc %d version %d about %s\n\n", c, i, version, topics[(i+c+version)%len(topics)])
		}
		return Doc{Source: fmt.Sprintf("d%03d.md", i), Content: []byte(b.String())}
	}
	var docs []Doc
	for i := 0; i < 150; i++ {
		docs = append(docs, doc(i, 0))
	}
	if _, err := s.Ingest(ctx, docs, bagEmbed, nil); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{3, 77, 149, 0, 64, 65} {
		docs[i] = doc(i, 1)
	}
	if _, err := s.Ingest(ctx, docs, bagEmbed, nil); err != nil {
		t.Fatal(err)
	}
	// Every chunk has exactly one vector, in its own block.
	where := map[int64]int64{}
	rows, _ := s.db.Query("SELECT id, ids FROM blocks")
	for rows.Next() {
		var blk int64
		var ids []byte
		rows.Scan(&blk, &ids)
		if len(ids)/8 > blockSize {
			t.Fatalf("block %d holds %d vectors", blk, len(ids)/8)
		}
		for k := 0; k < len(ids)/8; k++ {
			id := int64(binary.LittleEndian.Uint64(ids[8*k:]))
			if _, dup := where[id]; dup {
				t.Fatalf("chunk %d has two vectors", id)
			}
			where[id] = blk
		}
	}
	rows.Close()
	rows, _ = s.db.Query("SELECT id, block FROM chunks")
	n := 0
	for rows.Next() {
		var id, blk int64
		rows.Scan(&id, &blk)
		if where[id] != blk {
			t.Fatalf("chunk %d names block %d, its vector is in %d", id, blk, where[id])
		}
		n++
	}
	rows.Close()
	if n != len(where) || n != s.Count() {
		t.Fatalf("%d chunks, %d vectors", n, len(where))
	}
	// The query's best are a full scan's best.
	q := vecOf(t, "version 1 about kernel modules")
	hits, err := s.Query(ctx, q, 5, -1)
	if err != nil || len(hits) != 5 {
		t.Fatalf("%v %v", hits, err)
	}
	var all []float64
	rows, _ = s.db.Query("SELECT text FROM chunks")
	for rows.Next() {
		var text string
		rows.Scan(&text)
		v, _ := bagEmbed(ctx, []string{text})
		all = append(all, vecmath.Dot(vecmath.Normalize(q), vecmath.Quantize(vecmath.Normalize(v[0]))))
	}
	rows.Close()
	sort.Sort(sort.Reverse(sort.Float64Slice(all)))
	for i, h := range hits {
		if math.Abs(h.Score-all[i]) > 1e-6 {
			t.Fatalf("hit %d scored %f, a full scan's %d-th best is %f", i, h.Score, i, all[i])
		}
	}
}

// A store of the first format (vectors in the chunk rows) is moved into
// blocks when it is opened, and answers as before.
func TestFirstFormatUpgraded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
		"CREATE TABLE sources (path TEXT PRIMARY KEY, hash TEXT NOT NULL)",
		"CREATE TABLE chunks (id INTEGER PRIMARY KEY, source TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, text TEXT NOT NULL, vec BLOB NOT NULL)",
		"CREATE INDEX chunks_source ON chunks(source)",
		fmt.Sprintf("PRAGMA application_id = %d", oldAppID),
		"INSERT INTO meta VALUES('embedding_model', 'm')",
		"INSERT INTO sources VALUES('notes/deploy.md', 'h1'), ('notes/cats.md', 'h2')",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for i, text := range []string{"The service is deployed with the blue green strategy", "Cats sleep most of the day and purr"} {
		v, _ := bagEmbed(context.Background(), []string{text})
		db.Exec("INSERT INTO chunks(source, start_line, end_line, text, vec) VALUES(?, 1, 1, ?, ?)", []string{"notes/deploy.md", "notes/cats.md"}[i], text, vecmath.Quantize(vecmath.Normalize(v[0])))
	}
	db.Close()
	s, err := Open(p, "old.db", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hits, err := s.Query(context.Background(), vecOf(t, "how is the service deployed"), 5, 0.3)
	if err != nil || len(hits) != 1 || hits[0].Path != "notes/deploy.md" {
		t.Fatalf("hits %+v %v", hits, err)
	}
	st, err := s.Ingest(context.Background(), []Doc{{Source: "notes/cats.md", Content: []byte("Cats chase the red dot\n")}}, bagEmbed, nil)
	if err != nil || st.Embedded != 1 || s.Count() != 2 {
		t.Fatalf("ingest after the upgrade: %+v %v (%d chunks)", st, err, s.Count())
	}
}
