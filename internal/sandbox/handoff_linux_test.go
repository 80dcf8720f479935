//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The launchers a command is handed to rather than started for: the
// session network holder's inner launcher (StartJoined) and, where
// commands have no namespaces, Harvey's own spare (StartSpared). Each runs
// the command confined as a launcher started for it would, gives its
// output and exit status, and is stopped on request with what it started.

// handoffSpec is a command in ws that may write only there.
func handoffSpec(ws, line string) Spec {
	return Spec{Argv: []string{"/bin/sh", "-c", line}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: ws, Workspace: ws,
		RW: []string{ws}, RO: []string{"/usr", "/bin", "/lib", "/lib64", "/etc"}}
}

// checkHandoff runs three commands through start: one that writes in the
// workspace, prints and exits 4; one that tries to write outside; one
// stopped while it sleeps.
func checkHandoff(t *testing.T, ws string, start func(Spec) (*Joined, *bytes.Buffer, error)) {
	t.Helper()
	outside := t.TempDir()
	j, out, err := start(handoffSpec(ws, "echo in > in.txt && cat in.txt && echo to-stderr >&2; exit 4"))
	if err != nil {
		t.Fatal(err)
	}
	if code, err := j.Wait(); code != 4 || err != nil || !strings.Contains(out.String(), "in\n") || !strings.Contains(out.String(), "to-stderr") {
		t.Fatalf("exit %d (%v), output %q", code, err, out)
	}
	if j.Pid() <= 0 {
		t.Errorf("no launcher pid: %d", j.Pid())
	}
	j, out, err = start(handoffSpec(ws, "echo out > "+filepath.Join(outside, "out.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := j.Wait(); code == 0 {
		t.Errorf("a write outside succeeded: %q", out)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Error("a file appeared outside the workspace")
	}
	j, _, err = start(handoffSpec(ws, "setsid sleep 30 & sleep 30"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	begin := time.Now()
	j.Stop()
	j.Stop() // once is enough; twice is harmless
	if code, _ := j.Wait(); code == 0 || time.Since(begin) > 5*time.Second {
		t.Errorf("stopped: exit %d after %s", code, time.Since(begin))
	}
}

func TestHandoffToTheSessionHolder(t *testing.T) {
	s := Available()
	if !s.Enforced() || !s.NS {
		t.Skip("the session's network needs namespaces: " + s.Why + s.NSWhy)
	}
	ctl := filepath.Join(t.TempDir(), "ctl")
	holder := Spec{Argv: []string{"the session's network"}, Holder: true, Session: ctl}
	argv := s.Wrap(&holder)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{}
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the holder ends with its standard input
		cmd.Wait()
	}()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("the holder said %q", line)
	}
	ws := t.TempDir()
	checkHandoff(t, ws, func(spec Spec) (*Joined, *bytes.Buffer, error) {
		spec.Session = ctl
		s.Wrap(&spec)
		var out bytes.Buffer
		j, err := StartJoined(spec, nil, &out, &out)
		return j, &out, err
	})
	if _, err := SessionDial(ctl, 1); err == nil || !strings.Contains(err.Error(), "nothing listens") {
		t.Errorf("a port where nothing listens: %v", err)
	}
	if err := SessionForward(ctl, "127.0.0.1:1"); err == nil {
		t.Error("a host service with no proxy to reach it through was accepted")
	}
}

func TestHandoffToASpareWithoutNamespaces(t *testing.T) {
	s := Available()
	if !s.Enforced() || s.Landlock == 0 {
		t.Skip("Landlock-only commands need Landlock: " + s.Why + s.LandlockWhy)
	}
	ws := t.TempDir()
	checkHandoff(t, ws, func(spec Spec) (*Joined, *bytes.Buffer, error) {
		spec.NoNS = true
		s.Wrap(&spec)
		var out bytes.Buffer
		j, err := s.StartSpared(spec, strings.NewReader(""), &out, &out)
		return j, &out, err
	})
	local.mu.Lock()
	ready := local.ready
	local.mu.Unlock()
	if ready == nil || !alive(ready) {
		time.Sleep(2 * time.Second) // the refill after the last command
		local.mu.Lock()
		ready = local.ready
		local.mu.Unlock()
	}
	if ready == nil || !alive(ready) {
		t.Error("no spare waits for the next command")
	}
	if _, err := s.StartSpared(handoffSpec(ws, "true"), nil, nil, nil); err == nil {
		t.Error("a spec with namespaces was handed to a spare without them")
	}
}

// Commands at once (a reply's parallel calls): each takes a spare of its
// own, or starts one, and gets its own output and status.
func TestSparesForCommandsAtOnce(t *testing.T) {
	s := Available()
	if !s.Enforced() || s.Landlock == 0 {
		t.Skip("Landlock-only commands need Landlock: " + s.Why + s.LandlockWhy)
	}
	ws := t.TempDir()
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			spec := handoffSpec(ws, "echo command-"+strconv.Itoa(i)+"; exit "+strconv.Itoa(i))
			spec.NoNS = true
			s.Wrap(&spec)
			var out bytes.Buffer
			j, err := s.StartSpared(spec, nil, &out, &out)
			if err != nil {
				errs <- err
				return
			}
			code, err := j.Wait()
			if want := "command-" + strconv.Itoa(i) + "\n"; code != i || err != nil || out.String() != want {
				err = fmt.Errorf("command %d: exit %d (%v), output %q", i, code, err, out.String())
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
