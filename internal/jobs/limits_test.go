//go:build linux

package jobs

import (
	"os/exec"
	"strconv"
	"strings"
	"sync"
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
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := &cmdProc{cmd: c, done: make(chan struct{})}
	go func() { c.Wait(); close(p.done) }()
	t.Cleanup(func() { exec.Command("pkill", "-P", strconv.Itoa(c.Process.Pid)).Run(); c.Process.Kill() })
	return p
}

func (p *cmdProc) Pid() int              { return p.cmd.Process.Pid }
func (p *cmdProc) Done() <-chan struct{} { return p.done }
func (p *cmdProc) ExitCode() int         { return p.cmd.ProcessState.ExitCode() }
func (p *cmdProc) Stop() {
	exec.Command("pkill", "-KILL", "-P", strconv.Itoa(p.Pid())).Run()
	p.cmd.Process.Kill()
}

// What the running jobs use together is capped (issue 76): past the
// processes' cap, the job that runs the most is stopped — not the small one
// beside it — and that is said to you and in its output; past the memory
// cap the same. Under the caps, jobs run on.
func TestJobsUseIsCappedTogether(t *testing.T) {
	old := useEvery
	useEvery = 10 * time.Millisecond
	defer func() { useEvery = old }()
	var mu sync.Mutex
	var said []string
	capped := func(l string) { mu.Lock(); said = append(said, l); mu.Unlock() }

	m := &Manager{Limits: Limits{Procs: 6, ProcsSetting: "sandbox.jobs.processes (6)"}, Capped: capped}
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

	m2 := &Manager{Limits: Limits{Memory: 1, MemorySetting: "sandbox.jobs.memory (1 B)"}, Capped: capped}
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
