package wsfile

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

// Edit computes a file's new content from what it holds (old, and
// whether it exists), with the text of the result when the edit has one
// (its summary). A change without one writes a whole new content.
type Edit func(old string, exists bool) (content, note string, err error)

// Failed is an error of an edit itself (its old text is not in the
// file): nothing was attempted on the file.
type Failed struct{ error }

func (c Failed) Unwrap() error { return c.error }

// Change is a planned change of one file: the target the path gate
// resolved (a link's target, not its name; its directory held open until
// commit or close), what it holds now and what it will hold.
type Change struct {
	asked   string // the path as given, cleaned
	Target  string // the resolved workspace path that changes
	Action  string // the change named for the approval: its real target
	Old     string
	Existed bool
	Content string
	Note    string // the result text, when the change computes one
	rp      *wspath.Resolved
	buf     Buffers // an editor's files: read and written there (nil: the disk)
}

// Close lets go of the plan's directory (commit closes it too).
func (fc *Change) Close() {
	if fc != nil && fc.rp != nil {
		fc.rp.Close()
		fc.rp = nil
	}
}

// Approver asks before a planned change is written: the approval
// service with who asks (approval.go: changeApproval).
type Approver interface {
	ApproveChange(ctx context.Context, fc *Change) error
}

// ChangeFile is one change of a file from start to end: plan (one
// resolution of p), approval, commit (the replaced version kept in j for
// /undo, as by's). A nil change with a nil error: the content is the same,
// nothing was asked or written. The change is returned with a failure that
// came after the path was resolved, to name its real target.
func ChangeFile(ctx context.Context, ws *wspath.Tree, p, content string, edit Edit, ap Approver, j *Journal, by string) (*Change, error) {
	return ChangeFileIn(ctx, ws, nil, p, content, edit, ap, j, by)
}

// ChangeFileIn is ChangeFile through an editor's files (nil buf: the
// disk's): the path resolved, checked and its missing directories made on
// disk by the gate as ever, the old text the editor's buffer, the new text
// written by the editor.
func ChangeFileIn(ctx context.Context, ws *wspath.Tree, buf Buffers, p, content string, edit Edit, ap Approver, j *Journal, by string) (*Change, error) {
	fc, err := PlanIn(ctx, ws, buf, p, content, edit)
	if err != nil || fc == nil {
		return fc, err
	}
	if err := ap.ApproveChange(ctx, fc); err != nil {
		fc.Close()
		return fc, err
	}
	return fc, fc.CommitIn(ctx, ws, j, by)
}

// MaxEditBytes bounds the files Harvey changes in place: their old text is
// held in memory for the diff and the edit.
const MaxEditBytes = 4 << 20

// Plan resolves p once through the path gate (as a write), reads
// what the target holds and computes what it will hold: content, or what
// edit makes of the old content (an edit computed over the model's view).
// A write that would put Harvey's redaction markers over the secrets they
// hide is refused. A nil plan with a nil error: the content is unchanged.
// The caller commits or closes the plan.
func Plan(ws *wspath.Tree, p, content string, edit Edit) (*Change, error) {
	return PlanIn(context.Background(), ws, nil, p, content, edit)
}

// PlanIn is Plan with the old text from an editor's buffer (nil buf: the
// disk's).
func PlanIn(ctx context.Context, ws *wspath.Tree, buf Buffers, p, content string, edit Edit) (*Change, error) {
	rp, err := ws.Resolve(p, wspath.OpWrite)
	if err != nil {
		return nil, err
	}
	fc := &Change{asked: rp.Asked, Target: rp.Rel, rp: rp, buf: buf}
	fc.Old, fc.Existed, err = readOld(rp, p)
	if err == nil && fc.Existed && buf != nil {
		if fc.Old, err = buf.ReadText(ctx, absOf(ws, rp.Rel)); err != nil {
			err = wspath.Failed(p, "the editor did not give its text: "+err.Error(), err)
		} else if len(fc.Old) > MaxEditBytes {
			err = wspath.Failed(p, "file is over 4 MB, too large to change in place", nil)
		}
	}
	whole := edit == nil
	switch {
	case err != nil:
	case whole:
		fc.Content = content
	default:
		if fc.Content, fc.Note, err = edit(fc.Old, fc.Existed); err != nil {
			err = Failed{err}
		}
	}
	if err == nil && fc.Existed && wouldDestroySecrets(fc.Old, fc.Content) {
		err = wspath.Failed(fc.Target, errDestroySecrets, nil)
	}
	if err != nil {
		fc.Close()
		return fc, err
	}
	if fc.Existed && fc.Old == fc.Content && (!whole || secrets.Redact(fc.Old) == fc.Old) {
		// Unchanged. Not said of a whole new content over a file holding
		// secrets: "unchanged" would confirm a guess at the hidden bytes,
		// so that write is asked about like any other. (An edit's sameness
		// was decided over the view.)
		fc.Close()
		return nil, nil
	}
	fc.Action = "write " + termtext.QuotePath(fc.Target)
	if fc.asked != fc.Target {
		fc.Action += " (through " + termtext.QuotePath(fc.asked) + ")"
	}
	return fc, nil
}

// readOld returns what a resolved write target holds ("" when it does not
// exist). Files over MaxEditBytes and binary files are refused without
// being read past the limit.
func readOld(rp *wspath.Resolved, p string) (old string, exists bool, err error) {
	if rp.Info == nil {
		return "", false, nil
	}
	tooLarge := wspath.Failed(p, "file is over 4 MB, too large to change in place", nil)
	if rp.Info.Size() > MaxEditBytes {
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
	if _, err := io.Copy(&sb, io.LimitReader(f, MaxEditBytes+1)); err != nil {
		return "", true, wspath.OSFailure(p, err)
	}
	old = sb.String()
	if len(old) > MaxEditBytes {
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

// Commit writes the planned content if the target is still what was
// planned: its directory still where it was in the workspace, the file the
// same one holding the same bytes (or still absent). The version it
// replaces goes to j for /undo. The plan is closed.
func (fc *Change) Commit(ws *wspath.Tree, j *Journal, by string) error {
	return fc.CommitIn(context.Background(), ws, j, by)
}

// CommitIn is Commit; a change planned through an editor's buffers is
// written by the editor (its directories made here first), the buffer
// being what the plan read: the file on disk may differ while unsaved.
func (fc *Change) CommitIn(ctx context.Context, ws *wspath.Tree, j *Journal, by string) error {
	defer fc.Close()
	if fc.rp == nil {
		return wspath.Failed(fc.Target, errChangedMeanwhile, nil)
	}
	if !fc.rp.StillInPlace(ws) || (fc.buf == nil && !fc.stillHolds()) {
		return wspath.Failed(fc.Target, errChangedMeanwhile, nil)
	}
	var made []string
	var err error
	if fc.buf != nil {
		made, err = writeThrough(ctx, ws, fc)
	} else {
		made, err = WriteResolved(ws, fc.rp, fc.Content)
	}
	if err != nil {
		return err
	}
	j.Push(JournalEntry{Path: fc.Target, Old: fc.Old, Existed: fc.Existed, Wrote: fc.Content, Dirs: made, By: by, At: time.Now()})
	return nil
}

// writeThrough makes the directories the target lacks, then has the
// editor write it.
func writeThrough(ctx context.Context, ws *wspath.Tree, fc *Change) ([]string, error) {
	dir, made, err := makeParents(ws, fc.rp)
	if err != nil {
		return made, err
	}
	if dir != fc.rp.Parent {
		dir.Close()
	}
	if err := fc.buf.WriteText(ctx, absOf(ws, fc.rp.Rel), fc.Content); err != nil {
		return made, wspath.Failed(fc.Target, "the editor did not write it: "+err.Error(), err)
	}
	return made, nil
}

// stillHolds reports whether the target is what the plan saw: the same
// file with the same bytes, or still nothing (and no directory of the
// plan's missing ones made meanwhile).
func (fc *Change) stillHolds() bool {
	rp := fc.rp
	if len(rp.Missing) > 0 {
		_, err := rp.Parent.Lstat(rp.Missing[0])
		return errors.Is(err, fs.ErrNotExist)
	}
	if !fc.Existed {
		_, err := rp.Parent.Lstat(rp.Name)
		return errors.Is(err, fs.ErrNotExist)
	}
	return rp.Holds(fc.Old)
}

// WriteResolved writes content to a resolved path atomically, first making
// the directories the path still lacks. It returns the directories it made,
// outermost first.
func WriteResolved(ws *wspath.Tree, rp *wspath.Resolved, content string) (made []string, err error) {
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
func makeParents(ws *wspath.Tree, rp *wspath.Resolved) (*os.Root, []string, error) {
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
func makeAndEnter(ws *wspath.Tree, cur *os.Root, c string) (*os.Root, error) {
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

// ErrUndoStale: the file is no longer what Harvey wrote.
var ErrUndoStale = errors.New("the file changed since it was written")

// Undo takes back a change from the journal, on one resolution of its
// path, only while the file still holds exactly what Harvey wrote: a file
// Harvey created is removed (that needs the delete permission), with the
// directories the write made while they are empty (innermost first; those
// removed are returned); an older version is written back.
func Undo(ws *wspath.Tree, e JournalEntry) (removed []string, err error) {
	op := wspath.OpWrite
	if !e.Existed {
		op = wspath.OpDelete
	}
	rp, err := ws.Resolve(e.Path, op)
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	if !rp.Holds(e.Wrote) {
		return nil, ErrUndoStale
	}
	if e.Existed {
		_, err := WriteResolved(ws, rp, e.Old)
		return nil, err
	}
	if err := rp.Parent.Remove(rp.Name); err != nil {
		return nil, wspath.OSFailure(e.Path, err)
	}
	for i := len(e.Dirs) - 1; i >= 0 && removeEmptyDir(ws, e.Dirs[i]); i-- {
		removed = append(removed, e.Dirs[i])
	}
	return removed, nil
}

// removeEmptyDir removes p if it is an empty directory (through
// the same gate as a delete); anything else is left alone. /undo uses it
// for the directories a write it takes back had created.
func removeEmptyDir(ws *wspath.Tree, p string) bool {
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

type JournalEntry struct {
	Path    string // workspace-relative
	Old     string // content before the change ("" when it did not exist)
	Existed bool
	Wrote   string   // what Harvey wrote
	Dirs    []string // directories the write created, outermost first
	By      string   // tool or command
	At      time.Time
}

type Journal struct {
	mu      sync.Mutex
	entries []JournalEntry
	bytes   int
}

// Push records a change; the oldest entries go when the stack is full.
func (u *Journal) Push(e JournalEntry) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries = append(u.entries, e)
	u.bytes += len(e.Old) + len(e.Wrote)
	for len(u.entries) > undoMaxEntries || (u.bytes > undoMaxBytes && len(u.entries) > 1) {
		u.bytes -= len(u.entries[0].Old) + len(u.entries[0].Wrote)
		u.entries = u.entries[1:]
	}
}

func (u *Journal) Pop() (JournalEntry, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.entries) == 0 {
		return JournalEntry{}, false
	}
	e := u.entries[len(u.entries)-1]
	u.entries = u.entries[:len(u.entries)-1]
	u.bytes -= len(e.Old) + len(e.Wrote)
	return e, true
}

func (u *Journal) List() []JournalEntry {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]JournalEntry(nil), u.entries...)
}
