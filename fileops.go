package harvey

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// Changing workspace files. Every change Harvey makes to a file (write_file,
// edit_file, /write, /apply; /undo puts one back) is made here, as one
// transaction on a path the path gate resolved once: the plan holds the
// resolved target, its directory open, until the commit; the commit writes
// only if the target is still the file that was planned and still holds
// what the approval saw, atomically (a temporary file renamed over it), and
// keeps the version it replaced for /undo. Nothing here decides who may
// change what: the path policy (internal/wspath) decided it when the plan was made,
// and the approval (approval.go) is asked between plan and commit.

// fileEdit computes a file's new content from what it holds (old, and
// whether it exists), with the text of the result when the edit has one
// (its summary). A change without one writes a whole new content.
type fileEdit func(old string, exists bool) (content, note string, err error)

// changeFailed is an error of an edit itself (its old text is not in the
// file): nothing was attempted on the file.
type changeFailed struct{ error }

func (c changeFailed) Unwrap() error { return c.error }

// fileChange is a planned change of one file: the target the path gate
// resolved (a link's target, not its name; its directory held open until
// commit or close), what it holds now and what it will hold.
type fileChange struct {
	asked   string // the path as given, cleaned
	target  string // the resolved workspace path that changes
	action  string // the change named for the approval: its real target
	old     string
	existed bool
	content string
	note    string // the result text, when the change computes one
	rp      *wspath.Resolved
}

// close lets go of the plan's directory (commit closes it too).
func (fc *fileChange) close() {
	if fc != nil && fc.rp != nil {
		fc.rp.Close()
		fc.rp = nil
	}
}

// changeApprover asks before a planned change is written: the approval
// service with who asks (approval.go: changeApproval).
type changeApprover interface {
	approveChange(ctx context.Context, fc *fileChange) error
}

// changeWorkspaceFile is one change of a file from start to end: plan (one
// resolution of p), approval, commit (the replaced version kept in j for
// /undo, as by's). A nil change with a nil error: the content is the same,
// nothing was asked or written. The change is returned with a failure that
// came after the path was resolved, to name its real target.
func changeWorkspaceFile(ctx context.Context, ws *Workspace, p, content string, edit fileEdit, ap changeApprover, j *undoStack, by string) (*fileChange, error) {
	fc, err := planFileChange(ws, p, content, edit)
	if err != nil || fc == nil {
		return fc, err
	}
	if err := ap.approveChange(ctx, fc); err != nil {
		fc.close()
		return fc, err
	}
	return fc, fc.commit(ws, j, by)
}

// maxEditBytes bounds the files Harvey changes in place: their old text is
// held in memory for the diff and the edit.
const maxEditBytes = 4 << 20

// planFileChange resolves p once through the path gate (as a write), reads
// what the target holds and computes what it will hold: content, or what
// edit makes of the old content (an edit computed over the model's view).
// A write that would put Harvey's redaction markers over the secrets they
// hide is refused. A nil plan with a nil error: the content is unchanged.
// The caller commits or closes the plan.
func planFileChange(ws *Workspace, p, content string, edit fileEdit) (*fileChange, error) {
	rp, err := ws.Resolve(p, wspath.OpWrite)
	if err != nil {
		return nil, err
	}
	fc := &fileChange{asked: rp.Asked, target: rp.Rel, rp: rp}
	fc.old, fc.existed, err = readOld(rp, p)
	whole := edit == nil
	switch {
	case err != nil:
	case whole:
		fc.content = content
	default:
		if fc.content, fc.note, err = edit(fc.old, fc.existed); err != nil {
			err = changeFailed{err}
		}
	}
	if err == nil && fc.existed && wouldDestroySecrets(fc.old, fc.content) {
		err = wspath.Failed(fc.target, errDestroySecrets, nil)
	}
	if err != nil {
		fc.close()
		return fc, err
	}
	if fc.existed && fc.old == fc.content && (!whole || secrets.Redact(fc.old) == fc.old) {
		// Unchanged. Not said of a whole new content over a file holding
		// secrets: "unchanged" would confirm a guess at the hidden bytes,
		// so that write is asked about like any other. (An edit's sameness
		// was decided over the view.)
		fc.close()
		return nil, nil
	}
	fc.action = "write " + termtext.QuotePath(fc.target)
	if fc.asked != fc.target {
		fc.action += " (through " + termtext.QuotePath(fc.asked) + ")"
	}
	return fc, nil
}

// readOld returns what a resolved write target holds ("" when it does not
// exist). Files over maxEditBytes and binary files are refused without
// being read past the limit.
func readOld(rp *wspath.Resolved, p string) (old string, exists bool, err error) {
	if rp.Info == nil {
		return "", false, nil
	}
	tooLarge := wspath.Failed(p, "file is over 4 MB, too large to change in place", nil)
	if rp.Info.Size() > maxEditBytes {
		return "", true, tooLarge
	}
	f, st, err := rp.OpenVerified()
	if err != nil {
		return "", true, err
	}
	defer f.Close()
	// Read straight into the string the edit works on: one copy of the
	// file, sized from fstat (a file that grew meanwhile still fits).
	var sb strings.Builder
	sb.Grow(int(st.Size()) + 1)
	if _, err := io.Copy(&sb, io.LimitReader(f, maxEditBytes+1)); err != nil {
		return "", true, wspath.OSFailure(p, err)
	}
	old = sb.String()
	if len(old) > maxEditBytes {
		return "", true, tooLarge
	}
	if outputcap.IsBinary([]byte(old[:min(len(old), 8000)])) {
		return "", true, wspath.Failed(p, "binary file, not changed", nil)
	}
	return old, true, nil
}

const errDestroySecrets = "the new content has Harvey's [REDACTED] markers where the file holds secrets; writing it would destroy them. Change only the lines you need with edit_file"

// wouldDestroySecrets reports whether content carries redaction markers
// over a file that holds secrets: the model saw the file redacted and is
// writing the markers back in place of the real values.
func wouldDestroySecrets(old, content string) bool {
	return strings.Contains(content, "[REDACTED") && !strings.Contains(old, "[REDACTED") && secrets.Redact(old) != old
}

const errChangedMeanwhile = "the file changed while the change was being approved; read it again"

// commit writes the planned content if the target is still what was
// planned: its directory still where it was in the workspace, the file the
// same one holding the same bytes (or still absent). The version it
// replaces goes to j for /undo. The plan is closed.
func (fc *fileChange) commit(ws *Workspace, j *undoStack, by string) error {
	defer fc.close()
	if fc.rp == nil {
		return wspath.Failed(fc.target, errChangedMeanwhile, nil)
	}
	if !fc.rp.StillInPlace(ws.Tree) || !fc.stillHolds() {
		return wspath.Failed(fc.target, errChangedMeanwhile, nil)
	}
	made, err := writeResolved(ws, fc.rp, fc.content)
	if err != nil {
		return err
	}
	j.push(undoEntry{path: fc.target, old: fc.old, existed: fc.existed, wrote: fc.content, dirs: made, by: by, at: time.Now()})
	return nil
}

// stillHolds reports whether the target is what the plan saw: the same
// file with the same bytes, or still nothing (and no directory of the
// plan's missing ones made meanwhile).
func (fc *fileChange) stillHolds() bool {
	rp := fc.rp
	if len(rp.Missing) > 0 {
		_, err := rp.Parent.Lstat(rp.Missing[0])
		return errors.Is(err, fs.ErrNotExist)
	}
	if !fc.existed {
		_, err := rp.Parent.Lstat(rp.Name)
		return errors.Is(err, fs.ErrNotExist)
	}
	return rp.Holds(fc.old)
}

// writeResolved writes content to a resolved path atomically, first making
// the directories the path still lacks. It returns the directories it made,
// outermost first.
func writeResolved(ws *Workspace, rp *wspath.Resolved, content string) (made []string, err error) {
	dir, made, err := makeParents(ws, rp)
	if err != nil {
		return made, err
	}
	if dir != rp.Parent {
		defer dir.Close()
	}
	perm := fs.FileMode(0o644)
	if rp.Info != nil {
		perm = rp.Info.Mode().Perm()
	}
	if err := atomicWrite(dir, rp.Name, content, perm); err != nil {
		return made, wspath.OSFailure(rp.Rel, err)
	}
	return made, nil
}

// makeParents makes the directories rp lacks below its held directory, one
// at a time: each must be made here (one that appeared meanwhile means the
// path changed) and is entered by identity, never through a link. It
// returns the directory the file goes in.
func makeParents(ws *Workspace, rp *wspath.Resolved) (*os.Root, []string, error) {
	cur, made := rp.Parent, []string(nil)
	rel := rp.ParentRel
	for _, c := range rp.Missing {
		next, err := makeAndEnter(ws, cur, c)
		if cur != rp.Parent {
			cur.Close()
		}
		if err != nil {
			return nil, made, wspath.Refuse(rp.Rel, "refused: the path changed while it was being written")
		}
		rel = path.Join(rel, c)
		made = append(made, rel)
		cur = next
	}
	if len(rp.Missing) > 0 {
		if _, err := cur.Lstat(rp.Name); !errors.Is(err, fs.ErrNotExist) {
			cur.Close()
			return nil, made, wspath.Refuse(rp.Rel, "refused: the path changed while it was being written")
		}
	}
	return cur, made, nil
}

// makeAndEnter makes the directory c in cur and opens it, checking that
// what was opened is what was made: a directory, not a link, not agents/.
func makeAndEnter(ws *Workspace, cur *os.Root, c string) (*os.Root, error) {
	if err := cur.Mkdir(c, 0o755); err != nil {
		return nil, err
	}
	fi, err := cur.Lstat(c)
	if err != nil || fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return nil, fs.ErrInvalid
	}
	next, err := cur.OpenRoot(c)
	if err != nil {
		return nil, err
	}
	if st, err := next.Stat("."); err != nil || !os.SameFile(fi, st) || ws.IsAgentsDir(st) {
		next.Close()
		return nil, fs.ErrInvalid
	}
	return next, nil
}

// errUndoStale: the file is no longer what Harvey wrote.
var errUndoStale = errors.New("the file changed since it was written")

// undoChange takes back a change from the journal, on one resolution of its
// path, only while the file still holds exactly what Harvey wrote: a file
// Harvey created is removed (that needs the delete permission), with the
// directories the write made while they are empty (innermost first; those
// removed are returned); an older version is written back.
func undoChange(ws *Workspace, e undoEntry) (removed []string, err error) {
	op := wspath.OpWrite
	if !e.existed {
		op = wspath.OpDelete
	}
	rp, err := ws.Resolve(e.path, op)
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	if !rp.Holds(e.wrote) {
		return nil, errUndoStale
	}
	if e.existed {
		_, err := writeResolved(ws, rp, e.old)
		return nil, err
	}
	if err := rp.Parent.Remove(rp.Name); err != nil {
		return nil, wspath.OSFailure(e.path, err)
	}
	for i := len(e.dirs) - 1; i >= 0 && removeEmptyWorkspaceDir(ws, e.dirs[i]); i-- {
		removed = append(removed, e.dirs[i])
	}
	return removed, nil
}

// removeEmptyWorkspaceDir removes p if it is an empty directory (through
// the same gate as a delete); anything else is left alone. /undo uses it
// for the directories a write it takes back had created.
func removeEmptyWorkspaceDir(ws *Workspace, p string) bool {
	rp, err := ws.Resolve(p, wspath.OpRemoveDir)
	if err != nil {
		return false
	}
	defer rp.Close()
	if rp.Info == nil || !rp.Info.IsDir() || rp.Parent == nil || len(rp.Missing) > 0 {
		return false
	}
	return rp.Parent.Remove(rp.Name) == nil // rmdir: fails unless empty
}

// atomicWrite writes data to name inside dir via a temporary file created with
// O_EXCL (never follows a symlink) and a rename, which replaces a symlink or a
// hard link instead of writing through it.
func atomicWrite(dir *os.Root, name string, data string, perm fs.FileMode) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	removeStaleTemps(dir, name)
	tmp := "." + name + ".harvey-" + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			dir.Remove(tmp)
		}
	}()
	if _, err := f.WriteString(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := dir.Rename(tmp, name); err != nil {
		dir.Remove(tmp)
		ok = true
		return err
	}
	ok = true
	syncDir(dir)
	return nil
}

// removeStaleTemps deletes temporary files that an earlier Harvey, killed
// between creating and renaming them, left beside name. Only files over a
// minute old go, so a concurrent write is not disturbed.
func removeStaleTemps(dir *os.Root, name string) {
	d, err := dir.Open(".")
	if err != nil {
		return
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return
	}
	prefix := "." + name + ".harvey-"
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, ".tmp") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
			dir.Remove(n)
		}
	}
}

// syncDir flushes a directory entry change (best effort).
func syncDir(dir *os.Root) {
	if d, err := dir.Open("."); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Undo: every file change keeps the version it replaced, taken before the
// change, so /undo can put it back. An undo only happens when the file is
// still exactly what Harvey wrote; a file someone changed since is left
// alone. The stack lives for the session, bounded in entries and bytes.

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
