package wsindex

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// evalQuestion is one question of the retrieval evaluation: a function's
// doc comment (its name left out) and the file that defines it.
type evalQuestion struct{ text, file string }

// evalSet builds the evaluation from Go's own source (a code base nobody
// here wrote): for each exported function with a doc comment in a few
// packages, the comment is the question and is removed from the indexed
// copy; the answer is the function's file.
func evalSet(t *testing.T) ([]Doc, []evalQuestion) {
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skip("no go")
	}
	src := filepath.Join(strings.TrimSpace(string(root)), "src")
	var docs []Doc
	var qs []evalQuestion
	for _, pkg := range []string{"strings", "bytes", "bufio", "strconv", "path/filepath", "encoding/json", "net/url", "sort", "time", "io", "os", "regexp", "text/template", "archive/zip", "compress/gzip"} {
		files, _ := filepath.Glob(filepath.Join(src, pkg, "*.go"))
		sort.Strings(files)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			rel, _ := filepath.Rel(src, f)
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, "", data, parser.ParseComments)
			if err != nil {
				continue
			}
			lines := strings.SplitAfter(string(data), "\n")
			for _, d := range af.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !fd.Name.IsExported() || fd.Doc == nil || len(strings.Fields(fd.Doc.Text())) < 8 {
					continue
				}
				q := strings.Join(strings.Fields(fd.Doc.Text()), " ")
				if first, rest, ok := strings.Cut(q, " "); ok && first == fd.Name.Name {
					q = rest
				}
				if len(q) > 300 {
					q = q[:300]
				}
				qs = append(qs, evalQuestion{text: q, file: rel})
				for l := fset.Position(fd.Doc.Pos()).Line; l <= fset.Position(fd.Doc.End()).Line; l++ {
					lines[l-1] = "\n" // the answer's comment is not in the index
				}
			}
			docs = append(docs, Doc{Path: rel, Content: []byte(strings.Join(lines, ""))})
		}
	}
	return docs, spreadQuestions(qs)
}

// spreadQuestions is 200 of qs, spread evenly over them (so over the
// packages or files they come from).
func spreadQuestions(qs []evalQuestion) []evalQuestion {
	if len(qs) <= 200 {
		return qs
	}
	step := float64(len(qs)) / 200
	picked := make([]evalQuestion, 0, 200)
	for i := range 200 {
		picked = append(picked, qs[int(float64(i)*step)])
	}
	return picked
}

// keywordRank is the baseline: files ranked by how many of the question's
// words they contain (a plain keyword search), shorter files first on a
// tie.
func keywordRank(docs []Doc, lows []string, seen map[string][]bool, q string, k int) []string {
	var terms []string
	for _, w := range strings.Fields(strings.ToLower(Words(q))) {
		if len(w) >= 3 && !contains(stopWords, w) && !contains(terms, w) {
			terms = append(terms, w)
		}
	}
	type scored struct {
		path       string
		score, len int
	}
	var all []scored
	for _, t := range terms { // which documents hold each term, once per term
		if seen[t] == nil {
			seen[t] = make([]bool, len(docs))
			for i, low := range lows {
				seen[t][i] = strings.Contains(low, t)
			}
		}
	}
	for i, d := range docs {
		s := 0
		for _, t := range terms {
			if seen[t][i] {
				s++
			}
		}
		all = append(all, scored{d.Path, s, len(d.Content)})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].len < all[j].len
	})
	var out []string
	for _, s := range all[:min(k, len(all))] {
		out = append(out, s.path)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Retrieval quality (issue 36): recall@5 — the defining file among the
// first five answers — over 200 questions about Go's source, for the
// workspace index next to a plain keyword ranking over the same files.
// The index must be ahead.
func TestRetrievalQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	docs, qs := evalSet(t)
	if len(qs) < 200 {
		t.Fatalf("only %d questions", len(qs))
	}
	r := evaluate(t, docs, qs)
	t.Logf("recall@5 over %d questions in %d files: %s", len(qs), len(docs), r)
	harvey, baseline := r.spread, r.baseline
	if harvey <= baseline {
		t.Fatalf("the index (%d) is not ahead of a keyword ranking (%d)", harvey, baseline)
	}
}

// evalResult is how an evaluation's questions fared: how many found their
// file among the five chunks find_code returns (spread), among the first
// five chunks unspread, and among a keyword ranking's first five files;
// and how many distinct files the five chunks spanned, over all questions.
type evalResult struct {
	n, spread, unspread, baseline, files int
}

func (r evalResult) String() string {
	pct := func(k int) float64 { return 100 * float64(k) / float64(r.n) }
	return fmt.Sprintf("workspace index %d (%.0f%%; the first five chunks unspread %.0f%%; %.1f files in a top five), keyword ranking %d (%.0f%%)",
		r.spread, pct(r.spread), pct(r.unspread), float64(r.files)/float64(r.n), r.baseline, pct(r.baseline))
}

// evaluate indexes docs and asks each question as find_code does.
func evaluate(t *testing.T, docs []Doc, qs []evalQuestion) evalResult {
	ix, err := Open(filepath.Join(t.TempDir(), "eval.db"), "eval.db")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	seen := map[string][]bool{}
	lows := make([]string, len(docs)) // the keyword ranking's view, made once
	for i, d := range docs {
		lows[i] = strings.ToLower(string(d.Content))
	}
	ctx := context.Background()
	if _, err := ix.Sync(ctx, docs2seq(docs)); err != nil {
		t.Fatal(err)
	}
	r := evalResult{n: len(qs)}
	for _, q := range qs {
		hits, err := ix.Query(ctx, q.text, QueryDepth*5)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, h := range Spread(hits, q.text, 5, 2) {
			if !contains(files, h.Path) {
				files = append(files, h.Path)
			}
		}
		r.files += len(files)
		if contains(files, q.file) {
			r.spread++
		}
		for _, h := range hits[:min(5, len(hits))] {
			if h.Path == q.file {
				r.unspread++
				break
			}
		}
		if contains(keywordRank(docs, lows, seen, q.text, 5), q.file) {
			r.baseline++
		}
	}
	return r
}
