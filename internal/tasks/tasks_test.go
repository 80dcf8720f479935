package tasks

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A task runs while the caller goes on; its result is reported once, by
// Report or by Untold, never both.
func TestTaskRunsAndIsToldOnce(t *testing.T) {
	m := &Manager{}
	release := make(chan struct{})
	tk, err := m.Start("lint", "go vet ./...", func(ctx context.Context) (string, error) {
		<-release
		return "all clean", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tk.Running() || m.Running() != 1 {
		t.Fatal("the task should run until released")
	}
	if r := tk.Report(); !strings.Contains(r, "running") || !strings.Contains(r, "task_wait 1") {
		t.Errorf("a running task's report: %q", r)
	}
	if tk.Wait(context.Background(), 20*time.Millisecond) {
		t.Fatal("Wait returned true before the task ended")
	}
	if len(m.Untold()) != 0 {
		t.Fatal("a running task is not untold")
	}
	close(release)
	if !tk.Wait(context.Background(), 5*time.Second) {
		t.Fatal("the task did not end")
	}
	if r := tk.Report(); !strings.HasPrefix(r, "task 1 (lint) done in") || !strings.HasSuffix(r, "\nall clean") {
		t.Errorf("report: %q", r)
	}
	if u := m.Untold(); len(u) != 0 {
		t.Errorf("a reported task was told again: %v", u)
	}

	tk2, _ := m.Start("test", "go test", func(ctx context.Context) (string, error) { return "", errors.New("exit 1") })
	tk2.Wait(context.Background(), 5*time.Second)
	u := m.Untold()
	if len(u) != 1 || u[0] != tk2 || !strings.Contains(tk2.State(), "failed") {
		t.Fatalf("untold: %v, state %q", u, tk2.State())
	}
	if len(m.Untold()) != 0 {
		t.Error("Untold told a task twice")
	}
}

// Close stops every running task (its context is cancelled) and returns
// only once they have ended; no task starts after it.
func TestCloseEndsEveryTask(t *testing.T) {
	var ended atomic.Int32
	m := &Manager{Done: func(*Task) { ended.Add(1) }}
	for range 3 {
		if _, err := m.Start("slow", "sleep", func(ctx context.Context) (string, error) {
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond)
			return "", ctx.Err()
		}); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()
	if ended.Load() != 3 || m.Running() != 0 {
		t.Fatalf("after Close: %d ended, %d running", ended.Load(), m.Running())
	}
	for _, tk := range m.List() {
		if !strings.HasPrefix(tk.State(), "stopped") {
			t.Errorf("task %d: %s", tk.ID, tk.State())
		}
	}
	if _, err := m.Start("late", "x", func(context.Context) (string, error) { return "", nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
}

// At most MaxRunning tasks run at once; one that ends makes room.
func TestAtMostMaxRunning(t *testing.T) {
	m := &Manager{}
	defer m.Close()
	block := func(ctx context.Context) (string, error) { <-ctx.Done(); return "", nil }
	var first *Task
	for i := range MaxRunning {
		tk, err := m.Start("t", "x", block)
		if err != nil {
			t.Fatalf("task %d: %v", i+1, err)
		}
		if first == nil {
			first = tk
		}
	}
	if _, err := m.Start("t", "x", block); err == nil {
		t.Fatal("a task past MaxRunning started")
	}
	first.Kill()
	if _, err := m.Start("t", "x", block); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
}
