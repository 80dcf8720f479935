package harvey

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/harvey-agent/harvey/internal/fsinfo"
)

// The file operations shared by the slash commands (/read, /write, /files,
// /search) and the tools (read_file, write_file, list_files, search_files):
// one implementation, one set of checks.

// ReadResult is the outcome of reading a workspace file.
type ReadResult struct {
	Path      string
	Text      string // capped, redacted, valid UTF-8
	Lines     int    // lines returned
	Size      int64
	Truncated bool
	Binary    bool
	NextLine  int // when Truncated, the line to continue from (1-based), or 0
}

// readWorkspaceFile reads p (relative to the workspace) after every path
// check. offset is the first line (1-based, 0 = start) and limit the number of
// lines (0 = as many as fit in maxBytes). Memory stays bounded by maxBytes
// whatever the file size.
func readWorkspaceFile(ws *Workspace, p string, offset, limit, maxBytes int) (*ReadResult, error) {
	if maxBytes <= 0 || maxBytes > DefaultMaxOutputBytes {
		maxBytes = DefaultMaxOutputBytes
	}
	rp, err := resolveWorkspacePath(ws, p, opRead)
	if err != nil {
		return nil, err
	}
	defer rp.close()
	if rp.info.IsDir() {
		return nil, pathFailed(p, "is a directory (use /files or list_files)", nil)
	}
	f, st, err := rp.openVerified()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res := &ReadResult{Path: rp.Rel, Size: st.Size()}
	// A buffer the size of a small file (Peek still sees all of it), at
	// most 64 KB: a tool round on a 1 KB file should not allocate 64 KB.
	bufSize := 64 << 10
	if st.Size() < int64(bufSize) {
		bufSize = max(int(st.Size())+1, 512)
	}
	br := bufio.NewReaderSize(f, bufSize)
	head, _ := br.Peek(8000)
	if isBinary(head) {
		res.Binary = true
		res.Text = fmt.Sprintf("binary file, %d bytes", st.Size())
		return res, nil
	}
	// Redaction sees the file from its start: a window that begins inside
	// a private key block must not show the block's body.
	var red lineRedactor
	if err := skipLines(br, offset, &red); err != nil {
		return nil, pathFailed(p, err.Error(), err)
	}
	text, lines, truncated, err := readWindow(br, limit, maxBytes)
	if err != nil {
		return nil, osFailure(p, err)
	}
	if !truncated && limit > 0 && lines == limit {
		if _, err := br.Peek(1); err == nil {
			res.NextLine = max(offset, 1) + lines
		}
	}
	res.Truncated = truncated
	if truncated {
		res.NextLine = max(offset, 1) + lines
	}
	res.Lines = lines
	res.Text = capOutput([]byte(red.text(text)), maxBytes, truncated)
	if res.NextLine > 0 {
		res.Text += fmt.Sprintf("\n[more lines follow; continue with offset=%d]", res.NextLine)
	}
	return res, nil
}

// skipLines reads past the lines before offset (1-based), letting the
// redactor see them.
func skipLines(br *bufio.Reader, offset int, red *lineRedactor) error {
	for skipped := 1; skipped < offset; skipped++ {
		line, err := br.ReadSlice('\n')
		red.observe(string(line))
		if errors.Is(err, bufio.ErrBufferFull) {
			skipped-- // a long line: keep consuming it
			continue
		}
		if err != nil {
			return fmt.Errorf("offset %d is past the end of the file", offset)
		}
	}
	return nil
}

// readWindow reads up to limit lines (0: all) and at most maxBytes; a
// window cut by maxBytes is truncated.
func readWindow(br *bufio.Reader, limit, maxBytes int) (text string, lines int, truncated bool, err error) {
	var buf bytes.Buffer
	for limit <= 0 || lines < limit {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if buf.Len()+len(line) > maxBytes {
				buf.Write(line[:maxBytes-buf.Len()])
				return buf.String(), lines, true, nil
			}
			buf.Write(line)
			if line[len(line)-1] == '\n' {
				lines++
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if err != io.EOF {
				return "", 0, false, err
			}
			if len(line) > 0 && line[len(line)-1] != '\n' {
				lines++
			}
			break
		}
	}
	return buf.String(), lines, false, nil
}

// writeWorkspaceFile writes content to p atomically (temp file + rename in the
// same directory), creating missing parent directories inside the workspace.
// It returns the previous content (for diffs) when the file existed.
func writeWorkspaceFile(ws *Workspace, p string, content string) (existed bool, made []string, err error) {
	rp, err := resolveWorkspacePath(ws, p, opWrite)
	if err != nil {
		return false, nil, err
	}
	defer rp.close()
	if err := ws.openParentForWrite(rp); err != nil {
		return false, rp.made, err
	}
	perm := fs.FileMode(0o644)
	if rp.info != nil {
		perm = rp.info.Mode().Perm()
		existed = true
	}
	if err := atomicWrite(rp.dir, rp.name, content, perm); err != nil {
		return existed, rp.made, osFailure(p, err)
	}
	return existed, rp.made, nil
}

// removeWorkspaceFile deletes a regular file through the same checks as a
// write (used by /undo to take back a file Harvey created).
func removeWorkspaceFile(ws *Workspace, p string) error {
	rp, err := resolveWorkspacePath(ws, p, opDelete)
	if err != nil {
		return err
	}
	defer rp.close()
	if rp.info == nil {
		return pathFailed(p, "no such file", fs.ErrNotExist)
	}
	if !rp.info.Mode().IsRegular() {
		return pathFailed(p, "not a regular file", nil)
	}
	if err := rp.dir.Remove(rp.name); err != nil {
		return osFailure(p, err)
	}
	return nil
}

// removeEmptyWorkspaceDir removes p if it is an empty directory (through
// the same gate as a delete); anything else is left alone. /undo uses it
// for the directories a write it takes back had created.
func removeEmptyWorkspaceDir(ws *Workspace, p string) bool {
	rp, err := resolveWorkspacePath(ws, p, opRemoveDir)
	if err != nil {
		return false
	}
	defer rp.close()
	if rp.info == nil || !rp.info.IsDir() || rp.dir == nil {
		return false
	}
	return rp.dir.Remove(rp.name) == nil // rmdir: fails unless empty
}

// maxEditBytes bounds the files Harvey changes in place: their old text is
// held in memory for the diff and the edit.
const maxEditBytes = 4 << 20

// readForDiff returns the current text of p for a diff preview or an edit
// (empty when the file does not exist) and the resolved workspace path that
// a write to p would change (a link's target). Files over maxEditBytes and
// binary files are refused without being read past the limit.
func readForDiff(ws *Workspace, p string) (old string, exists bool, rel string, err error) {
	rp, err := resolveWorkspacePath(ws, p, opWrite)
	if err != nil {
		return "", false, "", err
	}
	defer rp.close()
	if rp.info == nil {
		return "", false, rp.Rel, nil
	}
	tooLarge := pathFailed(p, "file is over 4 MB, too large to change in place", nil)
	if rp.info.Size() > maxEditBytes {
		return "", true, rp.Rel, tooLarge
	}
	f, st, err := rp.openVerified()
	if err != nil {
		return "", true, rp.Rel, err
	}
	defer f.Close()
	// Read straight into the string the edit works on: one copy of the
	// file, sized from fstat (a file that grew meanwhile still fits).
	var sb strings.Builder
	sb.Grow(int(st.Size()) + 1)
	if _, err := io.Copy(&sb, io.LimitReader(f, maxEditBytes+1)); err != nil {
		return "", true, rp.Rel, osFailure(p, err)
	}
	old = sb.String()
	if len(old) > maxEditBytes {
		return "", true, rp.Rel, tooLarge
	}
	if isBinary([]byte(old[:min(len(old), 8000)])) {
		return "", true, rp.Rel, pathFailed(p, "binary file, not changed", nil)
	}
	return old, true, rp.Rel, nil
}

// fileHolds reports whether p (through the write gate) exists and holds
// exactly want, comparing as it reads: checking that a file is still what
// an approval showed costs no copy of it.
func fileHolds(ws *Workspace, p, want string) (exists, same bool, err error) {
	rp, err := resolveWorkspacePath(ws, p, opWrite)
	if err != nil {
		return false, false, err
	}
	defer rp.close()
	if rp.info == nil {
		return false, false, nil
	}
	if rp.info.Size() != int64(len(want)) {
		return true, false, nil
	}
	f, _, err := rp.openVerified()
	if err != nil {
		return true, false, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > len(want) || string(buf[:n]) != want[:n] {
			return true, false, nil
		}
		want = want[n:]
		if err == io.EOF {
			return true, want == "", nil
		}
		if err != nil {
			return true, false, osFailure(p, err)
		}
	}
}

// dirEntry is one listed entry, as data (the listing's text is made from
// these; Tab completion uses them directly).
type dirEntry struct {
	Name string
	Mode fs.FileMode // type bits only
	Size int64
}

// readWorkspaceDir reads one directory through the path gate: agents/ and
// .git/ are left out, and so is what permissions: hides; symlinks are
// entries, never followed.
func readWorkspaceDir(ws *Workspace, p string) ([]dirEntry, error) {
	var out []dirEntry
	_, err := eachWorkspaceDirEntry(ws, p, func(e dirEntry) bool { out = append(out, e); return true })
	return out, err
}

// eachWorkspaceDirEntry calls fn for each entry (in name order) until fn
// returns false; the entries after that are only counted (no stat), and
// their number is returned.
func eachWorkspaceDirEntry(ws *Workspace, p string, fn func(dirEntry) bool) (int, error) {
	if p == "" {
		p = "."
	}
	rp, err := resolveWorkspacePath(ws, p, opRead)
	if err != nil {
		return 0, err
	}
	defer rp.close()
	d, err := rp.openDirVerified(ws)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	entries, err := fs.ReadDir(d.FS(), ".")
	if err != nil {
		return 0, osFailure(p, err)
	}
	left, more := 0, true
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() && (normName(name) == ".git" || (rp.Rel == "." && normName(name) == AgentsDir)) {
			continue
		}
		if !ws.readable(path.Join(rp.Rel, name)) {
			continue // what permissions: hide is not listed either
		}
		if !more {
			left++
			continue
		}
		de := dirEntry{Name: name, Mode: e.Type()}
		if e.IsDir() || e.Type().IsRegular() {
			info, err := e.Info()
			if err == nil && info.IsDir() && ws.isAgentsDir(info) {
				continue
			}
			if err == nil && e.Type().IsRegular() {
				de.Size = info.Size()
			}
		}
		if more = fn(de); !more {
			left++ // the entry that did not fit
		}
	}
	return left, nil
}

// listWorkspaceDir lists one directory as text: directories end in "/",
// files show their size, symlinks are shown but not followed. Once the
// listing reaches maxBytes the rest is only counted, and the count said.
func listWorkspaceDir(ws *Workspace, p string, maxBytes int) (string, int, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxOutputBytes
	}
	var b strings.Builder
	n := 0
	left, err := eachWorkspaceDirEntry(ws, p, func(e dirEntry) bool {
		var line string
		switch t := e.Mode; {
		case t&fs.ModeSymlink != 0:
			line = e.Name + " -> (symlink, not followed)\n"
		case t.IsDir():
			line = e.Name + "/\n"
		case t.IsRegular():
			line = e.Name + "  " + humanSize(e.Size) + "\n"
		default:
			line = e.Name + "  (" + fsinfo.Kind(t) + ")\n"
		}
		if b.Len()+len(line) > maxBytes-100 {
			return false
		}
		b.WriteString(line)
		n++
		return true
	})
	if err != nil {
		return "", 0, err
	}
	if n == 0 && left == 0 {
		return "(empty directory)", 0, nil
	}
	if left > 0 {
		fmt.Fprintf(&b, "[%d more entries not shown; list a subdirectory or search instead]\n", left)
	}
	return b.String(), n, nil
}

func humanSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	case n < 1<<30:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
