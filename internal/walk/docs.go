package walk

import (
	"fmt"
	"iter"
	"path"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/wsindex"
	"github.com/harvey-agent/harvey/internal/wspath"
	"golang.org/x/sys/unix"
)

// MaxFile is the largest file a document is read from.
const MaxFile = 1 << 20

// Docs walks the workspace as search_files does (Walk:
// the same policy, the same reads without following a link) and yields
// what may be indexed, redacted.
func Docs(ws *wspath.Tree, bounds *Bounds) iter.Seq[wsindex.Doc] {
	return func(yield func(wsindex.Doc) bool) {
		rp, err := ws.Resolve(".", wspath.OpRead)
		if err != nil {
			return
		}
		defer rp.Close()
		Walk(ws, rp, &indexSink{yield: yield, bounds: bounds})
	}
}

// DocSink is a Sink that yields each file the walk hands it as a
// document (skipped, when not nil, counts what it left out, and why).
func DocSink(yield func(wsindex.Doc) bool, skipped map[string]int) Sink {
	return &indexSink{yield: yield, skipped: skipped}
}

// indexSink reads each file the walk hands it and yields it as a
// document: text files of at most MaxFile bytes, redacted (skipped,
// when set, counts what was left out and why).
type indexSink struct {
	yield   func(wsindex.Doc) bool
	stopped bool
	skipped map[string]int
	bounds  *Bounds // nil: no bounds (files a user names to a RAG store)
}

func (s *indexSink) done() bool { return s.stopped }

func (s *indexSink) walkBounds() *Bounds { return s.bounds }

func (s *indexSink) skip(why string) {
	if s.skipped != nil {
		s.skipped[why]++
	}
}

// submit offers the file with its stamp; it is read (and redacted) only
// when the index asks, while the walk still holds its directory.
func (s *indexSink) submit(f searchFile) {
	defer f.dir.release()
	if s.stopped {
		return
	}
	st, ok := statOf(f)
	if s.bounds != nil && !s.bounds.take(st.Size) {
		s.bounds.cutAt = path.Dir(f.rel)
		s.stopped = true
		return
	}
	stamp := ""
	if ok {
		stamp = fmt.Sprint(fsinfo.StampOf(&st))
	}
	d := wsindex.Doc{Path: f.rel, Stamp: stamp, Read: func() ([]byte, bool) {
		data, ok := ReadRegular(f.dir.fd, f.name, f.self, MaxFile, nil)
		switch {
		case !ok:
			s.skip("over 1 MB or not a plain file")
			return nil, false
		case outputcap.IsBinary(data):
			s.skip("binary")
			return nil, false
		}
		return []byte(secrets.Redact(string(data))), true
	}}
	s.stopped = !s.yield(d)
}

// statOf is a walked file's stat, without following a link (ok false
// when it cannot be read): its stamp (keyOf: what changes when it is
// written) and its size, from one call.
func statOf(f searchFile) (unix.Stat_t, bool) {
	var st unix.Stat_t
	var err error
	if f.self {
		err = unix.Fstat(f.dir.fd, &st)
	} else {
		err = unix.Fstatat(f.dir.fd, f.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	return st, err == nil
}
