package wsindex

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goSourceDocs are the .go files of Go's own source tree under sub
// (outside testdata): a code base nobody here wrote.
func goSourceDocs(b *testing.B, sub string) []Doc {
	b.Helper()
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip("no go")
	}
	base := filepath.Join(strings.TrimSpace(string(root)), "src")
	var docs []Doc
	filepath.WalkDir(filepath.Join(base, sub), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			if data, err := os.ReadFile(p); err == nil {
				rel, _ := filepath.Rel(base, p)
				docs = append(docs, Doc{Path: rel, Content: data})
			}
		}
		return nil
	})
	return docs
}

// BenchmarkIndexGoSource builds the lexical index of Go's source tree
// (HARVEY_BENCH_INDEX=all for all of src; by default src/net, so CI's
// one run stays short), then measures a query, and re-indexing after one
// file changes. Reported: build seconds, files, chunks, ms per query and
// per re-index (BENCHMARKS.md).
func BenchmarkIndexGoSource(b *testing.B) {
	sub := "net"
	if os.Getenv("HARVEY_BENCH_INDEX") == "all" {
		sub = ""
	}
	docs := goSourceDocs(b, sub)
	ix, err := Open(filepath.Join(b.TempDir(), "index.db"), "index.db")
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	// The baseline in the same run: hashing every file, what any index
	// must at least do to know what changed.
	start := time.Now()
	for _, d := range docs {
		sha256.Sum256(d.Content)
	}
	floor := time.Since(start)
	start = time.Now()
	st, err := ix.Sync(ctx, docs2seq(docs))
	if err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	docs[0].Content = append(append([]byte{}, docs[0].Content...), "\n// changed\n"...)
	start = time.Now()
	if st2, err := ix.Sync(ctx, docs2seq(docs)); err != nil || st2.Indexed != 1 {
		b.Fatalf("re-index: %+v %v", st2, err)
	}
	reindex := time.Since(start)
	// The query as find_code makes it (5 shown: 40 ranked, then spread over
	// files), and beside it the query before the spread (15 ranked) in the
	// same run.
	const q = "parse the http request header line"
	start = time.Now()
	for range 20 {
		if _, err := ix.Query(ctx, q, 15); err != nil {
			b.Fatal(err)
		}
	}
	before := time.Since(start) / 20
	b.ResetTimer()
	for b.Loop() {
		hits, err := ix.Query(ctx, q, 5*QueryDepth)
		if err != nil {
			b.Fatal(err)
		}
		Spread(hits, q, 5, 2)
	}
	b.ReportMetric(float64(before.Microseconds())/1000, "k15-ms")
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(floor.Seconds(), "hash-all-s")
	b.ReportMetric(float64(st.Files), "files")
	b.ReportMetric(float64(st.Chunks), "chunks")
	b.ReportMetric(float64(reindex.Milliseconds()), "reindex-ms")
}

func docs2seq(ds []Doc) func(func(Doc) bool) {
	return func(yield func(Doc) bool) {
		for _, d := range ds {
			if !yield(d) {
				return
			}
		}
	}
}
