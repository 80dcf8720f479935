package wsindex

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docQuestion finds, in one file's lines, the documented functions: each
// gives the line range of its documentation (removed from the indexed
// copy) and the documentation's words (the question).
type docQuestion func(lines []string) (spans [][2]int, texts []string)

// pyDocstrings: a def followed by a """docstring""".
func pyDocstrings(lines []string) (spans [][2]int, texts []string) {
	def := regexp.MustCompile(`^\s*(async\s+)?def\s+\w+`)
	for i := 0; i+1 < len(lines); i++ {
		if !def.MatchString(lines[i]) || !strings.HasSuffix(strings.TrimSpace(lines[i]), ":") {
			continue
		}
		start := i + 1
		first := strings.TrimSpace(lines[start])
		if !strings.HasPrefix(first, `"""`) {
			continue
		}
		end := start
		if strings.Count(first, `"""`) < 2 {
			for end = start + 1; end < len(lines) && !strings.Contains(lines[end], `"""`); end++ {
			}
		}
		if end >= len(lines) {
			break
		}
		texts = append(texts, strings.Join(lines[start:end+1], " "))
		spans = append(spans, [2]int{start, end})
		i = end
	}
	return spans, texts
}

// jsDocComments: a /** comment */ followed by a function or method.
func jsDocComments(lines []string) (spans [][2]int, texts []string) {
	fn := regexp.MustCompile(`^\s*(export\s+)?(async\s+)?(function\s*\*?\s*\w+|(static\s+)?\w+\s*\([^)]*\)\s*\{|(const|let|var)\s+\w+\s*=\s*(async\s+)?(function|\())`)
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "/**") {
			continue
		}
		end := i
		for ; end < len(lines) && !strings.Contains(lines[end], "*/"); end++ {
		}
		if end+1 >= len(lines) || !fn.MatchString(lines[end+1]) {
			i = end
			continue
		}
		var words []string
		for _, l := range lines[i : end+1] {
			l = strings.Trim(strings.TrimSpace(l), "/*")
			if strings.HasPrefix(strings.TrimSpace(l), "@") {
				continue
			}
			words = append(words, l)
		}
		texts = append(texts, strings.Join(words, " "))
		spans = append(spans, [2]int{i, end})
		i = end
	}
	return spans, texts
}

// commentEvalSet builds an evaluation from the files under root with the
// given ending: each documented function's comment (eight words or more)
// is a question whose answer is its file, and is removed from the indexed
// copy; at most 200 questions, spread over the files.
func commentEvalSet(t *testing.T, root, ending string, find docQuestion) ([]Doc, []evalQuestion) {
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ending) && !strings.Contains(p, "test") {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	var docs []Doc
	var qs []evalQuestion
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || len(data) > 512<<10 {
			continue
		}
		rel, _ := filepath.Rel(root, f)
		lines := strings.SplitAfter(string(data), "\n")
		spans, texts := find(lines)
		for i, sp := range spans {
			q := strings.Join(strings.Fields(strings.NewReplacer(`"""`, " ").Replace(texts[i])), " ")
			if len(strings.Fields(q)) < 8 {
				continue
			}
			qs = append(qs, evalQuestion{text: q[:min(len(q), 300)], file: rel})
			for l := sp[0]; l <= sp[1]; l++ {
				lines[l] = "\n"
			}
		}
		docs = append(docs, Doc{Path: rel, Content: []byte(strings.Join(lines, ""))})
	}
	return docs, spreadQuestions(qs)
}

// Retrieval quality on a Python and a JavaScript code base (issue 48):
// Python's standard library and npm's own modules, the questions their
// documented functions' comments. The index, as find_code returns it (five
// chunks, spread over files), must stay ahead of the keyword ranking.
func TestRetrievalQualityOtherLanguages(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, c := range []struct {
		name, root, ending string
		find               docQuestion
	}{
		{"Python's standard library", "/usr/lib/python3.11", ".py", pyDocstrings},
		{"npm's modules (JavaScript)", "/usr/lib/node_modules/npm/node_modules", ".js", jsDocComments},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each code base on a core of its own: the package's tests stay within go test ./internal/...'s minute
			if _, err := os.Stat(c.root); err != nil {
				t.Skipf("%s is not on this machine", c.root)
			}
			docs, qs := commentEvalSet(t, c.root, c.ending, c.find)
			if len(qs) < 50 {
				t.Skipf("only %d questions in %s", len(qs), c.root)
			}
			r := evaluate(t, docs, qs)
			t.Logf("recall@5 over %d questions in %d files: %s", len(qs), len(docs), r)
			if r.spread <= r.baseline {
				t.Errorf("the index (%d) is not ahead of a keyword ranking (%d)", r.spread, r.baseline)
			}
		})
	}
}
