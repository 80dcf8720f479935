// Package outputstore keeps a session's command and job outputs whole, so a
// result cut to the model's cap never forces the model to run a slow
// command again to see its middle (read_output pages it, or finds the lines
// that match a pattern, with their line numbers).
//
// Contract:
//   - What is kept is what the model could have seen: each line is
//     redacted as it is written (secrets.LineRedactor, a key block tracked
//     across lines), never the raw bytes.
//   - Files are 0600 in a 0700 directory of the session's own
//     (datadir.TempPrefix("out"), in the user's runtime directory when
//     there is one), removed by Close and, however the session ended, by
//     its guardian (datadir.RemoveTemps).
//   - The store is bounded: one output keeps at most PerOutput bytes, the
//     session at most Budget; past that the oldest outputs are dropped, and
//     reading one says so.
//   - A nil *Store and a nil *Entry do nothing: a session without a store
//     runs its commands as before.
package outputstore

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// Budget is what a session keeps in all; PerOutput what one output keeps
// (the runner stops a command whose output floods far past its cap).
const (
	Budget    = 64 << 20
	PerOutput = 24 << 20
	// lineShown is the most of one line a read shows.
	lineShown = 2000
	// pieceLen splits a line without an end (a progress bar's) in pieces.
	pieceLen = 64 << 10
)

// Store is a session's kept outputs.
type Store struct {
	mu      sync.Mutex
	dir     string // made at the first output
	next    int
	entries []*Entry // oldest first
	last    *Entry   // the last command's (not a job's)
	dropped map[string]bool
	total   int64
	// budget and perOutput are Budget and PerOutput (smaller in tests).
	budget, perOutput int64
}

// New is an empty store; nothing is made on disk until an output is kept.
func New() *Store { return &Store{dropped: map[string]bool{}, budget: Budget, perOutput: PerOutput} }

// Entry is one output being kept; it is an io.Writer of the raw bytes.
type Entry struct {
	store   *Store
	ID      string
	What    string // the command line
	path    string
	mu      sync.Mutex
	f       *os.File
	red     secrets.LineRedactor
	pending []byte
	size    int64
	lines   int
	cut     bool // past PerOutput
	done    bool
}

// Ref is what a kept output came to, for the note under a cut result.
type Ref struct {
	ID    string
	Lines int
	Bytes int64
	Cut   bool // only its start is kept (past PerOutput, or a write failed)
}

// Note is the line under a cut result that says how to read the rest (and
// never claims the whole of an output that was kept only in part).
func (r Ref) Note() string {
	what := "the whole output"
	if r.Cut {
		what = "the output's start"
	}
	return fmt.Sprintf("[%s (%s, %s) is kept as output %s: read_output {\"id\": %q, \"pattern\": \"...\"} finds lines, offset/limit pages it]",
		what, termtext.Plural(r.Lines, "line"), termtext.Size(r.Bytes), r.ID, r.ID)
}

// runtimeDir is where the store's directory goes: the user's runtime
// directory (private, in memory) when there is one.
func runtimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return os.TempDir()
}

// Command starts keeping a command's output: it is the one read_output
// reads with no id.
func (s *Store) Command(what string) *Entry {
	e := s.open("", what)
	if e != nil {
		s.mu.Lock()
		s.last = e
		s.mu.Unlock()
	}
	return e
}

// Job starts keeping background job id's output, as output "job-ID".
func (s *Store) Job(id int, what string) *Entry {
	return s.open("job-"+strconv.Itoa(id), what)
}

func (s *Store) open(id, what string) *Entry {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		d, err := os.MkdirTemp(runtimeDir(), datadir.TempPrefix("out"))
		if err != nil {
			return nil
		}
		s.dir = d
	}
	s.next++
	id = cmp.Or(id, strconv.Itoa(s.next))
	path := filepath.Join(s.dir, strconv.Itoa(s.next))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil
	}
	e := &Entry{store: s, ID: id, What: what, path: path, f: f}
	s.entries = append(s.entries, e)
	return e
}

// Rename names a kept output id from now on: a command moved to the
// background is its job's output ("job-N").
func (e *Entry) Rename(id string) {
	if e != nil {
		e.store.mu.Lock()
		e.ID = id
		e.store.mu.Unlock()
	}
}

// Write keeps p's complete lines, redacted; it never fails the command.
func (e *Entry) Write(p []byte) (int, error) {
	if e == nil {
		return len(p), nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done || e.cut {
		return len(p), nil
	}
	e.pending = append(e.pending, p...)
	for {
		i := bytes.IndexByte(e.pending, '\n')
		if i < 0 && len(e.pending) < pieceLen {
			break
		}
		end := i + 1
		if i < 0 {
			end = pieceLen
		}
		e.keep(string(e.pending[:end]))
		e.pending = e.pending[end:]
	}
	if len(e.pending) == 0 {
		e.pending = nil
	}
	return len(p), nil
}

// keep writes one line, redacted, within the bounds.
func (e *Entry) keep(line string) {
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	line = e.red.Text(line)
	if e.size+int64(len(line)) > e.store.perOutput {
		e.cut = true
		line = fmt.Sprintf("[... output past %s is not kept ...]\n", termtext.Size(e.store.perOutput))
	}
	if _, err := e.f.WriteString(line); err != nil {
		e.cut = true
		return
	}
	e.size += int64(len(line))
	e.lines++
	e.store.grew(int64(len(line)))
}

// Close keeps the last, unfinished line and says what was kept.
func (e *Entry) Close() *Ref {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.done {
		if len(e.pending) > 0 && !e.cut {
			e.keep(string(e.pending))
		}
		e.pending, e.done = nil, true
		e.f.Close()
	}
	return &Ref{ID: e.ID, Lines: e.lines, Bytes: e.size, Cut: e.cut}
}

// grew counts n more bytes kept and drops the oldest finished outputs
// while the session keeps more than Budget.
func (s *Store) grew(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += n
	for s.total > s.budget {
		// The oldest that is finished: a job still running keeps its own.
		i := slices.IndexFunc(s.entries, (*Entry).finished)
		if i < 0 {
			return
		}
		old := s.entries[i]
		s.entries = slices.Delete(s.entries, i, i+1)
		s.dropped[old.ID] = true
		s.total -= old.size
		os.Remove(old.path)
	}
}

func (e *Entry) finished() bool {
	if !e.mu.TryLock() {
		return false // being written: not the oldest finished one
	}
	defer e.mu.Unlock()
	return e.done
}

// Close removes every kept output (the session ends).
func (s *Store) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	entries, dir := s.entries, s.dir
	s.entries, s.last, s.dir = nil, nil, ""
	s.mu.Unlock()
	for _, e := range entries {
		e.Close()
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Query is a read_output call: which output ("" the last command's),
// the first line (from 1), how many lines, and a pattern the lines
// shown must match (a Go regular expression, else the text as written).
type Query struct {
	ID      Name   `json:"id"`
	Offset  int    `json:"offset"`
	Limit   int    `json:"limit"`
	Pattern string `json:"pattern"`
}

// Name is an output's id as a model writes it: 3, "3", "job-2", "job 2".
type Name string

func (n *Name) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*n = ""
	case string:
		*n = Name(x)
	case float64:
		*n = Name(strconv.FormatFloat(x, 'f', -1, 64))
	default:
		return errors.New("id is an output's id: a number, or job-N for a background job")
	}
	return nil
}

// ErrNone is reading an output that is not kept.
var ErrNone = errors.New("no such output")

// Read is q's lines of a kept output, each with its line number, within
// max bytes, and a line that says how to read on.
func (s *Store) Read(q Query, max int) (string, error) {
	if q.Offset < 0 || q.Limit < 0 {
		return "", errors.New("offset and limit must not be negative")
	}
	e, err := s.find(string(q.ID))
	if err != nil {
		return "", err
	}
	match, err := matcher(q.Pattern)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	lines, size, done := e.lines, e.size, e.done
	e.mu.Unlock()
	f, err := os.Open(e.path)
	if err != nil {
		return "", fmt.Errorf("output %s is no longer kept", e.ID)
	}
	defer f.Close()
	state := map[bool]string{true: "", false: ", still running"}[done]
	head := fmt.Sprintf("output %s: %s (%s, %s%s)\n", e.ID, termtext.Flat(e.What), termtext.Plural(lines, "line"), termtext.Size(size), state)
	return head + page(bufio.NewReaderSize(f, 64<<10), q, match, max-len(head)), nil
}

// page reads the lines q asks for from r.
func page(r *bufio.Reader, q Query, match func(string) bool, room int) string {
	var b strings.Builder
	first := max(q.Offset, 1)
	shown, matched, n, last := 0, 0, 0, 0
	more := false
	for {
		line, err := r.ReadString('\n')
		if line == "" && err != nil {
			break
		}
		n++
		line = strings.TrimRight(line, "\n")
		if n < first || !match(line) {
			continue
		}
		matched++
		if q.Limit > 0 && shown >= q.Limit {
			more = true
			break
		}
		if len(line) > lineShown {
			line = strings.ToValidUTF8(line[:lineShown], "") + fmt.Sprintf("… [%d bytes more]", len(line)-lineShown)
		}
		l := fmt.Sprintf("%d: %s\n", n, line)
		if b.Len()+len(l) > room-120 {
			more = true
			break
		}
		b.WriteString(l)
		shown++
		last = n
	}
	switch {
	case shown == 0 && q.Pattern != "":
		return fmt.Sprintf("no line from %d on matches %q\n", first, q.Pattern)
	case shown == 0:
		return fmt.Sprintf("no line %d: the output has %s\n", first, termtext.Plural(n, "line"))
	case more:
		fmt.Fprintf(&b, "[%s shown; offset %d reads on]\n", termtext.Plural(shown, "line"), last+1)
	}
	return b.String()
}

// matcher is the pattern as a Go regular expression, else its text as
// written (a model's "foo(" is meant literally); "" matches every line.
func matcher(p string) (func(string) bool, error) {
	if p == "" {
		return func(string) bool { return true }, nil
	}
	if len(p) > 1000 {
		return nil, errors.New("pattern is too long (over 1000 bytes)")
	}
	re, err := regexp.Compile(p)
	if err != nil {
		re = regexp.MustCompile(regexp.QuoteMeta(p))
	}
	return re.MatchString, nil
}

// find is the output id names ("" the last command's).
func (s *Store) find(id string) (*Entry, error) {
	if s == nil {
		return nil, ErrNone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id = strings.TrimSpace(id)
	if id == "" {
		if s.last == nil || s.dropped[s.last.ID] {
			return nil, fmt.Errorf("%w: no command has run in this session yet", ErrNone)
		}
		return s.last, nil
	}
	if rest, ok := strings.CutPrefix(strings.ToLower(id), "job"); ok {
		if n, err := strconv.Atoi(strings.TrimLeft(rest, " -_#")); err == nil {
			id = "job-" + strconv.Itoa(n)
		}
	}
	for _, e := range s.entries {
		if e.ID == id {
			return e, nil
		}
	}
	if s.dropped[id] {
		return nil, fmt.Errorf("%w: output %s was dropped (the session keeps at most %s of output; the oldest go first)", ErrNone, id, termtext.Size(s.budget))
	}
	var ids []string
	for _, e := range s.entries[max(0, len(s.entries)-8):] {
		ids = append(ids, e.ID)
	}
	return nil, fmt.Errorf("%w: %q (kept: %s)", ErrNone, id, cmp.Or(strings.Join(ids, ", "), "none"))
}
