package jobs

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// Move asks each foreground command once, with an Output of its own that
// Release then returns; a command released unasked returns none; and
// none is asked when the jobs would be more than MaxRunning, which the
// error says.
func TestMoveAsksEachForegroundOnce(t *testing.T) {
	m := &Manager{}
	if f := m.Hold(100, "run"); f != nil || f.Chan() != nil {
		t.Fatal("a command is held while Ctrl-Z is not trapped")
	}
	m.trapped = true
	a, b := m.Hold(100, "run"), m.Hold(100, "run")
	if n, err := m.Move(); n != 2 || err != nil {
		t.Fatalf("Move: %d, %v", n, err)
	}
	wa, wb := <-a.Detach, <-b.Detach
	if n, _ := m.Move(); n != 0 {
		t.Errorf("asked again: %d", n)
	}
	if out := m.Release(a); out == nil || out != wa {
		t.Errorf("Release gave %v, the writer sent %v", out, wa)
	}
	m.Release(b)
	_ = wb
	c := m.Hold(100, "run")
	if out := m.Release(c); out != nil {
		t.Errorf("a command not asked to move has an output: %v", out)
	}
	for i := 0; i < MaxRunning; i++ {
		m.Add("sleep", false, &fakeProc{done: make(chan struct{})}, NewOutput(10), nil)
	}
	d := m.Hold(100, "run")
	if n, err := m.Move(); n != 0 || err == nil || !strings.Contains(err.Error(), "8 background jobs run already") {
		t.Errorf("past MaxRunning: %d, %v", n, err)
	}
	select {
	case w := <-d.Detach:
		t.Errorf("asked past MaxRunning: %v", w)
	default:
	}
	m.Close()
}

// While trapped, Ctrl-Z (SIGTSTP) moves the foreground commands instead of
// suspending the process, and says so when none runs.
func TestTrapCtrlZ(t *testing.T) {
	m := &Manager{}
	said := make(chan string, 4)
	untrap := m.TrapCtrlZ(func(l string) { said <- l })
	defer untrap()
	syscall.Kill(syscall.Getpid(), syscall.SIGTSTP)
	select {
	case l := <-said:
		if !strings.Contains(l, "none runs now") {
			t.Errorf("said %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing said")
	}
	f := m.Hold(100, "run")
	syscall.Kill(syscall.Getpid(), syscall.SIGTSTP)
	select {
	case <-f.Detach:
	case <-time.After(5 * time.Second):
		t.Fatal("the foreground command was not asked to move")
	}
	m.Release(f)
}

// A command moved to the background keeps its caches' layer while it
// runs: the next foreground command gets another (an overlay's upper
// layer is one mount's at a time), and the layer is free again once the
// job has ended.
func TestAMovedJobKeepsItsLayer(t *testing.T) {
	m := &Manager{trapped: true}
	if l := m.Layer("run"); l != "run" {
		t.Fatalf("Layer with no jobs: %q", l)
	}
	f := m.Hold(100, m.Layer("run"))
	m.Move()
	<-f.Detach
	p := &fakeProc{done: make(chan struct{})}
	j := m.AddMoved(f, "sleep", true, p, nil)
	if l := m.Layer("run"); l != "run-2" {
		t.Errorf("Layer while the moved job runs: %q", l)
	}
	g := m.Hold(100, m.Layer("run"))
	m.Move()
	<-g.Detach
	m.AddMoved(g, "sleep", true, &fakeProc{done: make(chan struct{})}, nil)
	if l := m.Layer("run"); l != "run-3" {
		t.Errorf("Layer while two moved jobs run: %q", l)
	}
	if !strings.Contains(j.MovedNote(3*time.Second, true), "after 3s: it runs on as job 1; /jobs 1 shows") {
		t.Errorf("the note: %s", j.MovedNote(3*time.Second, true))
	}
	p.Stop()
	<-j.Ended()
	if l := m.Layer("run"); l != "run" {
		t.Errorf("Layer once the first has ended: %q", l)
	}
	m.Close()
}
