package wspath

import (
	"path/filepath"
	"strings"
	"sync"
)

// Harvey's own writes under agents/, remembered for the checks that span a
// long-lived program (internal/guard: a background job's, a stdio
// server's), where agents/ is writable to commands (Landlock only): what
// Harvey itself wrote there meanwhile — its session journal, history, a
// recording, a saved config — is its own, and is not undone as if the
// program had written it (issue 75). Each write gets the next generation;
// a check asks what was written since the generation it started from.
var own struct {
	sync.Mutex
	gen   int64
	paths map[string]int64 // absolute path → the generation of Harvey's last write to it
}

// NoteOwn records that Harvey itself writes rel (under agents/) now: a
// writer that keeps a file open (a recording) says so at each write.
func (w *Tree) NoteOwn(rel string) {
	noteOwn(filepath.Join(w.Root, filepath.FromSlash(rel)))
}

func noteOwn(abs string) {
	own.Lock()
	defer own.Unlock()
	if own.paths == nil {
		own.paths = map[string]int64{}
	}
	own.gen++
	own.paths[filepath.Clean(abs)] = own.gen
}

// OwnGen is the generation of Harvey's last own write.
func OwnGen() int64 {
	own.Lock()
	defer own.Unlock()
	return own.gen
}

// OwnSince reports whether Harvey itself wrote abs after generation gen:
// the file, or (a directory) something it made under it.
func OwnSince(abs string, gen int64) bool {
	abs = filepath.Clean(abs)
	own.Lock()
	defer own.Unlock()
	for p, g := range own.paths {
		if g > gen && (p == abs || strings.HasPrefix(p, abs+string(filepath.Separator))) {
			return true
		}
	}
	return false
}
