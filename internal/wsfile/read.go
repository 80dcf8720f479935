// Package wsfile reads and changes the workspace's files for the tools and
// the slash commands (read_file and /read, list_files and /files, Tab
// completion; write_file, edit_file, /write, /apply and /undo): a file's
// window, a directory's listing, each through the path gate
// (internal/wspath), redacted and capped; and every change of a file, as
// one transaction (write.go).
//
// The contract: every path is resolved by the tree's one gate before
// anything is opened (permissions, agents/ and the denylist included), and
// what is opened is the file the gate checked (OpenVerified). A read keeps
// its memory within maxBytes whatever the file's size, never cuts a rune,
// redacts each line (secrets' LineRedactor, whose state spans the lines
// skipped), and says a binary file is one. A listing leaves out what the
// model may not read and says how many entries it did not show. A change
// is planned on one resolution of its path (ChangeFile, Plan), approved by
// the caller's Approver between plan and commit, and committed only if the
// target is still the file planned and still holds what the approval saw,
// atomically, the replaced version kept in a bounded Journal for /undo;
// who may change what is the path policy's and the approval's to decide,
// never this package's.
package wsfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// Buffers are an editor's files (ACP's fs/read_text_file and
// fs/write_text_file): what a read or a change takes as the file's text,
// and where a change writes, once the path gate has resolved the target on
// disk (abs is that target's absolute path).
type Buffers interface {
	ReadText(ctx context.Context, abs string) (string, error)
	WriteText(ctx context.Context, abs, content string) error
}

// Result is the outcome of reading a workspace file.
type Result struct {
	Path      string
	Text      string // capped, redacted, valid UTF-8
	Lines     int    // lines returned
	Size      int64
	Truncated bool
	Binary    bool
	NextLine  int // when Truncated, the line to continue from (1-based), or 0
}

// Read reads p (relative to the workspace) after every path
// check. offset is the first line (1-based, 0 = start) and limit the number of
// lines (0 = as many as fit in maxBytes). Memory stays bounded by maxBytes
// whatever the file size.
func Read(ws *wspath.Tree, p string, offset, limit, maxBytes int) (*Result, error) {
	return ReadIn(context.Background(), ws, nil, p, offset, limit, maxBytes)
}

// ReadIn is Read, the text taken from buf where an editor holds the file
// (its unsaved buffer) once the gate resolved and opened the file on disk;
// nil buf: the disk's.
func ReadIn(ctx context.Context, ws *wspath.Tree, buf Buffers, p string, offset, limit, maxBytes int) (*Result, error) {
	if maxBytes <= 0 || maxBytes > config.DefaultMaxOutputBytes {
		maxBytes = config.DefaultMaxOutputBytes
	}
	rp, err := ws.Resolve(p, wspath.OpRead)
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	if rp.Info.IsDir() {
		return nil, wspath.Failed(p, "is a directory (use /files or list_files)", nil)
	}
	f, st, err := rp.OpenVerified()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var src io.Reader = f
	size := st.Size()
	if buf != nil {
		text, err := buf.ReadText(ctx, absOf(ws, rp.Rel))
		if err != nil {
			return nil, wspath.Failed(p, "the editor did not give its text: "+err.Error(), err)
		}
		src, size = strings.NewReader(text), int64(len(text))
	}
	res := &Result{Path: rp.Rel, Size: size}
	// A buffer the size of a small file (Peek still sees all of it), at
	// most 64 KB: a tool round on a 1 KB file should not allocate 64 KB.
	bufSize := 64 << 10
	if size < int64(bufSize) {
		bufSize = max(int(size)+1, 512)
	}
	br := bufio.NewReaderSize(src, bufSize)
	head, _ := br.Peek(8000)
	if outputcap.IsBinary(head) {
		res.Binary = true
		res.Text = fmt.Sprintf("binary file, %d bytes", size)
		return res, nil
	}
	// Redaction sees the file from its start: a window that begins inside
	// a private key block must not show the block's body.
	var red secrets.LineRedactor
	if err := skipLines(br, offset, &red); err != nil {
		return nil, wspath.Failed(p, err.Error(), err)
	}
	text, lines, truncated, err := readWindow(br, limit, maxBytes)
	if err != nil {
		return nil, wspath.OSFailure(p, err)
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
	res.Text = outputcap.Cap([]byte(red.Text(text)), maxBytes, truncated)
	if res.NextLine > 0 {
		res.Text += fmt.Sprintf("\n[more lines follow; continue with offset=%d]", res.NextLine)
	}
	return res, nil
}

// absOf is a resolved workspace path as an editor names it.
func absOf(ws *wspath.Tree, rel string) string {
	return filepath.Join(ws.Root, filepath.FromSlash(rel))
}

// skipLines reads past the lines before offset (1-based), letting the
// redactor see them.
func skipLines(br *bufio.Reader, offset int, red *secrets.LineRedactor) error {
	for skipped := 1; skipped < offset; skipped++ {
		line, err := br.ReadSlice('\n')
		red.Observe(string(line))
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

// Entry is one listed entry, as data (the listing's text is made from
// these; Tab completion uses them directly).
type Entry struct {
	Name string
	Mode fs.FileMode // type bits only
	Size int64
}

// ReadDir reads one directory through the path gate: agents/ and
// .git/ are left out, and so is what permissions: hides; symlinks are
// entries, never followed.
func ReadDir(ws *wspath.Tree, p string) ([]Entry, error) {
	var out []Entry
	_, err := EachEntry(ws, p, func(e Entry) bool { out = append(out, e); return true })
	return out, err
}

// EachEntry calls fn for each entry (in name order) until fn
// returns false; the entries after that are only counted (no stat), and
// their number is returned.
func EachEntry(ws *wspath.Tree, p string, fn func(Entry) bool) (int, error) {
	if p == "" {
		p = "."
	}
	rp, err := ws.Resolve(p, wspath.OpRead)
	if err != nil {
		return 0, err
	}
	defer rp.Close()
	d, err := rp.OpenDirVerified(ws)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	entries, err := fs.ReadDir(d.FS(), ".")
	if err != nil {
		return 0, wspath.OSFailure(p, err)
	}
	left, more := 0, true
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() && (secrets.NormName(name) == ".git" || (rp.Rel == "." && secrets.NormName(name) == wspath.AgentsDir)) {
			continue
		}
		if !ws.Readable(path.Join(rp.Rel, name)) {
			continue // what permissions: hide is not listed either
		}
		if !more {
			left++
			continue
		}
		de := Entry{Name: name, Mode: e.Type()}
		if e.IsDir() || e.Type().IsRegular() {
			info, err := e.Info()
			if err == nil && info.IsDir() && ws.IsAgentsDir(info) {
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

// List lists one directory as text: directories end in "/",
// files show their size, symlinks are shown but not followed. Once the
// listing reaches maxBytes the rest is only counted, and the count said.
func List(ws *wspath.Tree, p string, maxBytes int) (string, int, error) {
	if maxBytes <= 0 {
		maxBytes = config.DefaultMaxOutputBytes
	}
	var b strings.Builder
	n := 0
	left, err := EachEntry(ws, p, func(e Entry) bool {
		var line string
		switch t := e.Mode; {
		case t&fs.ModeSymlink != 0:
			line = e.Name + " -> (symlink, not followed)\n"
		case t.IsDir():
			line = e.Name + "/\n"
		case t.IsRegular():
			line = e.Name + "  " + termtext.Size(e.Size) + "\n"
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
