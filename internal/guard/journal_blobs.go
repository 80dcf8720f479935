package guard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// A journal's larger contents (git's index, the hooks) are kept once each,
// by their SHA-256, in the blob directory of the Harvey that wrote it
// (pending/PID-START.blobs), and the journal names them: a command's
// journal is then a few kilobytes however large the index, and the index
// is written once per change instead of once per command (in a repository
// of 30,000 files, megabytes before every command). A blob stays while a
// journal of this Harvey names it, and the latest ones no journal names,
// up to idleKeep bytes (the next command's snapshot is most often the
// last one's); a blob directory goes once its Harvey is gone and its
// journals have been checked (recoverJournals). A journal whose blob
// cannot be written keeps that content itself, as before.

// blobMin: smaller contents stay in the journal.
const blobMin = 1 << 10

// idleKeep bounds what this Harvey keeps of blobs no journal names.
const idleKeep = 32 << 20

var blobs = struct {
	sync.Mutex
	dir  string           // where they are
	at   fileIdent        // the directory's identity when they were counted
	refs map[string]int   // journals naming each blob
	size map[string]int64 // every blob this Harvey has, by name
	idle []string         // blobs no journal names, oldest first
}{refs: map[string]int{}, size: map[string]int64{}}

// blobDirOf is where the Harvey of pid, started at start, keeps its blobs.
func blobDirOf(pid int, start string) string {
	dir := journalDir()
	if dir == "" || start == "" {
		return ""
	}
	return filepath.Join(dir, fmt.Sprintf("%d-%s.blobs", pid, start))
}

// ownStart is this process's start time (sandbox.ProcStart), read once:
// every journal names it.
var ownStart = sync.OnceValue(func() string { return sandbox.ProcStart(os.Getpid()) })

// ownBlobDir is this Harvey's.
func ownBlobDir() string { return blobDirOf(os.Getpid(), ownStart()) }

// contents visits every content a journal keeps: its bytes and the name
// of the blob that holds them instead.
func (j *journal) contents(visit func(data *[]byte, blob *string)) {
	file := func(f *jFile) {
		if f != nil {
			visit(&f.Data, &f.Blob)
		}
	}
	hooks := func(m map[string]*jHooks) {
		for _, h := range m {
			if h != nil {
				for _, f := range h.Files {
					file(f)
				}
			}
		}
	}
	if g := j.Git; g != nil {
		file(g.DotGit)
		hooks(g.Paths)
		for _, d := range g.Dirs {
			for _, f := range d.Files {
				file(f)
			}
			hooks(d.Hooks)
			visit(&d.Index, &d.IndexBlob)
		}
	}
	if j.Agents != nil {
		for _, f := range j.Agents.Files {
			file(f)
		}
	}
}

// externalize moves j's larger contents to blobs, and returns the names
// it holds (released with the journal: releaseBlobs).
func (j *journal) externalize() []string {
	dir := ownBlobDir()
	if dir == "" {
		return nil
	}
	var names []string
	blobs.Lock()
	defer blobs.Unlock()
	if at, _ := identOf(dir); dir != blobs.dir || at != blobs.at {
		// Another directory, or this one removed (by hand, or by a test
		// that moved the data directory): what was written is not there.
		blobs.dir, blobs.at, blobs.size, blobs.idle = dir, at, map[string]int64{}, nil
	}
	j.contents(func(data *[]byte, blob *string) {
		if len(*data) < blobMin {
			return
		}
		sum := sha256.Sum256(*data)
		name := hex.EncodeToString(sum[:])
		if _, ok := blobs.size[name]; !ok {
			if !writeBlob(dir, name, *data) {
				return
			}
			if blobs.at == (fileIdent{}) {
				blobs.at, _ = identOf(dir) // made by this write
			}
		}
		blobs.size[name] = int64(len(*data))
		blobs.refs[name]++
		blobs.idle = slices.DeleteFunc(blobs.idle, func(s string) bool { return s == name })
		*data, *blob = nil, name
		names = append(names, name)
	})
	return names
}

// writeBlob writes data as blob name in dir, whole or not at all.
func writeBlob(dir, name string, data []byte) bool {
	if os.MkdirAll(dir, 0o700) != nil {
		return false
	}
	p := filepath.Join(dir, name)
	tmp := p + ".tmp"
	if os.WriteFile(tmp, data, 0o600) != nil || os.Rename(tmp, p) != nil {
		os.Remove(tmp)
		return false
	}
	return true
}

// releaseBlobs lets go of a journal's blobs: one no journal names is kept
// among the latest, up to idleKeep bytes of them.
func releaseBlobs(names []string) {
	if len(names) == 0 {
		return
	}
	blobs.Lock()
	defer blobs.Unlock()
	for _, n := range names {
		if blobs.refs[n]--; blobs.refs[n] <= 0 {
			delete(blobs.refs, n)
			blobs.idle = append(slices.DeleteFunc(blobs.idle, func(s string) bool { return s == n }), n)
		}
	}
	var kept int64
	for i := len(blobs.idle) - 1; i >= 0; i-- {
		n := blobs.idle[i]
		if kept += blobs.size[n]; kept > idleKeep {
			os.Remove(filepath.Join(blobs.dir, n))
			delete(blobs.size, n)
			blobs.idle = slices.Delete(blobs.idle, i, i+1)
		}
	}
}

// resolve reads back the blobs j names from dir (its Harvey's); false
// when one is missing or not what its name says (the journal cannot be
// checked whole).
func (j *journal) resolve(dir string) bool {
	ok := true
	j.contents(func(data *[]byte, blob *string) {
		if *blob == "" {
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.Base(*blob)))
		if sum := sha256.Sum256(b); err != nil || hex.EncodeToString(sum[:]) != *blob {
			ok = false
			return
		}
		*data = b
	})
	return ok
}

// sweepBlobs removes the blob directories of Harveys that are gone and
// left no journal to check.
func sweepBlobs(dir string) {
	dirs, _ := filepath.Glob(filepath.Join(dir, "*.blobs"))
	for _, d := range dirs {
		var pid int
		var start string
		if n, _ := fmt.Sscanf(strings.TrimSuffix(filepath.Base(d), ".blobs"), "%d-%s", &pid, &start); n != 2 || pid == os.Getpid() {
			continue
		}
		if sandbox.ProcStart(pid) == start {
			continue // it still runs
		}
		if left, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("*-%d-*.journal", pid))); len(left) == 0 {
			os.RemoveAll(d)
		}
	}
}
