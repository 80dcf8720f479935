package jobs

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Moving a command from the foreground to the background (Ctrl-Z in the
// REPL, issue 76): a foreground command that may be moved is registered
// with Hold while it runs; Move hands each a new Output on its Detach
// channel (internal/runner's Proc.Detach), and the command's runner
// returns it as moved: the caller then Adds it as a job with that Output.

// Foreground is one command running in the foreground that may be moved.
type Foreground struct {
	Detach chan io.Writer // for runner.Proc.Detach
	size   int
	layer  string
	out    *Output
}

// Hold registers a foreground command that may be moved (its job's output
// keeps size bytes; layer names its caches' private layer, which a job it
// becomes keeps while it runs: Layer); Release when it has ended, or
// AddMoved once moved. Nil while Ctrl-Z is not trapped (no turn of the
// REPL runs): nothing could move it, and a command that cannot move is
// waited for as it runs, with no hand-off between goroutines.
func (m *Manager) Hold(size int, layer string) *Foreground {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.trapped {
		return nil
	}
	f := &Foreground{Detach: make(chan io.Writer, 1), size: size, layer: layer}
	if m.fg == nil {
		m.fg = map[*Foreground]bool{}
	}
	m.fg[f] = true
	return f
}

// Chan is f's Detach (nil for none).
func (f *Foreground) Chan() <-chan io.Writer {
	if f == nil {
		return nil
	}
	return f.Detach
}

// Release forgets a foreground command, and returns the Output it was
// moved with (nil: it was not asked to move).
func (m *Manager) Release(f *Foreground) *Output {
	if f == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.fg, f)
	return f.out
}

// AddMoved adds the foreground command f, moved, as a job (Add): with the
// Output it was moved with, and its caches' layer.
func (m *Manager) AddMoved(f *Foreground, command string, yours bool, p Process, check Checker) *Job {
	out := m.Release(f)
	j := m.Add(command, yours, p, out, check)
	j.mu.Lock()
	j.layer = f.layer
	j.mu.Unlock()
	return j
}

// MovedNote is the line a command's result ends with when it was moved
// after d and is now job j (yours: you ran it; else the model did).
func (j *Job) MovedNote(d time.Duration, yours bool) string {
	how := fmt.Sprintf("job_output %d reads what it prints from now, job_kill %d stops it", j.ID, j.ID)
	if yours {
		how = fmt.Sprintf("/jobs %d shows what it prints from now, /jobs kill %d stops it", j.ID, j.ID)
	}
	return fmt.Sprintf("[moved to the background by the user (Ctrl-Z) after %s: it runs on as job %d; %s]", d.Round(time.Second), j.ID, how)
}

// Layer is base, or where a running job moved from the foreground keeps
// that caches' layer (an overlay's upper layer is one mount's at a time),
// base-2, base-3, ...: the first no running job keeps.
func (m *Manager) Layer(base string) string {
	kept := map[string]bool{}
	for _, j := range m.List() {
		j.mu.Lock()
		if j.ended.IsZero() && j.layer != "" {
			kept[j.layer] = true
		}
		j.mu.Unlock()
	}
	l := base
	for i := 2; kept[l]; i++ {
		l = fmt.Sprintf("%s-%d", base, i)
	}
	return l
}

// Move asks every foreground command to move to the background, and says
// how many were asked; none is asked when the jobs running and these
// would be more than MaxRunning (the error says so).
func (m *Manager) Move() (int, error) {
	running := m.Running()
	m.mu.Lock()
	defer m.mu.Unlock()
	var asked []*Foreground
	for f := range m.fg {
		if f.out == nil {
			asked = append(asked, f)
		}
	}
	if len(asked) > 0 && running+len(asked) > MaxRunning {
		return 0, fmt.Errorf("%d background jobs run already, the most at once: /jobs kill one first, then Ctrl-Z", running)
	}
	for _, f := range asked {
		f.out = NewOutput(f.size)
		f.Detach <- f.out
	}
	return len(asked), nil
}

// TrapCtrlZ makes Ctrl-Z (SIGTSTP, from the terminal, while a turn runs)
// move the foreground commands to the background instead of suspending
// Harvey; say hears, in a line, when there was none or they could not
// move. The returned func ends it (Ctrl-Z suspends Harvey again).
func (m *Manager) TrapCtrlZ(say func(string)) (untrap func()) {
	c, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(c, syscall.SIGTSTP)
	m.mu.Lock()
	m.trapped = true
	m.mu.Unlock()
	go func() {
		for {
			select {
			case <-c:
				if n, err := m.Move(); err != nil {
					say(err.Error())
				} else if n == 0 {
					say("Ctrl-Z moves a running command to the background; none runs now (Ctrl-C stops the reply)")
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(c)
		close(done)
		m.mu.Lock()
		m.trapped = false
		m.mu.Unlock()
	}
}
