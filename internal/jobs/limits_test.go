//go:build linux

package jobs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
)

// cmdProc is a job's program that is a real process tree.
type cmdProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startProc(t *testing.T, script string) *cmdProc {
	t.Helper()
	c := exec.Command("sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own: Stop ends all of it
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := &cmdProc{cmd: c, done: make(chan struct{})}
	go func() { c.Wait(); close(p.done) }()
	t.Cleanup(p.Stop)
	return p
}

func (p *cmdProc) Pid() int              { return p.cmd.Process.Pid }
func (p *cmdProc) Done() <-chan struct{} { return p.done }
func (p *cmdProc) ExitCode() int         { return p.cmd.ProcessState.ExitCode() }
func (p *cmdProc) Stop()                 { syscall.Kill(-p.Pid(), syscall.SIGKILL) }

// What the running jobs use together is capped (issue 76): past the
// processes' cap, the job that runs the most is stopped — not the small one
// beside it — and that is said to you and in its output; past the memory
// cap the same. Under the caps, jobs run on.
func TestJobsUseIsCappedTogether(t *testing.T) {
	var mu sync.Mutex
	var said []string
	capped := func(l string) { mu.Lock(); said = append(said, l); mu.Unlock() }

	m := &Manager{Limits: Limits{Procs: 6, ProcsSetting: "sandbox.jobs.processes (6)"}, Capped: capped, UseEvery: 10 * time.Millisecond}
	small := m.Add("sleep", false, startProc(t, "sleep 30"), NewOutput(4096), nil)
	time.Sleep(100 * time.Millisecond)
	if !small.Running() {
		t.Fatal("a job under the cap was stopped")
	}
	big := m.Add("forks", false, startProc(t, "for i in 1 2 3 4 5 6 7 8; do sleep 30 & done; wait"), NewOutput(4096), nil)
	select {
	case <-big.checked:
	case <-time.After(10 * time.Second):
		t.Fatal("the job past the cap runs on")
	}
	if !small.Running() {
		t.Error("the small job was stopped, not the one that ran the most")
	}
	if out := big.Read(4096); !strings.Contains(out, "job 2 stopped: the session's jobs ran") || !strings.Contains(out, "past sandbox.jobs.processes (6)") {
		t.Errorf("its output does not say why: %q", out)
	}
	mu.Lock()
	if len(said) != 1 || !strings.Contains(said[0], "job 2 stopped") {
		t.Errorf("said %q", said)
	}
	mu.Unlock()
	small.Kill()

	m2 := &Manager{Limits: Limits{Memory: 1, MemorySetting: "sandbox.jobs.memory (1 B)"}, Capped: capped, UseEvery: 10 * time.Millisecond}
	j := m2.Add("sleep", false, startProc(t, "sleep 30"), NewOutput(4096), nil)
	select {
	case <-j.checked:
	case <-time.After(10 * time.Second):
		t.Fatal("the job past the memory cap runs on")
	}
	if out := j.Read(4096); !strings.Contains(out, "of memory together, past sandbox.jobs.memory (1 B)") {
		t.Errorf("%q", out)
	}
}

// The caps your config sets, or the defaults: half of this machine's
// memory, 1024 processes; each named by its setting.
func TestLimitsOf(t *testing.T) {
	l := LimitsOf(config.JobLimits{})
	if total := MachineMemory(); total == 0 || l.Memory != total/2 || l.Procs != DefaultProcesses {
		t.Errorf("defaults: %+v of %d", l, MachineMemory())
	}
	if !strings.Contains(l.MemorySetting, "sandbox.jobs.memory (") || !strings.Contains(l.MemorySetting, "50% of this machine's") {
		t.Errorf("%q", l.MemorySetting)
	}
	l = LimitsOf(config.JobLimits{Memory: config.Size{Bytes: 2 << 30}, Processes: 64})
	if l.Memory != 2<<30 || l.Procs != 64 || l.MemorySetting != "sandbox.jobs.memory (2.0 GB)" || l.ProcsSetting != "sandbox.jobs.processes (64)" {
		t.Errorf("%+v", l)
	}
}

// Memory is counted by each page's share: a job whose processes share
// their pages (a database's buffers and its connections, here a process
// that touched 64 MB and forked four children) is not stopped for the
// sum of their RSS, which counts each shared page five times.
func TestSharedMemoryCountsOnce(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	m := &Manager{Limits: Limits{Memory: 200 << 20, Procs: 100, MemorySetting: "sandbox.jobs.memory (200 MB)"}, UseEvery: 10 * time.Millisecond}
	ready := filepath.Join(t.TempDir(), "ready")
	j := m.Add("shared", false, startProc(t, py+` -c "
import os, time
b = bytearray(64 << 20)
for i in range(0, len(b), 4096): b[i] = 1
for _ in range(4):
    if os.fork() == 0:
        time.sleep(30); os._exit(0)
open('`+ready+`', 'w').close()
time.sleep(30)"`), NewOutput(4096), nil)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never got ready")
		}
	}
	if u := treeUse(j.proc.Pid(), 100); u.RSS < 250<<20 {
		t.Skipf("the children's RSS does not count the shared pages here (%d MB)", u.RSS>>20)
	}
	time.Sleep(200 * time.Millisecond)
	if !j.Running() {
		t.Errorf("a job was stopped for pages its processes share: %q", j.Read(4096))
	}
	j.Kill()
}
