package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A command moved to the background (Ctrl-Z) returns at once with what it
// printed so far, and runs on past its deadline and the caller's end, its
// further output going to the job's writer, until it ends by itself with
// its own status; the move never stops it.
func TestAMovedCommandRunsOnAndEndsByItself(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, spec *sandbox.Spec) {
		t.Parallel() // each waits past a deadline
		dir := t.TempDir()
		if spec != nil {
			dir = spec.RW[0]
		}
		gate := filepath.Join(dir, "go-on")
		var echo lockedBuffer
		detach := make(chan io.Writer, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		script := "echo before; while [ ! -e go-on ]; do sleep 0.05; done; echo after; exit 4"
		got := make(chan Result, 1)
		go func() {
			got <- Run(ctx, Proc{Dir: dir, Argv: []string{"sh", "-c", script}, Env: BaseEnv(), Sandbox: spec,
				Timeout: time.Second, Echo: &echo, Detach: detach})
		}()
		if !waitFor(10*time.Second, func() bool { return strings.Contains(echo.String(), "before") }) {
			t.Fatalf("no output: %q", echo.String())
		}
		var job lockedBuffer
		detach <- &job
		var res Result
		select {
		case res = <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return once the command was moved")
		}
		if res.Moved == nil || !strings.Contains(string(res.Output), "before") || res.Moved.Pid() <= 0 {
			t.Fatalf("moved %v, output %q", res.Moved, res.Output)
		}
		cancel() // the turn ends
		// Past its deadline, and where commands have no PID namespace, past
		// its launcher's own (the deadline and sandbox.launcherGrace, 3 s).
		time.Sleep(4500 * time.Millisecond)
		select {
		case <-res.Moved.Done():
			t.Fatalf("the moved command was stopped by its deadline or the caller's end (exit %d)", res.Moved.ExitCode())
		default:
		}
		os.WriteFile(gate, nil, 0o644)
		select {
		case <-res.Moved.Done():
		case <-time.After(10 * time.Second):
			res.Moved.Stop()
			t.Fatal("the moved command did not end")
		}
		if res.Moved.ExitCode() != 4 || !strings.Contains(job.String(), "after") || strings.Contains(echo.String(), "after") {
			t.Errorf("exit %d, the job's output %q, echoed %q", res.Moved.ExitCode(), job.String(), echo.String())
		}
	})
}

// sleepers are the pids of the processes running `sleep mark`.
func sleepers(mark string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+mark+"\x00" {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// Stop ends a moved command and everything it started; a command not
// moved still meets its deadline as before.
func TestAMovedCommandStops(t *testing.T) {
	both(t, func(t *testing.T, spec *sandbox.Spec) {
		dir := t.TempDir()
		if spec != nil {
			dir = spec.RW[0]
		}
		detach := make(chan io.Writer, 1)
		detach <- io.Discard // moved as soon as it runs
		mark := fmt.Sprintf("%d.%d", 600+os.Getpid()%100, time.Now().UnixNano()%1000000)
		res := Run(context.Background(), Proc{Dir: dir, Argv: []string{"sh", "-c", "sleep " + mark + " & sleep " + mark}, Env: BaseEnv(), Sandbox: spec, Detach: detach})
		if res.Moved == nil {
			t.Fatalf("not moved: %+v", res)
		}
		if !waitFor(10*time.Second, func() bool { return len(sleepers(mark)) == 2 }) {
			t.Fatalf("the command's two sleeps are not running: %v", sleepers(mark))
		}
		start := time.Now()
		res.Moved.Stop()
		select {
		case <-res.Moved.Done():
		default:
			t.Fatal("Stop returned before the command ended")
		}
		if time.Since(start) > 4*time.Second {
			t.Errorf("Stop took %s", time.Since(start))
		}
		if !waitFor(2*time.Second, func() bool { return len(sleepers(mark)) == 0 }) {
			t.Errorf("left running after Stop: %v", sleepers(mark))
		}
		res = Run(context.Background(), Proc{Dir: dir, Argv: []string{"sleep", "60"}, Env: BaseEnv(), Sandbox: spec, Timeout: 300 * time.Millisecond, Detach: make(chan io.Writer)})
		if !res.TimedOut || res.Moved != nil {
			t.Errorf("not moved, past its deadline: %+v", res)
		}
	})
}

// A command moved to the background runs on while the next commands run
// and end (where commands have no PID namespace, each one's end ends the
// orphans it left: never the moved one's processes).
func TestAMovedCommandOutlivesTheNext(t *testing.T) {
	both(t, func(t *testing.T, spec *sandbox.Spec) {
		dir := t.TempDir()
		if spec != nil {
			dir = spec.RW[0]
		}
		mark := fmt.Sprintf("%d.%d", 700+os.Getpid()%100, time.Now().UnixNano()%1000000)
		detach := make(chan io.Writer, 1)
		detach <- io.Discard
		res := Run(context.Background(), Proc{Dir: dir, Argv: []string{"sh", "-c", "sleep " + mark + "; echo x"}, Env: BaseEnv(), Sandbox: spec, Detach: detach})
		if res.Moved == nil {
			t.Fatalf("not moved: %+v", res)
		}
		defer res.Moved.Stop()
		if !waitFor(10*time.Second, func() bool { return len(sleepers(mark)) == 1 }) {
			t.Fatal("the moved command's sleep is not running")
		}
		for i := 0; i < 2; i++ {
			if r := Run(context.Background(), Proc{Dir: dir, Argv: []string{"sh", "-c", "sleep 0.1 & echo next"}, Env: BaseEnv(), Sandbox: spec}); r.ExitCode != 0 {
				t.Fatalf("the next command: %+v", r)
			}
		}
		time.Sleep(300 * time.Millisecond)
		select {
		case <-res.Moved.Done():
			t.Fatalf("the moved command was ended by the next one's end (exit %d)", res.Moved.ExitCode())
		default:
		}
		if len(sleepers(mark)) != 1 {
			t.Errorf("the moved command's sleep is gone: %v", sleepers(mark))
		}
	})
}
