package harvey

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/jobs"
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

// startJob starts line in the background for tool ("" for the user's own
// !cmd &) and returns the job with what it printed in its first second.
func (g *Gate) startJob(ctx context.Context, tool, line string) (string, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return "", fmt.Errorf("no command given")
	}
	argv, err := g.commandPolicy().Plan(line)
	if err != nil {
		g.audit("job", line, err, 0)
		return "", err
	}
	if err := g.admit(ctx, runRequest{audit: "job", shown: line, tool: tool, argv: argv,
		action: "run in the background (it keeps running after this reply, until stopped or the session ends): " + line}); err != nil {
		return "", err
	}
	m := g.jobs
	// Its caches' private layer is its own (a layer is one overlay's at a
	// time), named by its id, which the next session reuses.
	spec := runner.Proc{Dir: g.ws.Root, Argv: argv, Env: runner.EnvFor(g.cfg.Sandbox), Sandbox: g.sandboxSpec(sandboxpolicy.SpecFor{Purpose: fmt.Sprintf("job-%d", m.NextID())})}
	out := jobs.NewOutput(4 * g.maxOut())
	check := guard.Command(g.ws.Root, "background job: "+line)
	p, err := runner.Start(spec, out)
	if err != nil {
		check.Check()
		g.audit("job", line, err, 0)
		return "", err
	}
	j := m.Add(line, p, out, check)
	g.log.Record("job", fmt.Sprintf("%d: %s", j.ID, line), audit.Success, 0)
	select {
	case <-p.Done():
	case <-time.After(jobFirstWait):
	case <-ctx.Done():
	}
	return fmt.Sprintf("started job %d (job_output %d reads what it prints, job_kill %d stops it):\n%s", j.ID, j.ID, j.ID, j.Read(g.maxOut())), nil
}

// readJob is what job id printed since the last read, and its state.
func (g *Gate) readJob(id int) (string, error) {
	j, ok := g.jobs.Get(id)
	if !ok {
		return "", fmt.Errorf("no job %d (%s)", id, g.jobList())
	}
	return j.Read(g.maxOut()), nil
}

// killJob stops job id and everything it started.
func (g *Gate) killJob(id int) (string, error) {
	j, ok := g.jobs.Get(id)
	if !ok {
		return "", fmt.Errorf("no job %d (%s)", id, g.jobList())
	}
	j.Kill()
	g.log.Record("job stopped", fmt.Sprintf("%d: %s", j.ID, j.Command), audit.Success, 0)
	return j.Read(g.maxOut()), nil
}

// jobList names the session's jobs in a few words.
func (g *Gate) jobList() string {
	var ids []string
	for _, j := range g.jobs.List() {
		ids = append(ids, fmt.Sprintf("%d %s", j.ID, j.State()))
	}
	if len(ids) == 0 {
		return "none started"
	}
	return "jobs: " + strings.Join(ids, ", ")
}
