package guard

import (
	"os"
	"sync"

	"github.com/harvey-agent/harvey/internal/fsinfo"
)

// The index as the last snapshot read it, by its git directory: a snapshot
// that finds the index with the same stamp (device, inode, size,
// modification and change times: a write moves the change time, which no
// program can set back) takes it, its gitlinks and its hidden entries from
// here instead of reading and parsing it again before every command — two
// and a half megabytes, and most of a command's check, in a repository of
// 30,000 files. As with readKept, an index changed within racyWindow is
// read every time (a write in the same timestamp tick as the one before
// it would keep the stamp), and only where the kernel keeps the change
// time (trustedDir).
type indexSnap struct {
	at            fsinfo.Stamp
	index         []byte // shared, never written to (a check reads the index anew to change it)
	links, hidden []string
}

var indexMemo = struct {
	sync.Mutex
	m map[string]*indexSnap
}{m: map[string]*indexSnap{}}

// readIndex records d's index (its stamp key, taken before: keyed false
// when it has none) as it is now.
func (d *gitDirGuard) readIndex(r *os.Root, key fsinfo.Stamp, keyed bool) {
	if keyed {
		indexMemo.Lock()
		s := indexMemo.m[d.dir]
		indexMemo.Unlock()
		if s != nil && s.at == key {
			d.index, d.indexAt, d.links, d.hidden = s.index, key, s.links, s.hidden
			return
		}
	}
	b, err := r.ReadFile("index")
	if err != nil {
		return
	}
	d.index, d.indexAt = b, key
	d.links, d.hidden = gitlinks(b, d.hashLen), hiddenEntries(b, d.hashLen)
	if keyed && !racyStamp(key) && trustedDir(d.dir) {
		indexMemo.Lock()
		if len(indexMemo.m) >= 64 {
			clear(indexMemo.m)
		}
		indexMemo.m[d.dir] = &indexSnap{at: key, index: b, links: d.links, hidden: d.hidden}
		indexMemo.Unlock()
	}
}
