package jobs

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// A job's output: each read gets what came since the last one; past what
// it keeps, the start and the latest part, with the rest counted.
func TestOutputSinceLastRead(t *testing.T) {
	o := NewOutput(4096)
	fmt.Fprint(o, "first\n")
	if s, cut := o.Since(0); s != "first\n" || cut != 0 {
		t.Fatalf("%q %d", s, cut)
	}
	if s, _ := o.Since(0); s != "" {
		t.Fatalf("read twice: %q", s)
	}
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(o, "line %04d\n", i)
	}
	s, cut := o.Since(0)
	if cut == 0 || !strings.HasSuffix(s, "line 1999\n") || !strings.HasPrefix(s, "line 0000\n") {
		t.Errorf("cut %d: %q … %q", cut, s[:40], s[len(s)-20:])
	}
	if int64(len(s))+cut != 2000*10 {
		t.Errorf("kept %d and cut %d of %d", len(s), cut, 2000*10)
	}
	fmt.Fprint(o, "more\n")
	if s, cut := o.Since(3); s != "re\n" || cut != 2 {
		t.Errorf("a read within a limit keeps the latest: %q %d", s, cut)
	}
}

// fakeProc is a job's program that ends when stopped.
type fakeProc struct {
	done chan struct{}
	once sync.Once
}

func (p *fakeProc) Pid() int              { return 0 }
func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) ExitCode() int         { return 137 }
func (p *fakeProc) Stop()                 { p.once.Do(func() { close(p.done) }) }

type fakeCheck struct {
	n       int
	changed func() bool // what Recheck finds changed (nil: nothing)
	files   string      // the line naming the files that changed while it ran
}

func (c *fakeCheck) Check() ([]string, string) { c.n++; return []string{"undone: x"}, c.files }
func (c *fakeCheck) Recheck() []string {
	if c.changed != nil && c.changed() {
		return []string{"undone: .git/config"}
	}
	return nil
}

// Close ends every running job, each with its check, and says so; a job
// written to from another goroutine while it is read is safe (-race).
func TestCloseEndsEveryJob(t *testing.T) {
	var ended []int
	var mu sync.Mutex
	m := &Manager{Done: func(j *Job) { mu.Lock(); ended = append(ended, j.ID); mu.Unlock() }}
	var checks []*fakeCheck
	for i := 0; i < 3; i++ {
		c := &fakeCheck{files: "[harvey: 1 file changed in the workspace: app.log]"}
		checks = append(checks, c)
		out := NewOutput(1024)
		j := m.Add(fmt.Sprintf("job %d", i), false, &fakeProc{done: make(chan struct{})}, out, c)
		go func() {
			for k := 0; k < 100; k++ {
				fmt.Fprintf(out, "tick %d\n", k)
			}
		}()
		j.out.Since(100)
	}
	if m.Running() != 3 {
		t.Fatalf("running %d", m.Running())
	}
	done := make(chan struct{})
	go func() { m.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung")
	}
	mu.Lock()
	defer mu.Unlock()
	// Every end is said by the time Close returns.
	if len(ended) != 3 || m.Running() != 0 {
		t.Errorf("ended %v, running %d", ended, m.Running())
	}
	for i, c := range checks {
		if c.n != 1 {
			t.Errorf("job %d checked %d times", i+1, c.n)
		}
	}
	if j, _ := m.Get(1); j.State() != "stopped" || !strings.Contains(j.Read(100), "undone: x") {
		t.Errorf("state %q, read %q", j.State(), j.Read(100))
	}
	// The files that changed while it ran are not said to be its own: you,
	// Harvey or another job may have changed them then (issue 76).
	if j, _ := m.Get(2); !strings.Contains(j.Read(200), "[harvey: while job 2 ran (by it, or by what else ran then), 1 file changed in the workspace: app.log]") {
		t.Errorf("the files changed while it ran: %q", j.Read(200))
	}
}

// While jobs run, their check runs every Watch (Landlock only, issue 75):
// what changed is undone, said to the user and in the output of each job
// that was running; a job alone in running that does it twice is ended.
func TestWatchUndoesWhileJobsRun(t *testing.T) {
	var mu sync.Mutex
	var said []string
	m := &Manager{Watch: 10 * time.Millisecond, Meddled: func(line string) {
		mu.Lock()
		defer mu.Unlock()
		said = append(said, line)
	}}
	var planting sync.Mutex
	plants := 0
	plant := func() bool { // the job changes .git twice, some time apart
		planting.Lock()
		defer planting.Unlock()
		if plants < 2 {
			plants++
			return true
		}
		return false
	}
	j := m.Add("hostile", false, &fakeProc{done: make(chan struct{})}, NewOutput(4096), &fakeCheck{changed: plant})
	select {
	case <-j.checked:
	case <-time.After(5 * time.Second):
		t.Fatal("the job that did it twice still runs")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 2 || !strings.Contains(said[0], "while job 1 ran, .git or agents/ changed: undone: .git/config") ||
		!strings.Contains(said[1], "job 1 did it again and is stopped") || j.State() != "stopped" {
		t.Errorf("state %s, said %q", j.State(), said)
	}
	if r := j.Read(4096); !strings.Contains(r, "while job 1 ran, .git or agents/ changed; undone: undone: .git/config") {
		t.Errorf("the job's output (the model's) does not say it: %q", r)
	}
	// Two running: both named, neither ended.
	m2 := &Manager{Watch: 10 * time.Millisecond, Meddled: func(line string) {
		if strings.Contains(line, "stopped") {
			t.Errorf("a job was stopped on a change two could have made: %s", line)
		}
	}}
	plants = 0
	a := m2.Add("a", false, &fakeProc{done: make(chan struct{})}, NewOutput(4096), &fakeCheck{changed: plant})
	m2.Add("b", false, &fakeProc{done: make(chan struct{})}, NewOutput(4096), &fakeCheck{})
	time.Sleep(100 * time.Millisecond)
	if !a.Running() {
		t.Error("a job was ended on a change two jobs could have made")
	}
	m2.Close()
}

// What the model has not heard of the jobs, once each (issue 76): the job
// you started, with its command; a job that ended since, with its exit and
// last lines (escapes stripped); nothing of a job whose end its start's
// result told.
func TestUntoldOnceEach(t *testing.T) {
	m := &Manager{}
	yours := m.Add("npm run dev", true, &fakeProc{done: make(chan struct{})}, NewOutput(4096), nil)
	out := NewOutput(4096)
	p := &fakeProc{done: make(chan struct{})}
	ended := m.Add("make test", false, p, out, nil)
	told := m.Add("false", false, &fakeProc{done: make(chan struct{})}, NewOutput(4096), nil)
	fmt.Fprint(out, "\x1b[31mFAIL\x1b[0m: TestX\nline 2\n")
	told.Kill()
	told.Told()
	if u := m.Untold(4096); !strings.Contains(u, "[you started a background job: job 1 (npm run dev) running") || strings.Contains(u, "job 2") || strings.Contains(u, "job 3") {
		t.Errorf("first: %q", u)
	}
	ended.Kill()
	u := m.Untold(4096)
	if !strings.Contains(u, "[a background job ended: job 2 (make test) stopped") || !strings.Contains(u, "FAIL: TestX\nline 2") || strings.Contains(u, "\x1b") {
		t.Errorf("the ended job: %q", u)
	}
	if u := m.Untold(4096); u != "" {
		t.Errorf("told twice: %q", u)
	}
	m.Close()
	_ = yours
}

// You and the model each read from your own position; the log is all that
// is kept; the model's text has no escapes, yours keeps them for the
// terminal's writer.
func TestReadPositionsApart(t *testing.T) {
	m := &Manager{}
	out := NewOutput(4096)
	j := m.Add("x", false, &fakeProc{done: make(chan struct{})}, out, nil)
	fmt.Fprint(out, "\x1b[32mone\x1b[0m\n")
	if r := j.ReadYours(4096); !strings.Contains(r, "\x1b[32mone") {
		t.Errorf("yours: %q", r)
	}
	if r := j.Read(4096); !strings.Contains(r, "one\n") || strings.Contains(r, "\x1b") {
		t.Errorf("the model's, after yours: %q", r)
	}
	fmt.Fprint(out, "two\n")
	if r := j.ReadYours(4096); !strings.Contains(r, "two") || strings.Contains(r, "one") {
		t.Errorf("yours again: %q", r)
	}
	if l := j.Log(); !strings.Contains(l, "one") || !strings.Contains(l, "two") {
		t.Errorf("log: %q", l)
	}
	m.Close()
}

// wait_for a text: returns when it appears; says so when the job ends
// first, or when the time is up, with its last lines.
func TestWaitForText(t *testing.T) {
	m := &Manager{}
	out := NewOutput(4096)
	p := &fakeProc{done: make(chan struct{})}
	j := m.Add("server", false, p, out, nil)
	go func() { time.Sleep(200 * time.Millisecond); fmt.Fprint(out, "Listening on :5173\n") }()
	text, met, err := j.WaitFor(t.Context(), "Listening on", 5*time.Second, nil, 4096)
	if err != nil || !met || !strings.Contains(text, "is ready") {
		t.Errorf("%q %v %v", text, met, err)
	}
	if text, met, _ := j.WaitFor(t.Context(), "never", 300*time.Millisecond, nil, 4096); met || !strings.Contains(text, "no \"never\" is in its output within") {
		t.Errorf("timed out: %q", text)
	}
	go func() { time.Sleep(100 * time.Millisecond); p.Stop() }()
	if text, met, _ := j.WaitFor(t.Context(), "never", 5*time.Second, nil, 4096); met || !strings.Contains(text, "ended (exited 137) before") || !strings.Contains(text, "Listening") {
		t.Errorf("ended: %q", text)
	}
	if _, _, err := j.WaitFor(t.Context(), "http://example.com/", time.Second, nil, 4096); err == nil {
		t.Error("a URL of another host was waited for")
	}
	m.Close()
}
