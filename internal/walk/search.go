// Package walk is the one walk of the workspace and what is built on it.
// search_files and /search (Search): a Go regexp over the text files under a path,
// skipping agents/, .git/, denylisted, binary, hard-linked and .gitignored
// files and never following a symlink. Results are "file:line: text".
//
// It is built for speed on trees like Go's own source (11k files): the
// directory walk opens each directory relative to its parent's descriptor
// with O_NOFOLLOW (one system call, no path re-walk), and files are read
// by a pool of workers, each with its own buffer. Work is taken in walk
// order and results are merged in that order, so the output is the same as
// a sequential search and stops at the same place when capped.
//
// Walk hands a Sink every file under a directory that the path policy
// lets the model read (internal/wspath): not agents/ (by name or
// identity), not .git, no denied, permissions-hidden or .gitignore'd file,
// no link, FIFO, socket or device. The workspace index and /context
// load-dir read the same walk as documents (Docs, DocSink), the index
// within its Bounds (files, bytes, caches and build output left out by
// what they are, and said); Refusal keeps the index out of a home
// directory or / unless the user said yes.
package walk

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/match"
	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/wspath"
	"golang.org/x/sys/unix"
)

// Search limits.
const (
	MaxMatches        = 200
	searchMaxLineLen  = 300
	searchMaxFileSize = 8 << 20
)

// Timeout bounds one search; what was found by then is kept.
var Timeout = 30 * time.Second

// Hits is a search's answer: the text, how many matches it shows,
// and whether there are more than it shows.
type Hits struct {
	Text  string
	Shown int  // matches shown
	More  bool // there are more than it shows
}

// Summary is the user's line for the hits ("200 matches shown, more
// exist").
func (h Hits) Summary() string {
	switch {
	case h.Shown == 0:
		return "no matches"
	case h.More:
		return fmt.Sprintf("%d matches shown, more exist (narrow the pattern or the path)", h.Shown)
	}
	return fmt.Sprintf("%d matches", h.Shown)
}

// Search runs pattern over the files under p (a file or directory), the
// matches with whether there were more than it shows; cache remembers,
// per file content, whether redaction leaves it unchanged.
func Search(ctx context.Context, ws *wspath.Tree, cache *sync.Map, pattern, p string, maxBytes int) (Hits, error) {
	if pattern == "" {
		return Hits{}, errors.New("search: pattern is empty")
	}
	re, err := match.CompileBounded(pattern)
	if err != nil {
		return Hits{}, fmt.Errorf("search: %v", err)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if p == "" {
		p = "."
	}
	if maxBytes <= 0 || maxBytes > config.DefaultMaxOutputBytes {
		maxBytes = config.DefaultMaxOutputBytes
	}
	rp, err := ws.Resolve(p, wspath.OpRead)
	if err != nil {
		return Hits{}, err
	}
	defer rp.Close()
	g := newGrepPool(ctx, re)
	g.clean = cache
	if err := submitSearch(ws, rp, g); err != nil {
		return Hits{}, err
	}
	results := g.finish()
	if err := parent.Err(); err != nil {
		return Hits{}, err // cancelled: nothing half-done is reported
	}
	text, matches, more := searchAnswer(results, maxBytes, ctx.Err() != nil)
	return Hits{Text: text, Shown: matches, More: more}, nil
}

// submitSearch gives the pool the file rp names, or walks the directory.
func submitSearch(ws *wspath.Tree, rp *wspath.Resolved, g *grepPool) error {
	return Walk(ws, rp, g)
}

// Walk hands sink the file rp names, or every file under the
// directory rp names that the path policy lets the model read: the one
// walk of search_files and the workspace index (not agents/, by name or
// identity; not .git; no denied, permissions-hidden or .gitignore'd file;
// no link, FIFO, socket or device; directories opened without following a
// link).
func Walk(ws *wspath.Tree, rp *wspath.Resolved, sink Sink) error {
	if !rp.Info.IsDir() {
		f, _, err := rp.OpenVerified()
		if err != nil {
			return err
		}
		fd, err := unix.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			return wspath.OSFailure(rp.Rel, err)
		}
		d := &searchDir{fd: fd}
		d.refs.Store(1)
		sink.submit(searchFile{dir: d, name: ".", rel: rp.Rel, self: true})
		return nil
	}
	d, err := rp.OpenDirVerified(ws)
	if err != nil {
		return err
	}
	fd, err := wspath.RootFD(d)
	d.Close()
	if err != nil {
		return wspath.OSFailure(rp.Rel, err)
	}
	root := &searchDir{fd: fd}
	root.refs.Store(1)
	w := &searchWalker{ws: ws, ign: ancestorIgnores(ws, rp.Rel), sink: sink}
	if b, ok := sink.(interface{ walkBounds() *Bounds }); ok {
		w.bounds = b.walkBounds()
	}
	w.walk(root, rp.Rel)
	return nil
}

// searchAnswer is the hits, in order, within the match count and the cap,
// with a note when they were capped or the search stopped on time. The
// files give one hit past the count when there are more, so a cap reached
// inside one file is said too.
func searchAnswer(results [][][]byte, maxBytes int, stopped bool) (string, int, bool) {
	var out bytes.Buffer
	matches, full := 0, false
	for _, r := range results {
		for _, h := range r {
			if matches >= MaxMatches || out.Len() > maxBytes {
				full = true
				break
			}
			matches++
			out.Write(h)
		}
	}
	stopNote := fmt.Sprintf("[search stopped after %s: the pattern is slow on these files; narrow the pattern or the path]", Timeout)
	if matches == 0 {
		if stopped {
			return "no matches so far " + stopNote, 0, false
		}
		return "no matches", 0, false
	}
	text := outputcap.Cap(out.Bytes(), maxBytes, false) // hits come from redacted text
	if full {
		text += fmt.Sprintf("\n[results capped: %d matches shown, and there are more; narrow the pattern, or give a path (a directory or one file)]", matches)
	} else if stopped {
		text += "\n" + stopNote
	}
	return text, matches, full
}

// searchDir is an open directory shared by the files found in it; the last
// user closes it.
type searchDir struct {
	fd   int
	refs atomic.Int32
}

func (d *searchDir) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

type searchFile struct {
	dir  *searchDir
	name string // entry name in dir ("." with self: dir.fd is the file)
	rel  string // workspace-relative path, for results and rules
	self bool
}

type searchWalker struct {
	ws     *wspath.Tree
	ign    *wspath.IgnoreSet
	sink   Sink
	bounds *Bounds // the workspace index's walk only (index_bounds.go)
}

// ancestorIgnores loads the .gitignore files above dir, the directory a
// search starts in (the walk reads dir's own and those below it).
func ancestorIgnores(ws *wspath.Tree, dir string) *wspath.IgnoreSet {
	s := &wspath.IgnoreSet{}
	cur := "."
	for {
		if cur == dir || dir == "." {
			return s
		}
		if data, err := readIgnoreFile(ws, cur); err == nil {
			s.Add(cur, data)
		}
		rest := dir
		if cur != "." {
			rest = dir[len(cur)+1:]
		}
		next, _, _ := cutPath(rest)
		cur = path.Join(cur, next)
	}
}

func cutPath(p string) (first, rest string, ok bool) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i], p[i+1:], true
		}
	}
	return p, "", false
}

// readIgnoreFile reads dir/.gitignore the way the walk reads the ones
// below it: the directory through the workspace checks, the file by name
// from its descriptor.
func readIgnoreFile(ws *wspath.Tree, dir string) ([]byte, error) {
	rp, err := ws.Resolve(dir, wspath.OpRead)
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	d, err := rp.OpenDirVerified(ws)
	if err != nil {
		return nil, err
	}
	fd, err := wspath.RootFD(d)
	d.Close()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readDirFile(fd, ".gitignore", 1<<20)
}

// walk lists dir (which the caller holds one reference to) and recurses.
func (w *searchWalker) walk(dir *searchDir, rel string) {
	defer dir.release()
	dup, err := unix.Dup(dir.fd)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(dup), rel)
	entries, _ := f.ReadDir(-1)
	f.Close()
	// Name order, as fs.WalkDir and people expect (getdents order is not).
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	// A directory's .gitignore governs that directory only: its rules are
	// dropped when the walk leaves it, so the rules tested for a path are
	// those of its ancestors (cost grows with depth, not with the number of
	// .gitignore files in the tree).
	mark := w.ign.Mark()
	defer w.ign.Truncate(mark)
	for _, e := range entries {
		if e.Name() == ".gitignore" {
			if data, err := readDirFile(dir.fd, ".gitignore", 1<<20); err == nil {
				w.ign.Add(rel, data)
			}
		}
	}
	if w.bounds != nil {
		// The index walks a directory's plain entries before its dot ones:
		// in a home, projects before the caches and toolchains kept in dot
		// directories, so a cap cuts those, not a project.
		slices.SortStableFunc(entries, func(a, b fs.DirEntry) int {
			return cmp.Compare(boolInt(strings.HasPrefix(a.Name(), ".")), boolInt(strings.HasPrefix(b.Name(), ".")))
		})
	}
	for _, e := range entries {
		name := e.Name()
		wsRel := path.Join(rel, name)
		t := e.Type()
		switch {
		case w.sink.done():
			return // enough matches from what came before, or stopped
		case t.IsDir():
			if sub := w.enter(dir, rel, name, wsRel); sub != nil {
				w.walk(sub, wsRel)
			}
		case t.IsRegular():
			if secrets.FileDenied(wsRel) || w.ign.Ignored(wsRel, false) || !w.ws.Readable(wsRel) {
				continue
			}
			dir.refs.Add(1)
			w.sink.submit(searchFile{dir: dir, name: name, rel: wsRel})
		}
		// Symlinks, FIFOs, sockets and devices are never followed or read.
	}
}

// enter opens a subdirectory the walk goes into (nil: it does not: .git,
// agents/, ignored, or past the index's bounds).
func (w *searchWalker) enter(dir *searchDir, rel, name, wsRel string) *searchDir {
	norm := secrets.NormName(name)
	if norm == ".git" || (rel == "." && norm == wspath.AgentsDir) || w.ign.Ignored(wsRel, true) {
		return nil
	}
	fd, err := unix.Openat(dir.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	// agents/ lives at the top; elsewhere only a hard-linked directory
	// (impossible) or a mount could be it.
	if (rel == "." && w.isAgents(fd)) || (w.bounds != nil && w.bounds.skipDir(dir.fd, name, fd)) {
		unix.Close(fd)
		return nil
	}
	sub := &searchDir{fd: fd}
	sub.refs.Store(1)
	return sub
}

// isAgents compares an open directory with the workspace's agents/ by
// identity (a differently spelled or linked agents/ is still agents/).
func (w *searchWalker) isAgents(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return true
	}
	return w.ws.IsAgentsStat(uint64(st.Dev), st.Ino)
}

// readDirFile reads a small regular file by name from a directory fd.
func readDirFile(dirfd int, name string, limit int) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	data, ok := ReadRegular(dirfd, name, false, limit, buf)
	if !ok {
		return nil, errors.New("unreadable")
	}
	return data, nil
}

// ReadRegular opens name in dirfd without following a symlink and without
// blocking on a FIFO, checks it is a regular file with one link and at most
// limit bytes, and reads it into buf.
func ReadRegular(dirfd int, name string, self bool, limit int, buf []byte) ([]byte, bool) {
	data, _, ok := readRegularKey(dirfd, name, self, limit, buf)
	return data, ok
}

// readRegularKey is readRegular that also returns the file's key.
func readRegularKey(dirfd int, name string, self bool, limit int, buf []byte) ([]byte, fsinfo.Stamp, bool) {
	fd := dirfd
	if !self {
		var err error
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fsinfo.Stamp{}, false
		}
		defer unix.Close(fd)
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink > 1 || st.Size > int64(limit) {
		return nil, fsinfo.Stamp{}, false
	}
	key := fsinfo.StampOf(&st)
	// Read the size that was checked (a file growing meanwhile is read to
	// that size), without a final empty read.
	size := int(st.Size)
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:size]
	n := 0
	for n < size {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if m <= 0 || err != nil {
			break
		}
		n += m
	}
	return buf[:n], key, true
}

// grepPool searches files with a few workers while the walk goes on. Files
// are queued in walk order; once enough matches are in, the walk stops
// queueing. Every queued file is searched, so the merged results equal a
// sequential search's first MaxMatches.
type grepPool struct {
	ctx     context.Context // when it ends, files not yet read are skipped
	m       match.Matcher
	jobs    chan searchJob
	wg      sync.WaitGroup
	mu      sync.Mutex
	results map[int][][]byte
	found   atomic.Int64
	n       int
	clean   *sync.Map // fsinfo.Stamp → whether redaction leaves it unchanged
	marker  bool      // a match could touch a redaction marker: every file is redacted
}

type searchJob struct {
	idx int
	f   searchFile
}

func newGrepPool(ctx context.Context, re *regexp.Regexp) *grepPool {
	g := &grepPool{ctx: ctx, m: match.NewMatcher(re), jobs: make(chan searchJob, 256), results: map[int][][]byte{}, marker: match.MayTouchMark(re, secrets.Mark)}
	for range min(runtime.GOMAXPROCS(0), 8) {
		g.wg.Add(1)
		go g.work()
	}
	return g
}

func (g *grepPool) full() bool { return g.found.Load() > MaxMatches }

// Sink is what a workspace walk hands the files it may read to (the
// grep pool, the workspace index), each with a reference on its directory
// that the sink releases; done stops the walk.
type Sink interface {
	submit(searchFile)
	done() bool
}

func (g *grepPool) done() bool { return g.full() || g.ctx.Err() != nil }

func (g *grepPool) submit(f searchFile) {
	g.jobs <- searchJob{idx: g.n, f: f}
	g.n++
}

func (g *grepPool) work() {
	defer g.wg.Done()
	buf := make([]byte, 0, 64<<10)
	for j := range g.jobs {
		// Every queued file is searched (only the walk stops early), so
		// no file before a counted match is ever skipped — unless the
		// search is stopped, and then what was found is all there is.
		if g.ctx.Err() != nil {
			j.f.dir.release()
			continue
		}
		data, key, ok := readRegularKey(j.f.dir.fd, j.f.name, j.f.self, searchMaxFileSize, buf)
		if ok {
			if cap(data) > cap(buf) {
				buf = data[:0] // keep the larger buffer
			}
			// Files whose raw text has no match are skipped without
			// being redacted when that cannot change the answer (see
			// mayMatchAtMarker); the pattern always runs again on what
			// the model may see.
			rawMatch := !g.marker && match.MatchChunks(g.ctx, g.m, data)
			if !g.marker && !rawMatch {
				j.f.dir.release()
				continue
			}
			// A file redaction leaves as it is needs no second whole-file
			// match: the raw one was on the same bytes.
			red, changed := g.redacted(data, key)
			if hits := grepData(g.ctx, red, g.m, j.f.rel, rawMatch && !changed); hits != nil {
				g.mu.Lock()
				g.results[j.idx] = hits
				g.mu.Unlock()
				g.found.Add(int64(len(hits)))
			}
		}
		j.f.dir.release()
	}
}

// finish waits for the workers and returns the hits in walk order.
func (g *grepPool) finish() [][][]byte {
	close(g.jobs)
	g.wg.Wait()
	out := make([][][]byte, 0, len(g.results))
	for i := 0; i < g.n; i++ {
		if r, ok := g.results[i]; ok {
			out = append(out, r)
		}
	}
	return out
}

// redacted returns the file's text as the model may see it. The pattern
// runs over the redacted text only: matching the raw file would make search
// an oracle for the secrets it hides. Whether redaction changes a file is
// remembered by its key, so later searches skip the work for the (many)
// files that hold no secret.
// It reports whether redaction changed anything.
func (g *grepPool) redacted(data []byte, key fsinfo.Stamp) ([]byte, bool) {
	if outputcap.IsBinary(data) {
		return data, false
	}
	if g.clean != nil {
		if v, ok := g.clean.Load(key); ok && v.(bool) {
			return data, false
		}
	}
	str := string(data)
	red := secrets.Redact(str)
	if g.clean != nil {
		g.clean.Store(key, red == str)
	}
	if red == str {
		return data, false
	}
	return []byte(red), true
}

// grepData returns the matching lines of one file, formatted. Binary files
// (a NUL in the first 8000 bytes) are skipped; a file that may hold a secret
// is redacted whole first, so a private key spanning lines is caught and the
// pattern never sees a secret. matched says the whole text is already
// known to match (the per-line pass still decides what is shown).
func grepData(ctx context.Context, data []byte, m match.Matcher, rel string, matched bool) [][]byte {
	if outputcap.IsBinary(data) || (!matched && !match.MatchChunks(ctx, m, data)) {
		return nil
	}
	var hits [][]byte
	lineNo := 0
	for len(data) > 0 && len(hits) <= MaxMatches { // one past the cap: the evidence that there are more
		lineNo++
		if lineNo%1024 == 0 && ctx.Err() != nil {
			break
		}
		i := bytes.IndexByte(data, '\n')
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+1:]
		}
		if !m.Match(line) {
			continue
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) > searchMaxLineLen {
			line = append(line[:searchMaxLineLen:searchMaxLineLen], "..."...)
		}
		hits = append(hits, fmt.Appendf(nil, "%s:%d: %s\n", rel, lineNo, line))
	}
	return hits
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
