// Package jobs is a session's background commands: a dev server, a
// watcher, a database for the tests, started by the model (run_command
// with background: true) or by you (!cmd &), or moved there with Ctrl-Z,
// running while the conversation goes on.
//
// Contract: the session starts a job's program itself (in the sandbox,
// through the gate every command passes) and hands it to Add with the
// check that spans the job's whole life (internal/guard, taken before it
// started). A job's output is kept within a cap — its start and its
// latest part — and read by Read from where the last read ended, redacted.
// When a job ends (by itself, by Kill, or with the session: Close) its
// check runs: what it changed in .git or agents/ is undone and said, and
// the files it changed are listed; Done reports that to the session
// (a line for you, an event for --output). No job outlives Close, which
// every session runs when it ends (and the launcher ends a job with
// Harvey should Harvey die first). A command running in the foreground
// may become a job (Ctrl-Z: foreground.go): held while it runs, moved by
// Move, added by AddMoved with the check it started with.
package jobs

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// Process is a started job's program (internal/runner's Started).
type Process interface {
	Pid() int
	Done() <-chan struct{}
	ExitCode() int
	Stop()
}

// Checker is the check that spans a job's life (internal/guard's Guard):
// what it undid, and the line naming the files it changed; Recheck undoes
// what changed so far while the job runs.
type Checker interface {
	Check() (undone []string, changed string)
	Recheck() []string
}

// Manager holds a session's jobs.
type Manager struct {
	mu   sync.Mutex
	jobs []*Job
	next int
	// Done is called when a job has ended and its check has run (nil:
	// nothing said).
	Done func(j *Job)
	// Started is called when a job is added; Printed with what a job
	// printed (redacted, at most printedChunk bytes a call), about twice a
	// second while it prints and once more when it ends, before Done: the
	// --output stream's job events. nil: not called.
	Started func(j *Job)
	Printed func(j *Job, text string)
	// Watch, where set, is how often the running jobs' checks run while
	// they run (where commands have no private root, .git is writable to
	// them: Landlock only); Meddled hears, in a line, what a check undid,
	// which jobs were running (one of them did it) and the one it ended, if
	// any: a job alone in running that does it a second time.
	Watch    time.Duration
	Meddled  func(line string)
	watching bool
	// Limits cap what the running jobs use together (limits.go); Capped
	// hears, in a line, which job was stopped for it and why.
	Limits   Limits
	Capped   func(line string)
	UseEvery time.Duration // how often they are measured (default a second)
	metering bool
	fg       map[*Foreground]bool // the commands running in the foreground (foreground.go)
	trapped  bool                 // Ctrl-Z moves them (TrapCtrlZ)
}

// printedEvery and printedChunk pace Printed.
const (
	printedEvery = 500 * time.Millisecond
	printedChunk = 4096
)

// Job is one background command.
type Job struct {
	ID      int
	Command string
	Started time.Time
	proc    Process
	out     *Output
	check   Checker

	mu      sync.Mutex
	ended   time.Time
	killed  bool
	code    int
	notes   []string // what its check said when it ended
	checked chan struct{}
	meddled int         // how often the watch undid something while it alone ran
	capped  atomic.Bool // stopped for what the jobs used together (limits.go)
	layer   string      // its caches' layer, moved from the foreground (foreground.go)
	// yours: you started it (!cmd &); the model hears of it once
	// (toldStart), and of every job's end once (toldEnd), at the head of
	// its next message (Untold).
	yours, toldStart, toldEnd bool
}

// MaxRunning is how many jobs may run at once in a session: a turn of
// sixteen calls a round cannot start a hundred servers.
const MaxRunning = 8

// NextID is the id the next job Add registers will have.
func (m *Manager) NextID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next + 1
}

// Add registers a started job (yours: you started it, not the model) and
// watches for its end.
func (m *Manager) Add(command string, yours bool, p Process, out *Output, check Checker) *Job {
	m.mu.Lock()
	m.next++
	j := &Job{ID: m.next, Command: command, Started: time.Now(), proc: p, out: out, check: check, checked: make(chan struct{}),
		yours: yours, toldStart: !yours}
	m.jobs = append(m.jobs, j)
	watch := m.Watch > 0 && !m.watching
	m.watching = m.watching || watch
	meter := (m.Limits.Memory > 0 || m.Limits.Procs > 0) && !m.metering
	m.metering = m.metering || meter
	m.mu.Unlock()
	if m.Started != nil {
		m.Started(j)
	}
	go m.watch(j)
	if watch {
		go m.recheck()
	}
	if meter {
		go m.meter()
	}
	return j
}

// recheck runs the running jobs' checks every Watch until none runs: a
// change to .git or agents/ is undone within Watch, said (Meddled, and in
// the output of each job that was running, which the model reads), and a
// job that alone was running when it happened twice is ended.
func (m *Manager) recheck() {
	t := time.NewTicker(m.Watch)
	defer t.Stop()
	for range t.C {
		var running []*Job
		for _, j := range m.List() {
			if j.Running() && j.check != nil {
				running = append(running, j)
			}
		}
		if len(running) == 0 {
			m.mu.Lock()
			idle := !slices.ContainsFunc(m.jobs, (*Job).Running) // none added meanwhile
			m.watching = !idle
			m.mu.Unlock()
			if idle {
				return
			}
			continue
		}
		undone := running[0].check.Recheck() // the oldest's: the state every later one started from
		if len(undone) == 0 {
			continue
		}
		var ids []string
		for _, j := range running {
			ids = append(ids, fmt.Sprint(j.ID))
			j.out.Write([]byte(fmt.Sprintf("\n[harvey: while job %d ran, .git or agents/ changed; undone: %s]\n", j.ID, strings.Join(undone, " "))))
		}
		line := fmt.Sprintf("⚑ while job %s ran, .git or agents/ changed: %s", strings.Join(ids, " or "), strings.Join(undone, " "))
		stop := false
		if len(running) == 1 {
			if running[0].meddled++; running[0].meddled >= 2 {
				line += fmt.Sprintf("; job %d did it again and is stopped", running[0].ID)
				stop = true
			}
		}
		if m.Meddled != nil {
			m.Meddled(termtext.Sanitize(line)) // said before the job ends: its end comes after why
		}
		if stop {
			go running[0].Kill()
		}
	}
}

// watch waits for the job's end (passing on what it prints, when asked),
// then runs its check.
func (m *Manager) watch(j *Job) {
	if m.Printed != nil {
		t := time.NewTicker(printedEvery)
	printing:
		for {
			select {
			case <-j.proc.Done():
				break printing
			case <-t.C:
				m.printed(j)
			}
		}
		t.Stop()
		m.printed(j)
	} else {
		<-j.proc.Done()
	}
	var notes []string
	if j.check != nil {
		undone, changed := j.check.Check()
		notes = append(notes, undone...)
		if changed != "" { // what changed while it ran: it, or you, Harvey or another job then (inotify names no process)
			notes = append(notes, strings.Replace(changed, "[harvey: ", fmt.Sprintf("[harvey: while job %d ran (by it, or by what else ran then), ", j.ID), 1))
		}
	}
	j.mu.Lock()
	j.ended, j.code, j.notes = time.Now(), j.proc.ExitCode(), notes
	j.mu.Unlock()
	if m.Done != nil {
		m.Done(j) // before checked closes: Close returns with every end said
	}
	close(j.checked)
}

// printed passes on what j printed since the last call.
func (m *Manager) printed(j *Job) {
	text, cut := j.out.stream(printedChunk)
	if cut > 0 {
		text = fmt.Sprintf("[%d bytes not kept]\n", cut) + text
	}
	if text != "" {
		m.Printed(j, secrets.RedactWindow(text))
	}
}

// Find is job id, or an error that names the session's jobs.
func (m *Manager) Find(id int) (*Job, error) {
	if j, ok := m.Get(id); ok {
		return j, nil
	}
	return nil, fmt.Errorf("no job %d (%s)", id, m.Brief())
}

// Brief names the session's jobs and their states in a few words.
func (m *Manager) Brief() string {
	var ids []string
	for _, j := range m.List() {
		ids = append(ids, fmt.Sprintf("%d %s", j.ID, j.State()))
	}
	if len(ids) == 0 {
		return "none in this session: a job ends with the session that started it"
	}
	return "this session's jobs: " + strings.Join(ids, ", ")
}

// Get finds a job by its id.
func (m *Manager) Get(id int) (*Job, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range m.jobs {
		if j.ID == id {
			return j, true
		}
	}
	return nil, false
}

// List is the session's jobs, oldest first.
func (m *Manager) List() []*Job {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.jobs)
}

// Untold is what the model has not heard of the session's jobs, for the
// head of its next message: each job you started (its id, command and
// ports), and each job that ended since (its exit and its last lines), once
// each, within budget bytes in all (issue 76).
func (m *Manager) Untold(budget int) string {
	var parts []string
	for _, j := range m.List() {
		j.mu.Lock()
		start := !j.toldStart
		end := !j.ended.IsZero() && !j.toldEnd
		j.toldStart, j.toldEnd = true, j.toldEnd || end
		j.mu.Unlock()
		if start && !end {
			parts = append(parts, fmt.Sprintf("[you started a background job: %s]", j.brief()))
		}
		if end {
			parts = append(parts, fmt.Sprintf("[a background job ended: %s; its last lines:\n%s]", j.brief(), j.Tail(10)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	share := max(256, budget/len(parts))
	for i, p := range parts {
		if len(p) > share {
			parts[i] = strings.ToValidUTF8(p[:share], "") + "…]"
		}
	}
	return strings.Join(parts, "\n")
}

// brief is the job in a few words: its id, command, state and ports.
func (j *Job) brief() string {
	s := fmt.Sprintf("job %d (%s) %s after %s", j.ID, secrets.Redact(termtext.OneLine(j.Command)), j.State(), j.Age().Round(time.Second))
	if p := j.Ports(); len(p) > 0 {
		s += ", listening on " + joinPorts(p)
	}
	return s
}

// Told says the model has heard of the job's end (its start's result, when
// it ended within its first second).
func (j *Job) Told() {
	j.mu.Lock()
	j.toldEnd, j.toldStart = true, true
	j.mu.Unlock()
}

// Ended is closed once the job has ended and its check has run.
func (j *Job) Ended() <-chan struct{} { return j.checked }

// Full reports whether MaxRunning jobs run already.
func (m *Manager) Full() bool { return m.Running() >= MaxRunning }

// Running counts the jobs still running.
func (m *Manager) Running() int {
	n := 0
	for _, j := range m.List() {
		if j.Running() {
			n++
		}
	}
	return n
}

// Kill stops a job and everything it started, and waits for its check.
func (j *Job) Kill() {
	j.mu.Lock()
	if j.ended.IsZero() {
		j.killed = true
	}
	j.mu.Unlock()
	j.proc.Stop()
	<-j.checked
}

// Close ends every job of the session, each with its check.
func (m *Manager) Close() {
	var wg sync.WaitGroup
	for _, j := range m.List() {
		if j.Running() {
			wg.Add(1)
			go func() { defer wg.Done(); j.Kill() }()
		}
	}
	wg.Wait()
	for _, j := range m.List() {
		<-j.checked
	}
}

// Running reports whether the job has not ended.
func (j *Job) Running() bool {
	select {
	case <-j.checked:
		return false
	default:
		return true
	}
}

// State is the job's state in a few words: running, exited N, stopped.
func (j *Job) State() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.ended.IsZero():
		return "running"
	case j.killed:
		return "stopped"
	}
	return fmt.Sprintf("exited %d", j.code)
}

// Notes are what the job's check said when it ended.
func (j *Job) Notes() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.notes)
}

// Age is how long the job has run (or ran).
func (j *Job) Age() time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.ended.IsZero() {
		return j.ended.Sub(j.Started)
	}
	return time.Since(j.Started)
}

// Ports are the TCP ports the job's processes listen on.
func (j *Job) Ports() []int {
	if !j.Running() {
		return nil
	}
	return listeningPorts(j.proc.Pid())
}

// Read is what the job printed since the model's last read (redacted, its
// terminal escapes stripped, at most limit bytes: its start and its latest
// part), with its state and, once it ended, what its check said.
func (j *Job) Read(limit int) string {
	// Nothing new yet from a job that runs: wait a little for it, so a
	// model that reads at once gets what comes (not a busy loop).
	for deadline := time.Now().Add(time.Second); j.Running() && !j.out.hasNew(&j.out.read) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	text, cut := j.out.Since(limit)
	return j.report(termtext.StripEscapes(text), cut)
}

// ReadYours is Read for you (/jobs ID): a read position of its own, so
// neither of you takes what the other should see; its escapes are left
// for the terminal's writer (colours shown, the rest escaped).
func (j *Job) ReadYours(limit int) string {
	j.out.mu.Lock()
	text, cut := j.out.from(&j.out.user, limit)
	j.out.mu.Unlock()
	return j.report(text, cut)
}

// Log is the whole output the job's kept (its start and its latest part,
// what was not kept counted), without moving a read position.
func (j *Job) Log() string {
	j.out.mu.Lock()
	from := int64(0)
	text, cut := j.out.from(&from, 0)
	j.out.mu.Unlock()
	return j.report(text, cut)
}

// Tail is the job's last n lines, escapes stripped and redacted.
func (j *Job) Tail(n int) string {
	j.out.mu.Lock()
	from := max(0, j.out.total-8192)
	text, _ := j.out.from(&from, 8192)
	j.out.mu.Unlock()
	lines := strings.Split(strings.TrimRight(termtext.StripEscapes(text), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if t := strings.Join(lines, "\n"); t != "" {
		return secrets.RedactWindow(t)
	}
	return "(it printed nothing)"
}

// report is what was read of the job (text, and the bytes not kept), with
// its state and, once it ended, what its check said.
func (j *Job) report(text string, cut int64) string {
	var b strings.Builder
	if text != "" {
		b.WriteString(secrets.RedactWindow(text))
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
	}
	if cut > 0 {
		fmt.Fprintf(&b, "[%d bytes of its output were not kept]\n", cut)
	}
	if text == "" && cut == 0 {
		b.WriteString("(nothing new)\n")
	}
	fmt.Fprintf(&b, "[job %d %s after %s", j.ID, j.State(), j.Age().Round(time.Second))
	if p := j.Ports(); len(p) > 0 {
		fmt.Fprintf(&b, ", listening on %s", joinPorts(p))
	}
	b.WriteString("]")
	for _, n := range j.Notes() {
		b.WriteString("\n" + n)
	}
	return b.String()
}

// Line is the job in one line, for /jobs.
func (j *Job) Line() string {
	s := fmt.Sprintf("%d  %-10s %-8s %s", j.ID, j.State(), j.Age().Round(time.Second), termtext.Sanitize(termtext.OneLine(j.Command)))
	if p := j.Ports(); len(p) > 0 {
		s += "  (listening on " + joinPorts(p) + ")"
	}
	return s
}

func joinPorts(ps []int) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprint(p)
	}
	return strings.Join(out, ", ")
}

// Output is a job's output: its first part and a ring of its latest, and
// where the last read ended. Safe for the program's stdout and stderr
// together.
type Output struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // the latest bytes past the head
	limit int    // head + tail
	total int64
	read  int64 // offset where the model's last read ended
	user  int64 // offset where your last read ended (/jobs ID)
	sent  int64 // offset where the last stream call ended (Printed)
}

// NewOutput keeps at most limit bytes of a job's output.
func NewOutput(limit int) *Output { return &Output{limit: max(limit, 1024)} }

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	if room := o.limit/4 - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head, p = append(o.head, p[:k]...), p[k:]
	}
	o.total += int64(n)
	if len(p) > 0 {
		o.tail = append(o.tail, p...)
		if t := o.limit - o.limit/4; len(o.tail) > 2*t {
			o.tail = append([]byte(nil), o.tail[len(o.tail)-t:]...)
		}
	}
	return n, nil
}

// hasNew reports whether anything was written past cursor.
func (o *Output) hasNew(cursor *int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total > *cursor
}

// Since is what was written since the last read, at most limit bytes (the
// latest, when more; what was not kept is counted in cut), and moves the
// read position to the end.
func (o *Output) Since(limit int) (text string, cut int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.from(&o.read, limit)
}

// stream is Since for the stream of events: a cursor of its own.
func (o *Output) stream(limit int) (text string, cut int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.from(&o.sent, limit)
}

// from is what was written past *cursor (at most limit bytes), moving
// *cursor to the end; o.mu is held.
func (o *Output) from(cursor *int64, limit int) (text string, cut int64) {
	from := *cursor
	*cursor = o.total
	headEnd := int64(len(o.head))
	tailStart := o.total - int64(len(o.tail)) // offset of tail[0]
	var b []byte
	if from < headEnd {
		b = append(b, o.head[from:]...)
		from = headEnd
	}
	if from < tailStart {
		cut += tailStart - from
		from = tailStart
	}
	b = append(b, o.tail[from-tailStart:]...)
	if limit > 0 && len(b) > limit {
		cut += int64(len(b) - limit)
		b = b[len(b)-limit:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), cut
}
