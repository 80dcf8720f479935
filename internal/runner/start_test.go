package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// lockedBuffer is a job's output, read while the job writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// both runs f unsandboxed and, where the sandbox is enforced here, in it.
func both(t *testing.T, f func(t *testing.T, spec *sandbox.Spec)) {
	t.Run("unsandboxed", func(t *testing.T) { f(t, nil) })
	t.Run("sandboxed", func(t *testing.T) {
		if !sandbox.Available().Enforced() {
			t.Skip("no sandbox here")
		}
		f(t, sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: t.TempDir(), Purpose: "test"}))
	})
}

func waitDone(t *testing.T, p *Started) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		p.Stop()
		t.Fatal("the job did not end")
	}
}

// A job runs until it ends and says how it ended: its output, its exit
// status, 128+N where a signal ended it.
func TestAStartedJobSaysHowItEnded(t *testing.T) {
	both(t, func(t *testing.T, spec *sandbox.Spec) {
		dir := t.TempDir()
		if spec != nil {
			dir = spec.RW[0]
		}
		var out lockedBuffer
		p, err := Start(Proc{Dir: dir, Argv: []string{"sh", "-c", "echo started; sleep 0.2; echo done >&2; exit 3"}, Env: BaseEnv(), Sandbox: spec, Timeout: time.Millisecond}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if p.Pid() <= 0 {
			t.Errorf("pid %d", p.Pid())
		}
		waitDone(t, p) // Timeout is ignored: a job runs until it ends
		if p.ExitCode() != 3 || !strings.Contains(out.String(), "started\n") || !strings.Contains(out.String(), "done\n") {
			t.Errorf("exit %d, output %q", p.ExitCode(), out.String())
		}
		p, err = Start(Proc{Dir: dir, Argv: []string{"sh", "-c", "kill -TERM $$"}, Env: BaseEnv(), Sandbox: spec}, &out)
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, p)
		if p.ExitCode() != 128+15 {
			t.Errorf("a job ended by SIGTERM: exit %d", p.ExitCode())
		}
		p.Stop() // stopping a job that ended is nothing
		if _, err := Start(Proc{Dir: dir, Argv: []string{"no-such-program-here"}, Sandbox: spec}, &out); err == nil {
			t.Error("a missing program started")
		}
	})
}

// alive names the processes whose command line holds mark.
func alive(mark string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), mark) {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(st), ") Z ") {
			continue // killed, not yet reaped
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}

// Stop ends the job and everything it started, and returns once they
// have ended; in the sandbox that includes a child that left the job's
// session (setsid), which a process group alone would not reach.
func TestStopEndsTheJobAndWhatItStarted(t *testing.T) {
	both(t, func(t *testing.T, spec *sandbox.Spec) {
		dir := t.TempDir()
		if spec != nil {
			dir = spec.RW[0]
		}
		mark := fmt.Sprintf("%d%05d", os.Getpid(), time.Now().UnixNano()%100000)
		line := "sleep 300." + mark + " & echo ready; wait"
		if spec != nil && sandbox.Available().Mode() != sandbox.ModeLandlock {
			line = "setsid sh -c 'sleep 301." + mark + "' & " + line
		}
		// sleep takes "300.X" as seconds: the mark names the process.
		var out lockedBuffer
		p, err := Start(Proc{Dir: dir, Argv: []string{"sh", "-c", line}, Env: BaseEnv(), Sandbox: spec}, &out)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; !strings.Contains(out.String(), "ready") && i < 200; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if len(alive(mark)) == 0 {
			t.Fatalf("the job's children never ran: %q", out.String())
		}
		begin := time.Now()
		p.Stop()
		select {
		case <-p.Done():
		default:
			t.Error("Stop returned before the job had ended")
		}
		if d := time.Since(begin); d > 10*time.Second {
			t.Errorf("Stop took %s", d)
		}
		time.Sleep(100 * time.Millisecond)
		if left := alive(mark); len(left) > 0 {
			t.Errorf("left running after Stop: %v", left)
		}
	})
}

// A program Harvey starts to outlive it (ollama serve) runs in a session
// of its own, outside the sandbox.
func TestStartKeptRunsInASessionOfItsOwn(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := StartKept(cmd); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if a := cmd.SysProcAttr; a == nil || !a.Setsid && !a.Setpgid {
		t.Errorf("not a group of its own: %+v", cmd.SysProcAttr)
	}
	if StartKept(exec.Command("/no/such/program")) == nil {
		t.Error("a missing program started")
	}
}

// The status line says how a command ended, and what the user is to do
// about it; the notes after it are each one line.
func TestResultStatusAndNotes(t *testing.T) {
	cases := []struct {
		r          Result
		want       string
		failed     bool
		wantInText string
	}{
		{Result{ExitCode: 0}, "[exit 0]", false, ""},
		{Result{ExitCode: 2}, "[exit 2]", true, ""},
		{Result{TimedOut: true, Duration: 1500 * time.Millisecond}, "[timed out after 2s;", true, "background: true"},
		{Result{Flooded: true}, "[stopped: output flood]", true, ""},
		{Result{Err: context.Canceled}, "[cancelled]", true, ""},
		{Result{Err: errors.New("no such file")}, "[error: no such file]", true, ""},
	}
	for _, c := range cases {
		if s := c.r.Status(); !strings.HasPrefix(s, c.want) || !strings.Contains(s, c.wantInText) {
			t.Errorf("%+v: status %q", c.r, s)
		}
		if c.r.Failed() != c.failed {
			t.Errorf("%+v: failed %v", c.r, c.r.Failed())
		}
	}
	r := Result{Output: []byte("out without newline"), Note: "sandbox: NOTE", Undone: []string{"undone: A", "undone: B"}, Changed: "changed: x.go"}
	text := r.Text(1000)
	if text != "out without newline\n[exit 0]\nsandbox: NOTE\nundone: A\nundone: B\nchanged: x.go" {
		t.Errorf("text %q", text)
	}
	if n := r.Notes(); strings.Join(n, "|") != "sandbox: NOTE|undone: A|undone: B|changed: x.go" {
		t.Errorf("notes %q", n)
	}
	if n := (Result{}).Notes(); len(n) != 0 {
		t.Errorf("notes of nothing: %q", n)
	}
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	if text := (Result{Output: []byte("token " + secret + "\n")}).Text(1000); strings.Contains(text, secret) {
		t.Errorf("a secret in the text: %q", text)
	}
}

// What the user watches while a command runs is redacted line by line,
// a secret split across writes included, and cut after echoLimit bytes;
// the last unfinished line is shown at the end; the result is whole.
func TestEchoIsRedactedAndCut(t *testing.T) {
	secret := "ghp_" + strings.Repeat("Z9y8", 9)
	var echo bytes.Buffer
	res := Run(context.Background(), Proc{Dir: t.TempDir(), Argv: []string{"sh", "-c", "printf 'key %s' " + secret[:10] + "; sleep 0.1; printf '%s\\n' " + secret[10:] + "; head -c 40000 /dev/zero | tr '\\0' x; echo; printf 'last words'"}, Env: BaseEnv(), Timeout: 20 * time.Second, Limit: 100000, Echo: &echo})
	if res.Failed() {
		t.Fatalf("%s", res.Text(500))
	}
	e := echo.String()
	if strings.Contains(e, secret) || !strings.Contains(e, "key ") {
		t.Errorf("the echo shows the secret or not the line: %q", e[:min(len(e), 200)])
	}
	if !strings.Contains(e, "[... more output; the whole result follows]") || len(e) > echoLimit+200 {
		t.Errorf("the echo was not cut: %d bytes", len(e))
	}
	if !strings.Contains(string(res.Output), "last words") {
		t.Error("the result lost its last line")
	}
	echo.Reset()
	Run(context.Background(), Proc{Dir: t.TempDir(), Argv: []string{"printf", "no newline at the end"}, Env: BaseEnv(), Timeout: 20 * time.Second, Echo: &echo})
	if echo.String() != "no newline at the end\n" {
		t.Errorf("the last unfinished line: %q", echo.String())
	}
}

// A command's environment under block: has no secret unless the user's
// env: names it.
func TestEnvForPassesOnlyWhatTheUserNamed(t *testing.T) {
	t.Setenv("HARVEY_TEST_API_KEY", "s3cret-value")
	t.Setenv("HARVEY_TEST_PLAIN", "plain")
	has := func(env []string, kv string) bool {
		for _, e := range env {
			if e == kv {
				return true
			}
		}
		return false
	}
	env := EnvFor(config.SandboxPolicy{})
	if has(env, "HARVEY_TEST_API_KEY=s3cret-value") || !has(env, "HARVEY_TEST_PLAIN=plain") {
		t.Errorf("block: passed a key or dropped a plain variable")
	}
	if env := EnvFor(config.SandboxPolicy{Env: []string{"HARVEY_TEST_API_KEY"}}); !has(env, "HARVEY_TEST_API_KEY=s3cret-value") {
		t.Error("a variable the user named was not passed")
	}
}
