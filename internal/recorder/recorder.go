// Package recorder is --record and /record: a session written to
// agents/sessions/ as Markdown, turn by turn.
//
// The contract: a recording lives under agents/sessions/ (Start refuses
// any other place) and is written only through the workspace tree's
// internal-file calls (internal/wspath), so no model-driven tool reaches
// it. Each turn is appended and synced when it ends, followed by an end
// mark (EndMark); Repair cuts a file back to its last complete turn, so a
// process killed mid-append loses at most the turn in flight. A tool's
// output is recorded within the output cap. Tidy keeps the newest
// automatic recordings (Kept, or keep_recordings from the user's own
// config) and never removes one the user named.
package recorder

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/wspath"
	"golang.org/x/sys/unix"
)

// SessionsDir holds session recordings.
const SessionsDir = wspath.AgentsDir + "/sessions"

// Recorder writes a session as Markdown, turn by turn: each turn is appended
// and synced when it ends, followed by an invisible end mark. A process
// killed in the middle of an append (a large write can be cut) leaves a
// partial turn after the last mark; Repair removes it, and Harvey
// runs it on the file before appending to it and on the newest recording at
// start, so a crash loses at most the turn in flight and never leaves half.
type Recorder struct {
	mu    sync.Mutex
	f     *os.File
	Path  string // relative to the workspace
	turn  int
	limit int // tool output cap
	cur   strings.Builder
	ws    *wspath.Tree
}

// defaultSessionPath is a timestamped recording path under agents/sessions/.
func defaultSessionPath(now time.Time) string {
	return path.Join(SessionsDir, "harvey-session-"+now.Format("20060102-150405")+".md")
}

// Start opens (creates or appends to) a recording at rel, which must
// be under agents/sessions/.
func Start(ws *wspath.Tree, rel, model string, limit int) (*Recorder, error) {
	if rel == "" {
		rel = defaultSessionPath(time.Now())
	}
	if !strings.Contains(rel, "/") {
		rel = path.Join(SessionsDir, rel)
	}
	clean := path.Clean(rel)
	if !strings.HasPrefix(clean, SessionsDir+"/") || strings.Contains(clean, "..") {
		return nil, fmt.Errorf("recordings live in %s/; give a file name", SessionsDir)
	}
	if !strings.HasSuffix(clean, ".md") {
		clean += ".md"
	}
	Repair(ws, clean)
	f, err := ws.OpenInternalAppend(clean)
	if err != nil {
		return nil, fmt.Errorf("record: %s: %s", clean, wspath.ErrText(err))
	}
	r := &Recorder{f: f, Path: clean, limit: limit, ws: ws}
	if model == "" {
		model = "(none)"
	}
	fmt.Fprintf(f, "# Harvey session\n\n- Started: %s\n- Model: %s\n- Workspace: %s\n\n%s", time.Now().Format(time.RFC3339), model, ws.Root, EndMark)
	f.Sync()
	return r, nil
}

// User starts a new turn with the user's input.
func (r *Recorder) User(text string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turn++
	r.cur.Reset()
	fmt.Fprintf(&r.cur, "### Turn %d\n\n**User:** %s\n\n", r.turn, text)
}

// ToolCall records a tool call and its (capped) result in the current turn.
func (r *Recorder) ToolCall(name, args, result string, failed bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	status := "ok"
	if failed {
		status = "error"
	}
	result = outputcap.Cap([]byte(result), r.limit, false)
	fmt.Fprintf(&r.cur, "**Tool** `%s` %s — %s\n\n```\n%s\n```\n\n", name, args, status, strings.ReplaceAll(result, "```", "ʼʼʼ"))
}

// Assistant records the reply and stats and writes the turn to disk.
func (r *Recorder) Assistant(text, stats string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.cur, "**Harvey:** %s\n\n", text)
	if stats != "" {
		fmt.Fprintf(&r.cur, "_%s_\n\n", stats)
	}
	r.flushLocked()
}

// Note records a command and its output as a turn of its own.
func (r *Recorder) Note(cmd, output string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turn++
	r.cur.Reset()
	fmt.Fprintf(&r.cur, "### Turn %d\n\n**Command:** `%s`\n\n```\n%s\n```\n\n", r.turn, cmd, outputcap.Cap([]byte(output), r.limit, false))
	r.flushLocked()
}

func (r *Recorder) flushLocked() {
	if r.f == nil {
		return
	}
	r.cur.WriteString(EndMark)
	r.ws.NoteOwn(r.Path) // Harvey's own write, not a command's (internal/guard)
	r.f.WriteString(r.cur.String())
	r.f.Sync()
	r.cur.Reset()
}

// EndMark ends every complete block of a recording (an HTML comment:
// Markdown viewers do not show it).
const EndMark = "<!-- harvey:end -->\n\n"

// Repair cuts a recording back to its last complete block.
func Repair(ws *wspath.Tree, rel string) {
	// The usual case, a complete file, is decided from its last bytes.
	if f, err := ws.OpenInternal(rel, unix.O_RDONLY, false); err == nil {
		complete := false
		if st, err := f.Stat(); err == nil {
			tail := make([]byte, len(EndMark))
			n, _ := f.ReadAt(tail, max(0, st.Size()-int64(len(tail))))
			complete = st.Size() == 0 || (n == len(tail) && string(tail) == EndMark)
		}
		f.Close()
		if complete {
			return
		}
	}
	data, err := ws.ReadInternal(rel)
	if err != nil || len(data) == 0 {
		return
	}
	keep := 0
	if i := strings.LastIndex(string(data), EndMark); i >= 0 {
		keep = i + len(EndMark)
	}
	if keep < len(data) {
		ws.WriteInternalAtomic(rel, data[:keep], 0o600)
	}
}

// Kept is how many automatic recordings (harvey-session-*.md)
// are kept unless the user's config says keep_recordings; older ones are
// removed at start. Named recordings are never removed.
const Kept = 50

// Tidy runs once per process, at start: it repairs the most
// recently written recording (the only one a crash can have cut) and
// removes automatic recordings past the newest keep (0: Kept).
func Tidy(ws *wspath.Tree, keep int) {
	if keep <= 0 {
		keep = Kept
	}
	entries, err := ws.ListInternal(SessionsDir)
	if err != nil {
		return
	}
	type rec struct {
		name string
		mod  time.Time
	}
	var all, auto []rec
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".md") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		r := rec{e.Name(), info.ModTime()}
		all = append(all, r)
		if strings.HasPrefix(e.Name(), "harvey-session-") {
			auto = append(auto, r)
		}
	}
	newest := func(rs []rec) { sort.Slice(rs, func(i, j int) bool { return rs[i].mod.After(rs[j].mod) }) }
	newest(all)
	if len(all) > 0 {
		Repair(ws, path.Join(SessionsDir, all[0].name))
	}
	newest(auto)
	for _, r := range auto[min(len(auto), keep):] {
		ws.RemoveInternal(path.Join(SessionsDir, r.name))
	}
}

// Turns returns the number of turns recorded.
func (r *Recorder) Turns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.turn
}

// Close flushes a pending turn and closes the file.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	if r.cur.Len() > 0 {
		r.flushLocked()
	}
	fmt.Fprintf(r.f, "_Session ended %s._\n\n%s", time.Now().Format(time.RFC3339), EndMark)
	err := r.f.Close()
	r.f = nil
	return err
}
