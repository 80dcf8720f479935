package harvey

import (
	"sync"
	"time"
)

// Undo: every file change Harvey makes (write_file, edit_file, /write,
// /apply) keeps the version it replaced, taken before the change, so /undo
// can put it back. An undo only happens when the file is still exactly what
// Harvey wrote; a file someone changed since is left alone. The stack lives
// for the session, bounded in entries and bytes.

const (
	undoMaxEntries = 100
	undoMaxBytes   = 64 << 20
)

type undoEntry struct {
	path    string // workspace-relative
	old     string // content before the change ("" when it did not exist)
	existed bool
	wrote   string   // what Harvey wrote
	dirs    []string // directories the write created, outermost first
	by      string   // tool or command
	at      time.Time
}

type undoStack struct {
	mu      sync.Mutex
	entries []undoEntry
	bytes   int
}

// push records a change; the oldest entries go when the stack is full.
func (u *undoStack) push(e undoEntry) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries = append(u.entries, e)
	u.bytes += len(e.old) + len(e.wrote)
	for len(u.entries) > undoMaxEntries || (u.bytes > undoMaxBytes && len(u.entries) > 1) {
		u.bytes -= len(u.entries[0].old) + len(u.entries[0].wrote)
		u.entries = u.entries[1:]
	}
}

func (u *undoStack) pop() (undoEntry, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.entries) == 0 {
		return undoEntry{}, false
	}
	e := u.entries[len(u.entries)-1]
	u.entries = u.entries[:len(u.entries)-1]
	u.bytes -= len(e.old) + len(e.wrote)
	return e, true
}

func (u *undoStack) list() []undoEntry {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]undoEntry(nil), u.entries...)
}
