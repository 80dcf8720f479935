//go:build linux

package guard

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"golang.org/x/sys/unix"
)

// The files a command changed, without walking the workspace twice for
// each command. One tracker follows the workspace for the session: it
// walks it once, then keeps every file's stamp up to date from the
// kernel's inotify events (which follow an inode whatever mount namespace
// the write came through), and a check (a token, from before a process to
// after it) keeps the stamp each path had when it began. So what a check
// lists is what the walk before and after would list, at the cost of the
// paths that changed. A lost event queue (an overflow) is made good by
// one walk against the stamps kept. Where inotify is not there, the
// workspace has more directories than the watches it may take (a quarter
// of the user's, at most 8192: the user's editor needs them too), or
// more files than changesMaxFiles, the check walks as before.

const (
	trackMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
		unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK
	trackMaxWatches = 8192
)

type tracker struct {
	root   string
	fd     int
	wds    map[int32]string        // watch → directory (slash path from root, "" the root)
	dirs   map[string]int32        // the reverse
	stamps map[string]fsinfo.Stamp // every file's (slash path)
	tokens map[*trackToken]bool    // the checks under way
	max    int                     // watches it may take
	buf    []byte                  // events are read into it
}

// trackToken is one check's view: the stamp each path changed since it
// began had then (nil: it did not exist).
type trackToken struct {
	old map[string]*fsinfo.Stamp
}

var trackers struct {
	mu  sync.Mutex
	cur *tracker // the one workspace followed (a session has one)
	off map[string]bool
}

// beginTracked starts a check of root's files through its tracker (nil
// where there is none: the caller walks).
func beginTracked(root string) *trackToken {
	trackers.mu.Lock()
	defer trackers.mu.Unlock()
	t := trackers.cur
	if t == nil || t.root != root {
		if trackers.off[root] || t != nil && len(t.tokens) > 0 {
			return nil // another workspace's checks are under way: walk
		}
		if t != nil {
			t.close()
			trackers.cur = nil
		}
		if t = newTracker(root); t == nil {
			if trackers.off == nil {
				trackers.off = map[string]bool{}
			}
			trackers.off[root] = true
			return nil
		}
		trackers.cur = t
	}
	t.sync()
	tok := &trackToken{old: map[string]*fsinfo.Stamp{}}
	t.tokens[tok] = true
	return tok
}

// endTracked ends a check begun with beginTracked: the files made,
// changed or removed since (list, as the walk's changed names them) and
// those made or changed (paths); ok is false when it cannot tell.
func endTracked(tok *trackToken) (list, paths []string, ok bool) {
	trackers.mu.Lock()
	defer trackers.mu.Unlock()
	t := trackers.cur
	if t == nil || !t.tokens[tok] {
		return nil, nil, false // its tracker is gone (never while a check is under way)
	}
	t.sync()
	delete(t.tokens, tok)
	for p, old := range tok.old {
		var cur *fsinfo.Stamp
		if st, ok := t.stamps[p]; ok {
			cur = &st
		}
		switch {
		case old == nil && cur != nil:
			list, paths = append(list, p+" (new)"), append(paths, p)
		case old != nil && cur == nil:
			list = append(list, p+" (removed)")
		case old != nil && *old != *cur:
			list, paths = append(list, p), append(paths, p)
		}
	}
	slices.Sort(list)
	return list, paths, true
}

// newTracker follows root, or is nil where it cannot (see above).
func newTracker(root string) *tracker {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	t := &tracker{root: root, fd: fd, wds: map[int32]string{}, dirs: map[string]int32{}, stamps: map[string]fsinfo.Stamp{},
		tokens: map[*trackToken]bool{}, max: trackMaxWatches}
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			t.max = min(t.max, n/4)
		}
	}
	if !t.addTree("") || len(t.stamps) >= changesMaxFiles {
		t.close()
		return nil
	}
	return t
}

func (t *tracker) close() {
	unix.Close(t.fd)
}

// skipped reports whether a directory is not followed (.git, agents/:
// the check's other parts cover them).
func skipped(rel string) bool { return rel == ".git" || rel == AgentsDir }

// addTree follows the directory rel and everything under it, recording
// each file as it is now (as a change, for the checks under way); false
// when a watch could not be taken.
func (t *tracker) addTree(rel string) bool {
	ok := true
	base := filepath.Join(t.root, filepath.FromSlash(rel))
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		r, _ := filepath.Rel(t.root, p)
		r = filepath.ToSlash(r)
		if r == "." {
			r = ""
		}
		if d.IsDir() {
			if skipped(r) {
				return fs.SkipDir
			}
			if len(t.wds) >= t.max {
				ok = false
				return fs.SkipAll
			}
			wd, err := unix.InotifyAddWatch(t.fd, p, trackMask)
			if err != nil {
				ok = false
				return fs.SkipAll
			}
			if old, had := t.dirs[r]; had && old != int32(wd) {
				delete(t.wds, old)
			}
			t.wds[int32(wd)], t.dirs[r] = r, int32(wd)
			return nil
		}
		t.update(r)
		return nil
	})
	return ok
}

// dropTree forgets the directory rel and everything under it (removed, or
// moved away), recording its files as removed.
func (t *tracker) dropTree(rel string) {
	prefix := rel + "/"
	for p := range t.stamps {
		if strings.HasPrefix(p, prefix) {
			t.set(p, nil)
		}
	}
	for d, wd := range t.dirs {
		if d == rel || strings.HasPrefix(d, prefix) {
			unix.InotifyRmWatch(t.fd, uint32(wd))
			delete(t.dirs, d)
			delete(t.wds, wd)
		}
	}
}

// update records the file rel as it is now.
func (t *tracker) update(rel string) {
	st, ok := fsinfo.LstatStamp(filepath.Join(t.root, filepath.FromSlash(rel)))
	if !ok {
		t.set(rel, nil)
		return
	}
	t.set(rel, &st)
}

// set records rel's stamp (nil: gone), keeping the one it had for every
// check under way that has not seen it change yet.
func (t *tracker) set(rel string, st *fsinfo.Stamp) {
	cur, had := t.stamps[rel]
	if had && st != nil && cur == *st {
		return
	}
	if !had && st == nil {
		return
	}
	for tok := range t.tokens {
		if _, seen := tok.old[rel]; !seen {
			if had {
				c := cur
				tok.old[rel] = &c
			} else {
				tok.old[rel] = nil
			}
		}
	}
	if st == nil {
		delete(t.stamps, rel)
	} else {
		t.stamps[rel] = *st
	}
}

// sync applies what the kernel reported since the last sync.
func (t *tracker) sync() {
	if t.buf == nil {
		t.buf = make([]byte, 64<<10)
	}
	buf := t.buf
	dirty := map[string]bool{}
	overflow := false
	for {
		n, err := unix.Read(t.fd, buf)
		if n <= 0 || err != nil {
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				name = strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				overflow = true
				continue
			}
			t.event(ev.Wd, ev.Mask, name, dirty)
		}
	}
	for p := range dirty {
		if fi, err := os.Lstat(filepath.Join(t.root, filepath.FromSlash(p))); err == nil && fi.IsDir() {
			t.set(p, nil) // a file replaced by a directory: its own events tell the rest
			continue
		}
		t.update(p)
	}
	if overflow {
		t.rescan()
	}
}

// event applies one event on the directory watched by wd.
func (t *tracker) event(wd int32, mask uint32, name string, dirty map[string]bool) {
	dir, ok := t.wds[wd]
	if !ok {
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(t.wds, wd)
		if t.dirs[dir] == wd {
			delete(t.dirs, dir)
		}
		return
	}
	if name == "" {
		return // about the directory itself
	}
	rel := name
	if dir != "" {
		rel = dir + "/" + name
	}
	if mask&unix.IN_ISDIR == 0 {
		dirty[rel] = true
		return
	}
	switch {
	case skipped(rel):
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		if !t.addTree(rel) {
			t.rescan()
		}
	case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		t.dropTree(rel)
	}
}

// rescan walks the workspace against the stamps kept, recording what
// differs (events were lost), and takes any watch missing.
func (t *tracker) rescan() {
	seen := map[string]bool{}
	filepath.WalkDir(t.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		r, _ := filepath.Rel(t.root, p)
		r = filepath.ToSlash(r)
		if d.IsDir() {
			if r != "." && skipped(r) {
				return fs.SkipDir
			}
			if r == "." {
				r = ""
			}
			if wd, err := unix.InotifyAddWatch(t.fd, p, trackMask); err == nil {
				t.wds[int32(wd)], t.dirs[r] = r, int32(wd)
			}
			return nil
		}
		seen[r] = true
		t.update(r)
		return nil
	})
	for p := range t.stamps {
		if !seen[p] {
			t.set(p, nil)
		}
	}
}
