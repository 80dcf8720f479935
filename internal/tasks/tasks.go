// Package tasks is a session's async tool calls: a tool of yours with
// async: true in its front matter returns a task id at once and keeps
// running while the conversation goes on; task_status and task_wait read
// it, a finished task's result goes into the next turn once, /tasks lists
// them.
//
// Contract: the session admits a task's call before Start (the path
// policy, the approval, the sandbox it will run in — the same gate the
// call would pass synchronously), so Start only runs what was already
// allowed, with a context of its own that Kill and Close cancel. A task's
// result is the text its run returns, which the session has capped and
// redacted as it does a tool's. A result reaches the model once: by
// Report (task_status, task_wait) or by Untold (the next turn). No task
// outlives Close, which every session runs when it ends; at most
// MaxRunning run at once.
package tasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MaxRunning is how many tasks may run at once.
const MaxRunning = 8

// Task is one async call.
type Task struct {
	ID      int
	Tool    string // the tool's name
	Shown   string // what it runs, as the user was shown it
	Started time.Time

	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	ended  time.Time
	result string
	err    error
	killed bool
	told   bool // its result reached the model
}

// Manager holds a session's tasks.
type Manager struct {
	mu     sync.Mutex
	tasks  []*Task
	next   int
	closed bool
	wg     sync.WaitGroup
	// Done is called when a task has ended (nil: nothing said).
	Done func(t *Task)
}

// ErrClosed is Start's answer once the session has ended.
var ErrClosed = errors.New("the session is ending: no new task starts")

// Start runs run in the background as a new task of tool.
func (m *Manager) Start(tool, shown string, run func(ctx context.Context) (string, error)) (*Task, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	n := 0
	for _, t := range m.tasks {
		if t.Running() {
			n++
		}
	}
	if n >= MaxRunning {
		m.mu.Unlock()
		return nil, fmt.Errorf("%d tasks run already: task_wait for one first", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.next++
	t := &Task{ID: m.next, Tool: tool, Shown: shown, Started: time.Now(), cancel: cancel, done: make(chan struct{})}
	m.tasks = append(m.tasks, t)
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		res, err := run(ctx)
		t.mu.Lock()
		t.ended, t.result, t.err = time.Now(), res, err
		t.mu.Unlock()
		cancel()
		if m.Done != nil {
			m.Done(t)
		}
		close(t.done)
	}()
	return t, nil
}

// Get finds a task by its id.
func (m *Manager) Get(id int) (*Task, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tasks {
		if t.ID == id {
			return t, true
		}
	}
	return nil, false
}

// List is the session's tasks, oldest first.
func (m *Manager) List() []*Task {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.tasks)
}

// Running counts the tasks still running.
func (m *Manager) Running() int {
	n := 0
	for _, t := range m.List() {
		if t.Running() {
			n++
		}
	}
	return n
}

// Untold is the tasks that have ended and whose result has not reached
// the model, oldest first; they count as told from now on.
func (m *Manager) Untold() []*Task {
	var out []*Task
	for _, t := range m.List() {
		t.mu.Lock()
		if !t.ended.IsZero() && !t.told {
			t.told = true
			out = append(out, t)
		}
		t.mu.Unlock()
	}
	return out
}

// Close stops every task of the session and waits for them to end.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.closed = true
	list := slices.Clone(m.tasks)
	m.mu.Unlock()
	for _, t := range list {
		t.stop()
	}
	m.wg.Wait()
}

// Running reports whether the task has not ended.
func (t *Task) Running() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended.IsZero()
}

// Wait waits at most d (and while ctx lasts) for the task to end, and
// reports whether it has.
func (t *Task) Wait(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.done:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// Kill stops the task (its program with everything it started) and waits
// for it to end.
func (t *Task) Kill() {
	t.stop()
	<-t.done
}

func (t *Task) stop() {
	t.mu.Lock()
	if t.ended.IsZero() {
		t.killed = true
	}
	t.mu.Unlock()
	t.cancel()
}

// State says where the task is, in a few words: "running 4s", "done in
// 2.1s", "failed after 3s", "stopped after 1s".
func (t *Task) State() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended.IsZero() {
		return "running " + time.Since(t.Started).Round(time.Second).String()
	}
	d := t.ended.Sub(t.Started).Round(100 * time.Millisecond)
	switch {
	case t.killed:
		return "stopped after " + d.String()
	case t.err != nil:
		return "failed after " + d.String()
	}
	return "done in " + d.String()
}

// Line is the task in one line for /tasks.
func (t *Task) Line() string {
	return fmt.Sprintf("%d  %s  %s: %s", t.ID, t.State(), t.Tool, t.Shown)
}

// Report is the task for the model: its state, and its result once it has
// ended (which then counts as told).
func (t *Task) Report() string {
	state := t.State()
	t.mu.Lock()
	defer t.mu.Unlock()
	head := fmt.Sprintf("task %d (%s) %s", t.ID, t.Tool, state)
	if t.ended.IsZero() {
		return head + fmt.Sprintf("; task_wait %d waits for its result", t.ID)
	}
	t.told = true
	if t.err != nil {
		return head + ": error: " + t.err.Error()
	}
	return head + ":\n" + t.result
}

// Result is what the task's run returned (empty while it runs).
func (t *Task) Result() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.result, t.err
}
