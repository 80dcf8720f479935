package jobs

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// What the running jobs use together is capped (issue 76): a dev server, a
// database and a watcher fit; a job that leaks memory, or forks without
// end, is stopped before the machine is the user's no more. Every
// useEvery while jobs run, each running job's process tree is measured
// (its processes and their resident memory, confirmed by its proportional
// share where RSS says a cap is past); past a cap, the job that uses
// the most of it is stopped, and that is said to you (Capped) and in its
// output, which the model reads with its end.

// useEvery is how often the running jobs are measured (Manager.UseEvery,
// for the tests, when set).
const useEvery = time.Second

// Use is what a job's processes use.
type Use struct {
	Procs int
	RSS   int64 // bytes
}

// Limits cap what the running jobs use together (a zero field: no cap).
// Memory and Procs name their settings in what is said.
type Limits struct {
	Memory, Procs int64
	MemorySetting string // "sandbox.jobs.memory (2.0 GB, 50% of this machine's)"
	ProcsSetting  string
}

// meter measures the running jobs every useEvery until none runs.
func (m *Manager) meter() {
	t := time.NewTicker(cmp.Or(m.UseEvery, useEvery))
	defer t.Stop()
	for range t.C {
		var running []*Job
		for _, j := range m.List() {
			if j.Running() && !j.capped.Load() {
				running = append(running, j)
			}
		}
		if len(running) == 0 {
			m.mu.Lock()
			idle := !slices.ContainsFunc(m.jobs, (*Job).Running) // none added meanwhile
			m.metering = !idle
			m.mu.Unlock()
			if idle {
				return
			}
			continue
		}
		m.capUse(running)
	}
}

// capUse stops the job that uses the most of what the running jobs use
// past a cap.
func (m *Manager) capUse(running []*Job) {
	uses := make([]Use, len(running))
	var total Use
	for i, j := range running {
		uses[i] = treeUse(j.proc.Pid(), int(m.Limits.Procs)+64)
		total.Procs += uses[i].Procs
		total.RSS += uses[i].RSS
	}
	if m.Limits.Memory > 0 && total.RSS > m.Limits.Memory {
		// RSS counts a shared page once per process: the cap is decided
		// on each page's share (PSS), so a database with many
		// connections is not stopped for its shared buffers.
		total.RSS = 0
		for i, j := range running {
			uses[i].RSS = treePSS(j.proc.Pid(), int(m.Limits.Procs)+64)
			total.RSS += uses[i].RSS
		}
	}
	var what string
	worst := 0
	switch {
	case m.Limits.Memory > 0 && total.RSS > m.Limits.Memory:
		for i := range uses {
			if uses[i].RSS > uses[worst].RSS {
				worst = i
			}
		}
		what = fmt.Sprintf("the session's jobs used %s of memory together, past %s", termtext.Size(total.RSS), m.Limits.MemorySetting)
	case m.Limits.Procs > 0 && int64(total.Procs) > m.Limits.Procs:
		for i := range uses {
			if uses[i].Procs > uses[worst].Procs {
				worst = i
			}
		}
		what = fmt.Sprintf("the session's jobs ran %d processes together, past %s", total.Procs, m.Limits.ProcsSetting)
	default:
		return
	}
	j := running[worst]
	j.capped.Store(true)
	line := fmt.Sprintf("job %d stopped: %s; it used the most (raise the setting in your config, or stop a job you do not need)", j.ID, what)
	j.out.Write([]byte("\n[harvey: " + line + "]\n"))
	if m.Capped != nil {
		m.Capped("⚑ " + termtext.Sanitize(line))
	}
	go j.Kill()
}

// Default caps: half of this machine's memory, 1024 processes.
const (
	DefaultMemoryPercent = 50
	DefaultProcesses     = 1024
)

// LimitsOf is the caps your config sets (sandbox.jobs), or their defaults.
func LimitsOf(l config.JobLimits) Limits {
	mem := l.Memory
	if mem == (config.Size{}) {
		mem = config.Size{Percent: DefaultMemoryPercent}
	}
	out := Limits{Memory: mem.Of(MachineMemory()), Procs: int64(cmp.Or(l.Processes, DefaultProcesses))}
	share := ""
	if mem.Percent > 0 {
		share = fmt.Sprintf(", %g%% of this machine's", mem.Percent)
	}
	out.MemorySetting = fmt.Sprintf("sandbox.jobs.memory (%s%s)", termtext.Size(out.Memory), share)
	out.ProcsSetting = fmt.Sprintf("sandbox.jobs.processes (%d)", out.Procs)
	return out
}
