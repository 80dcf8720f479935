// Feature: the rag: block's old form, progress into a log, and rag
// query's order.
package rag

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/wsindex"
)

// The old single-store form is read as a store named default, active.
func TestRagConfigMigration(t *testing.T) {
	var cf configfile.File
	cf.Config = config.Default()
	if _, err := configfile.Parse([]byte("rag:\n  enabled: true\n  db_path: ~/harvey/rag.db\n  embedding_model: nomic-embed-text\n"), &cf); err != nil {
		t.Fatal(err)
	}
	rc := cf.Config.RAG.Normalized()
	s, ok := rc.Store("")
	if !rc.Enabled || rc.Active != "default" || !ok || s.Name != "default" || s.DBPath != "~/harvey/rag.db" || s.EmbeddingModel != "nomic-embed-text" {
		t.Fatalf("%+v", rc)
	}
	for _, w := range cf.Warnings {
		if strings.Contains(w, "rag") {
			t.Errorf("rag: warned about: %s", w)
		}
	}
}

// Progress into a log is plain lines, about one a tenth, never a \r
// (issue 49).
func TestProgressIntoALog(t *testing.T) {
	var b strings.Builder
	show := newProgress(&b, "files")
	for i := 1; i <= 1000; i++ {
		show(i, 1000)
	}
	if strings.Contains(b.String(), "\r") || strings.Count(b.String(), "\n") > 11 || !strings.HasSuffix(b.String(), "1000/1000 files\n") {
		t.Fatalf("%q", b.String())
	}
}

// rag query prints its hits best first, though the ranking that chose
// them spread them over files (issue 62).
func TestRagQueryPrintsBestFirst(t *testing.T) {
	hits := wsindex.Spread([]wsindex.Hit{{Path: "a.go", Score: 0.9, StartLine: 1}, {Path: "a.go", Score: 0.8, StartLine: 40}, {Path: "b.go", Score: 0.5, StartLine: 1}}, "query", 3, 2)
	spreadSorted := slices.IsSortedFunc(hits, func(a, b wsindex.Hit) int { return cmp.Compare(b.Score, a.Score) })
	bestFirst(hits)
	var got []float64
	for _, h := range hits {
		got = append(got, h.Score)
	}
	if !slices.Equal(got, []float64{0.9, 0.8, 0.5}) {
		t.Errorf("printed order %v", got)
	}
	if spreadSorted {
		t.Log("the spread kept the scores' order here: this case no longer needs bestFirst")
	}
}
