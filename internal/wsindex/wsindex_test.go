package wsindex

import (
	"context"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func docs(ds ...Doc) iter.Seq[Doc] { return slices.Values(ds) }

const goFile = `// Package cfg reads configuration.
package cfg

import "os"

// parseConfigFile reads the settings from a file on disk.
func parseConfigFile(path string) (map[string]string, error) {
	_, err := os.ReadFile(path)
	return nil, err
}

// HTTPServer serves the API.
type HTTPServer struct{ Addr string }

func (s *HTTPServer) Start() error { return nil }
`

// Identifiers are split as people say them.
func TestWords(t *testing.T) {
	for in, want := range map[string]string{
		"parseConfigFile":   "parseconfigfile parse config file",
		"parse_config_file": "parse_config_file parse config file",
		"HTTPServer":        "httpserver http server",
		"sha256Sum":         "sha256sum sha 256 sum",
		"plain words":       "plain words",
	} {
		if got := Words(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// Go is cut at its declarations, each with its doc comment; other text at
// blank lines; every line lands in exactly one chunk.
func TestChunks(t *testing.T) {
	cs := Chunks("cfg/cfg.go", []byte(goFile))
	var starts []int
	covered := 0
	for _, c := range cs {
		starts = append(starts, c.StartLine)
		covered += c.EndLine - c.StartLine + 1
	}
	if !slices.Contains(starts, 6) || !slices.Contains(starts, 12) {
		t.Fatalf("Go chunks start at %v (want the doc comments, lines 6 and 12)", starts)
	}
	for _, c := range cs {
		if strings.Contains(c.Text, "func parseConfigFile") && !strings.Contains(c.Text, "// parseConfigFile reads") {
			t.Fatal("a function's chunk lost its doc comment")
		}
	}
	prose := strings.Repeat("A line of prose.\n", 30) + "\n" + strings.Repeat("Another paragraph.\n", 30)
	ps := Chunks("README.md", []byte(prose))
	if len(ps) != 2 || ps[0].EndLine != 30 || ps[1].StartLine != 32 {
		t.Fatalf("text chunks: %+v", ps)
	}
	if bad := Chunks("broken.go", []byte("package x\nfunc (\n")); len(bad) != 1 {
		t.Fatalf("a Go file that does not parse: %+v", bad)
	}
}

// A query in plain words finds the function defined under a camel-case
// name; a re-sync re-indexes only what changed and drops what is gone.
func TestIndexSyncAndQuery(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "index.db")
	ix, err := Open(p, "index.db")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	other := Doc{Path: "main.go", Content: []byte("package main\n\nfunc main() { println(\"hello\") }\n")}
	readme := Doc{Path: "README.md", Content: []byte("# Project\n\nA small service.\n")}
	st, err := ix.Sync(ctx, docs(Doc{Path: "cfg/cfg.go", Content: []byte(goFile)}, other, readme))
	if err != nil || st.Indexed != 3 {
		t.Fatalf("%+v %v", st, err)
	}
	hits, err := ix.Query(ctx, "where is the config file parsed?", 3)
	if err != nil || len(hits) == 0 || hits[0].Path != "cfg/cfg.go" || !strings.Contains(hits[0].Text, "func parseConfigFile") || hits[0].StartLine != 6 {
		t.Fatalf("hits: %+v %v", hits, err)
	}
	st, _ = ix.Sync(ctx, docs(Doc{Path: "cfg/cfg.go", Content: []byte(goFile)}, Doc{Path: "main.go", Content: []byte("package main\n\nfunc main() { println(\"bye\") }\n")}))
	if st.Indexed != 1 || st.Removed != 1 {
		t.Fatalf("re-sync: %+v", st)
	}
	if hits, _ := ix.Query(ctx, "small service", 3); len(hits) != 0 {
		t.Fatalf("a dropped file is still found: %+v", hits)
	}
	if hits, _ := ix.Query(ctx, "bye", 3); len(hits) != 1 || hits[0].Path != "main.go" {
		t.Fatalf("a changed file: %+v", hits)
	}
	// An interrupted sync leaves a usable index; the next one converges.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ix.Sync(cctx, docs(readme))
	st, err = ix.Sync(ctx, docs(Doc{Path: "cfg/cfg.go", Content: []byte(goFile)}, readme))
	if err != nil || st.Removed != 1 || st.Indexed != 1 {
		t.Fatalf("after an interrupted sync: %+v %v", st, err)
	}
	if paths, _ := ix.Paths(); strings.Join(paths, " ") != "README.md cfg/cfg.go" {
		t.Fatalf("paths %v", paths)
	}
}

// A corrupt file, another program's database and a link are refused in
// one line and left as they were.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, []byte(strings.Repeat("not a database ", 400)), 0o600)
	foreign := filepath.Join(dir, "foreign.db")
	if ix, err := Open(foreign, "foreign.db"); err == nil {
		ix.db.Exec("PRAGMA application_id = 7")
		ix.Close()
	}
	link := filepath.Join(dir, "link.db")
	os.Symlink(junk, link)
	for _, p := range []string{junk, foreign, link} {
		before, _ := os.ReadFile(p)
		_, err := Open(p, filepath.Base(p))
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", p, err)
		}
		if after, _ := os.ReadFile(p); string(after) != string(before) {
			t.Errorf("%s was changed", p)
		}
	}
}

// A file whose stamp is the one indexed is not read again; a touched file
// (new stamp, same content) is read, not re-indexed, and its stamp kept.
func TestSyncSkipsUnchangedStamps(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(filepath.Join(t.TempDir(), "index.db"), "index.db")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	reads := 0
	doc := func(stamp string) Doc {
		return Doc{Path: "a.go", Stamp: stamp, Read: func() ([]byte, bool) { reads++; return []byte(goFile), true }}
	}
	if st, _ := ix.Sync(ctx, docs(doc("s1"))); st.Indexed != 1 || reads != 1 {
		t.Fatalf("first sync: %+v, %d reads", st, reads)
	}
	if st, _ := ix.Sync(ctx, docs(doc("s1"))); st.Indexed != 0 || reads != 1 {
		t.Fatalf("same stamp: %+v, %d reads", st, reads)
	}
	if st, _ := ix.Sync(ctx, docs(doc("s2"))); st.Indexed != 0 || reads != 2 {
		t.Fatalf("touched: %+v, %d reads", st, reads)
	}
	if st, _ := ix.Sync(ctx, docs(doc("s2"))); reads != 2 || st.Indexed != 0 {
		t.Fatalf("the new stamp was not kept: %+v, %d reads", st, reads)
	}
}

// A //line directive remaps positions (generated code, cgo): the chunks
// still follow the file's own lines (Go's source has such files; the
// index panicked on them).
func TestChunksIgnoreLineDirectives(t *testing.T) {
	src := "package p\n\n//line generated.y:1000000\n// F does things.\nfunc F() {}\n\nfunc G() {}\n"
	for _, c := range Chunks("p.go", []byte(src)) {
		if c.StartLine < 1 || c.EndLine > 7 {
			t.Fatalf("a chunk outside the file: %+v", c)
		}
	}
}

// Other languages are cut at blank lines by indentation: between two
// Python functions, not at a blank line inside the first one's body.
func TestChunksByIndentation(t *testing.T) {
	var b strings.Builder
	fn := func(name string) {
		b.WriteString("def " + name + "(x):\n")
		for i := range 24 {
			if i == 20 {
				b.WriteString("\n") // a blank line inside the body, past half a block
			}
			b.WriteString("    x = x + 1\n")
		}
		b.WriteString("    return x\n\n")
	}
	fn("first")
	fn("second")
	cs := Chunks("m.py", []byte(b.String()))
	if len(cs) != 2 || !strings.HasPrefix(cs[0].Text, "def first") || !strings.HasPrefix(cs[1].Text, "def second") {
		for _, c := range cs {
			t.Logf("%d-%d %q", c.StartLine, c.EndLine, c.Text[:min(20, len(c.Text))])
		}
		t.Fatalf("%d chunks, want one per function", len(cs))
	}
}
