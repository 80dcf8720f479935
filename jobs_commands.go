package harvey

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// cmdJobs is /jobs: the session's background jobs (command, state, age,
// the ports they listen on); /jobs ID shows what one printed since you
// last looked (the model's job_output keeps a read position of its own);
// /jobs log ID all it printed that is kept; /jobs kill ID stops one;
// /jobs restart ID stops it and starts its command again, as yours.
func cmdJobs(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	id := 0
	if len(args) == 2 && (args[0] == "log" || args[0] == "restart") {
		if _, err := fmt.Sscan(args[1], &id); err != nil {
			return a.commands.usageError("jobs")
		}
		j, err := a.gate.jobs.Find(id)
		if err != nil {
			return err
		}
		if args[0] == "log" {
			fmt.Fprintln(out, j.Log())
			return nil
		}
		j.Kill()
		st, err := a.gate.startJob(ctx, "", j.Command)
		if err == nil {
			fmt.Fprintln(out, st.text)
		}
		return err
	}
	switch {
	case len(args) == 0:
		list := a.gate.jobs.List()
		if len(list) == 0 {
			fmt.Fprintln(out, "no background jobs (!cmd & starts one; so does the model's run_command with background: true)")
		}
		for _, j := range list {
			fmt.Fprintln(out, j.Line())
		}
		return nil
	case len(args) == 2 && args[0] == "kill":
		if _, err := fmt.Sscan(args[1], &id); err != nil {
			return a.commands.usageError("jobs")
		}
		text, err := a.gate.killJob(id)
		if err == nil {
			fmt.Fprintln(out, termtext.Sanitize(text))
		}
		return err
	case len(args) == 1:
		if _, err := fmt.Sscan(args[0], &id); err != nil {
			return a.commands.usageError("jobs")
		}
		j, err := a.gate.jobs.Find(id)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, j.ReadYours(a.maxOut())) // the terminal's writer shows colours, escapes the rest
		return nil
	}
	return a.commands.usageError("jobs")
}

// cmdTasks is /tasks: the session's async calls of your tools (tool,
// state, what runs); /tasks ID shows one's result; /tasks kill ID stops one.
func cmdTasks(_ context.Context, a *Agent, args []string, out io.Writer) error {
	var id int
	switch {
	case len(args) == 0:
		list := a.gate.tasks.List()
		if len(list) == 0 {
			fmt.Fprintln(out, "no tasks (a tool of yours with async: true starts one when the model calls it)")
		}
		for _, t := range list {
			fmt.Fprintln(out, termtext.Sanitize(t.Line()))
		}
		return nil
	case len(args) == 2 && args[0] == "kill":
		if _, err := fmt.Sscan(args[1], &id); err != nil {
			return a.commands.usageError("tasks")
		}
		text, err := a.gate.killTask(id)
		if err == nil {
			fmt.Fprintln(out, termtext.Sanitize(text))
		}
		return err
	case len(args) == 1:
		if _, err := fmt.Sscan(args[0], &id); err != nil {
			return a.commands.usageError("tasks")
		}
		t, ok := a.gate.tasks.Get(id)
		if !ok {
			return fmt.Errorf("no task %d (%s)", id, a.gate.taskList())
		}
		// The user's look: what the model has or has not read stays so.
		res, err := t.Result()
		fmt.Fprintln(out, termtext.Sanitize(t.Line()))
		if err != nil {
			res = "error: " + err.Error()
		}
		if res != "" {
			fmt.Fprintln(out, termtext.Sanitize(res))
		}
		return nil
	}
	return a.commands.usageError("tasks")
}

// cmdPorts is /ports: the ports of the session's network published on
// the user's machine (and those the jobs listen on, not published);
// /ports PORT publishes one on 127.0.0.1; /ports close PORT stops.
func cmdPorts(_ context.Context, a *Agent, args []string, out io.Writer) error {
	switch {
	case len(args) == 0:
		published := runner.PublishedPorts()
		for _, p := range published {
			fmt.Fprintf(out, "%d  published: http://127.0.0.1:%d reaches the session's port %d\n", p, p, p)
		}
		var quiet []string
		for _, j := range a.gate.jobs.List() {
			for _, p := range j.Ports() {
				if !slices.Contains(published, p) {
					quiet = append(quiet, fmt.Sprintf("%d (job %d)", p, j.ID))
				}
			}
		}
		if len(quiet) > 0 {
			fmt.Fprintf(out, "listening in the session, not published: %s; /ports PORT publishes one\n", strings.Join(quiet, ", "))
		}
		if len(published) == 0 && len(quiet) == 0 {
			fmt.Fprintln(out, "no ports: a server a command starts is reachable from the session's other commands; /ports PORT makes it reachable from your machine's 127.0.0.1")
		}
		return nil
	case len(args) == 2 && args[0] == "close":
		p, err := strconv.Atoi(args[1])
		if err != nil {
			return a.commands.usageError("ports")
		}
		if !runner.UnpublishPort(p) {
			return fmt.Errorf("port %d is not published", p)
		}
		fmt.Fprintf(out, "port %d no longer published\n", p)
		return nil
	case len(args) == 1:
		p, err := strconv.Atoi(args[0])
		if err != nil {
			return a.commands.usageError("ports")
		}
		if err := runner.PublishPort(p, a.Config.Sandbox.Hosts); err != nil {
			return fmt.Errorf("/ports %d: %v", p, err)
		}
		fmt.Fprintf(out, "http://127.0.0.1:%d now reaches the session's port %d (only from your machine; /ports close %d stops it)\n", p, p, p)
		return nil
	}
	return a.commands.usageError("ports")
}
