package harvey

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/jobs"
	"github.com/harvey-agent/harvey/internal/outputstore"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// Background commands (internal/jobs): the model's run_command with
// background: true and your !cmd & start one through the same gate as any
// command — exec permission, safe mode, the approval (which says it keeps
// running), the sandbox — with the check that spans its whole life taken
// before it starts and run when it ends. Jobs end with the session.

// jobFirstWait is how long a new job's first output is waited for.
const jobFirstWait = time.Second

// jobStart is what starting a job says: its text for the model (or you),
// the line's summary, and whether it failed (it ended at once, not 0).
type jobStart struct {
	text, summary string
	failed        bool
}

// startJob starts line in the background for tool ("" for the user's own
// !cmd &) and returns the job with what it printed in its first second;
// a job that ended within it says so, with its exit status (issue 76).
func (g *Gate) startJob(ctx context.Context, tool, line string) (jobStart, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return jobStart{}, fmt.Errorf("no command given")
	}
	m := g.jobs
	if m.Full() {
		return jobStart{}, fmt.Errorf("%d background jobs run already, the most at once (job_kill or /jobs kill ends one): %s", jobs.MaxRunning, g.jobs.Brief())
	}
	argv, err := g.commandPolicy().Plan(line)
	if err != nil {
		g.audit("job", line, err, 0)
		return jobStart{}, err
	}
	if err := g.admit(ctx, runRequest{audit: "job", shown: line, tool: tool, argv: argv,
		action: "run in the background (it keeps running after this reply, until stopped or the session ends): " + line}); err != nil {
		return jobStart{}, err
	}
	// Its caches' private layer is its own (a layer is one overlay's at a
	// time), named by its id, which the next session reuses. Python
	// writes what it prints at once (a server's log is not held in a
	// pipe's buffer).
	spec := runner.Proc{Dir: g.ws.Root, Argv: argv, Env: append(runner.EnvFor(g.cfg.Sandbox), "PYTHONUNBUFFERED=1"),
		Sandbox: g.sandboxSpec(sandboxpolicy.SpecFor{Purpose: fmt.Sprintf("job-%d", m.NextID())})}
	out, kept := jobs.NewOutput(4*g.maxOut()), g.outputs.Job(m.NextID(), line)
	check := guard.Command(g.ws.Root, "background job: "+line)
	p, err := runner.Start(spec, io.MultiWriter(out, kept))
	if err != nil {
		kept.Close()
		check.Check()
		g.audit("job", line, err, 0)
		return jobStart{}, err
	}
	j := m.Add(line, tool == "", p, out, check)
	go func() { <-j.Ended(); kept.Close() }()
	g.log.Record("job", fmt.Sprintf("%d: %s", j.ID, line), audit.Success, 0)
	select {
	case <-p.Done():
	case <-time.After(jobFirstWait):
	case <-ctx.Done():
	}
	select {
	case <-p.Done():
		<-j.Ended() // its check, and its state, are final
		j.Told()
		state := j.State()
		return jobStart{text: fmt.Sprintf("job %d ended within its first second (%s): it is not running.\n%s", j.ID, state, j.Read(g.maxOut())),
			summary: "job " + fmt.Sprint(j.ID) + " " + state + " at once", failed: state != "exited 0"}, nil
	default:
	}
	reads := fmt.Sprintf("job_output %d reads what it prints, job_kill %d stops it, read_output {\"id\": \"job-%d\"} reads all of it", j.ID, j.ID, j.ID)
	if tool == "" {
		reads = fmt.Sprintf("/jobs %d shows what it prints, /jobs kill %d stops it", j.ID, j.ID)
	}
	return jobStart{text: fmt.Sprintf("started job %d (%s):\n%s", j.ID, reads, j.Read(g.maxOut())), summary: "started job " + fmt.Sprint(j.ID)}, nil
}

// moved makes a command you moved from the foreground (Ctrl-Z) a job, with
// its check and its kept output (now "job-N"); its result says so.
func (g *Gate) moved(r runRequest, res runner.Result, fg *jobs.Foreground, check jobs.Checker, kept *outputstore.Entry) runner.Result {
	j := g.jobs.AddMoved(fg, r.shown, r.tool == "", res.Moved, check)
	kept.Rename(fmt.Sprintf("job-%d", j.ID))
	go func() { <-j.Ended(); kept.Close() }()
	g.log.Record("job", fmt.Sprintf("%d: %s (moved from the foreground)", j.ID, r.shown), audit.Success, 0)
	res.Note = j.MovedNote(res.Duration, r.tool == "")
	return res
}

// readOutput reads a kept output (read_output) within the cap.
func (g *Gate) readOutput(q outputstore.Query) (string, error) { return g.outputs.Read(q, g.maxOut()) }

// readJob is what job id printed since the last read, and its state.
func (g *Gate) readJob(id int) (string, error) {
	j, ok := g.jobs.Get(id)
	if !ok {
		return "", fmt.Errorf("no job %d (%s)", id, g.jobs.Brief())
	}
	return j.Read(g.maxOut()), nil
}

// waitJob waits at most d until job id is ready (cond: a port, a URL of the
// session's servers, a text of its output), ends, or ctx ends.
func (g *Gate) waitJob(ctx context.Context, id int, cond string, d time.Duration) (string, bool, error) {
	j, ok := g.jobs.Get(id)
	if !ok {
		return "", false, fmt.Errorf("no job %d (%s)", id, g.jobs.Brief())
	}
	return j.WaitFor(ctx, cond, d, runner.DialSession, g.maxOut())
}

// killJob stops job id and everything it started.
func (g *Gate) killJob(id int) (string, error) {
	j, ok := g.jobs.Get(id)
	if !ok {
		return "", fmt.Errorf("no job %d (%s)", id, g.jobs.Brief())
	}
	j.Kill()
	g.log.Record("job stopped", fmt.Sprintf("%d: %s", j.ID, j.Command), audit.Success, 0)
	return j.Read(g.maxOut()), nil
}
