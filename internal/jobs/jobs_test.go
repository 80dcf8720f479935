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

type fakeCheck struct{ n int }

func (c *fakeCheck) Check() ([]string, string) { c.n++; return []string{"undone: x"}, "" }

// Close ends every running job, each with its check, and says so; a job
// written to from another goroutine while it is read is safe (-race).
func TestCloseEndsEveryJob(t *testing.T) {
	var ended []int
	var mu sync.Mutex
	m := &Manager{Done: func(j *Job) { mu.Lock(); ended = append(ended, j.ID); mu.Unlock() }}
	var checks []*fakeCheck
	for i := 0; i < 3; i++ {
		c := &fakeCheck{}
		checks = append(checks, c)
		out := NewOutput(1024)
		j := m.Add(fmt.Sprintf("job %d", i), &fakeProc{done: make(chan struct{})}, out, c)
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
}
