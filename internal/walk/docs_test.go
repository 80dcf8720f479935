package walk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/wsindex"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// The index's walk: text files as documents, redacted and read only when
// asked; binary and large files skipped; dependency and cache directories
// left out and said; the cap on files stops it, saying where.
func TestDocsWithinBounds(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644)
	}
	write("main.go", "package main\n// key sk-ant-api03-"+strings.Repeat("a", 40)+"\n")
	write("img.bin", "\x00\x01\x02binary")
	write("big.txt", strings.Repeat("x", MaxFile+1))
	write("node_modules/dep/index.js", "module.exports = 1\n")
	write("web/node_modules/x/y.js", "1\n")
	write("cache/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")
	write("cache/blob.txt", "cached\n")
	ws, err := wspath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	b := NewBounds(dir, config.RagWorkspace{})
	got := map[string]string{}
	for d := range Docs(ws, b) {
		data, ok := d.Read()
		if ok {
			got[d.Path] = string(data)
		} else {
			got[d.Path] = "(skipped)"
		}
		if d.Stamp == "" {
			t.Errorf("%s has no stamp", d.Path)
		}
	}
	if m := got["main.go"]; !strings.HasPrefix(m, "package main") || strings.Contains(m, strings.Repeat("a", 40)) {
		t.Errorf("main.go: %q", m)
	}
	if got["img.bin"] != "(skipped)" || got["big.txt"] != "(skipped)" {
		t.Errorf("binary and large: %q %q", got["img.bin"], got["big.txt"])
	}
	for p := range got {
		if strings.Contains(p, "node_modules") || strings.HasPrefix(p, "cache/") {
			t.Errorf("%s was walked", p)
		}
	}
	if note := b.Note(); !strings.Contains(note, "node_modules ×2") || !strings.Contains(note, "cache") {
		t.Errorf("note: %q", note)
	}

	// A cap of one file stops the walk and says where.
	capped := NewBounds(dir, config.RagWorkspace{MaxFiles: 1})
	n := 0
	for range Docs(ws, capped) {
		n++
	}
	if n != 1 || !strings.Contains(capped.Note(), "cap of 1 files") {
		t.Errorf("%d documents; note %q", n, capped.Note())
	}

	// DocSink: the files a user names to a store, skipped ones counted.
	skipped := map[string]int{}
	var docs []wsindex.Doc
	rp, _ := ws.Resolve(".", wspath.OpRead)
	defer rp.Close()
	Walk(ws, rp, DocSink(func(d wsindex.Doc) bool { docs = append(docs, d); d.Read(); return true }, skipped))
	if len(docs) == 0 || skipped["binary"] != 1 {
		t.Errorf("%d docs, skipped %v", len(docs), skipped)
	}
}

// The home directory and / are not indexed unless the user's config or
// the user says so.
func TestIndexRefusesHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := Refusal(home, config.RagWorkspace{}, false); err == nil || !strings.Contains(err.Error(), "index_home: true") {
		t.Errorf("home: %v", err)
	}
	if Refusal("/", config.RagWorkspace{IndexHome: true}, false) != nil || Refusal(home, config.RagWorkspace{}, true) != nil || Refusal(filepath.Join(home, "p"), config.RagWorkspace{}, false) != nil {
		t.Error("allowed cases refused")
	}
}

func TestNamesCounted(t *testing.T) {
	if got := namesCounted(map[string]int{"a": 1, "b": 3, "c": 1, "d": 1}, 2); got != "b ×3, a, 2 more" {
		t.Errorf("%q", got)
	}
}
