package harvey

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/usertools"
)

// Async calls of your tools (internal/tasks): a tool with async: true is
// admitted as its call would be — its paths checked, exec permission, safe
// mode, the approval (which says it keeps running) — and then runs in the
// background under the same sandbox and timeout, with the check after it.
// The model reads it with task_status and task_wait; a result it has not
// read goes into the next turn. Tasks end with the session.

// maxTaskWait is the longest one task_wait call waits.
const maxTaskWait = 10 * time.Minute

// startTask starts t's call in the background and says which task it is.
func (g *Gate) startTask(ctx context.Context, t *usertools.Tool, args map[string]any) (string, error) {
	r, err := g.userToolRequest(t, args, ", in the background: the conversation goes on")
	if err != nil {
		return "", err
	}
	if err := g.admit(ctx, r); err != nil {
		return "", err
	}
	limit := g.resultCap()
	tk, err := g.tasks.Start(t.Name, strings.TrimPrefix(r.shown, t.Name+": "), func(tctx context.Context) (string, error) {
		res := g.runAdmitted(tctx, r, false)
		return res.Text(limit), nil
	})
	if err != nil {
		g.audit("task", r.shown, err, 0)
		return "", err
	}
	g.log.Record("task", fmt.Sprintf("%d: %s", tk.ID, r.shown), audit.Success, 0)
	return fmt.Sprintf("started task %d: it runs in the background; task_wait %d gets its result (task_status %d says how it is)", tk.ID, tk.ID, tk.ID), nil
}

// taskStatus is task id's state, and its result once it has ended.
func (g *Gate) taskStatus(id int) (string, error) {
	tk, ok := g.tasks.Get(id)
	if !ok {
		return "", fmt.Errorf("no task %d (%s)", id, g.taskList())
	}
	return tk.Report(), nil
}

// taskWait waits for task id at most d (0: a minute), then reports it.
func (g *Gate) taskWait(ctx context.Context, id int, d time.Duration) (string, error) {
	tk, ok := g.tasks.Get(id)
	if !ok {
		return "", fmt.Errorf("no task %d (%s)", id, g.taskList())
	}
	if d <= 0 {
		d = time.Minute
	}
	tk.Wait(ctx, min(d, maxTaskWait))
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return tk.Report(), nil
}

// killTask stops task id.
func (g *Gate) killTask(id int) (string, error) {
	tk, ok := g.tasks.Get(id)
	if !ok {
		return "", fmt.Errorf("no task %d (%s)", id, g.taskList())
	}
	tk.Kill()
	g.log.Record("task stopped", fmt.Sprintf("%d: %s", tk.ID, tk.Shown), audit.Success, 0)
	return tk.Report(), nil
}

// taskList names the session's tasks in a few words.
func (g *Gate) taskList() string {
	var ids []string
	for _, tk := range g.tasks.List() {
		ids = append(ids, fmt.Sprintf("%d %s", tk.ID, tk.State()))
	}
	if len(ids) == 0 {
		return "none in this session: a task ends with the session that started it"
	}
	return "this session's tasks: " + strings.Join(ids, ", ")
}

// untoldTasks is the results of the tasks that ended since the model last
// heard of them, for the head of the next turn's message, within budget
// bytes in all (each result cut to its share).
func (g *Gate) untoldTasks(budget int) string {
	list := g.tasks.Untold()
	if len(list) == 0 {
		return ""
	}
	share := max(256, budget/len(list))
	var b strings.Builder
	for _, tk := range list {
		r := tk.Report()
		if len(r) > share {
			r = strings.ToValidUTF8(r[:share], "") + fmt.Sprintf("\n[cut; task_status %d shows it whole]", tk.ID)
		}
		fmt.Fprintf(&b, "[a background task ended: %s]\n", secrets.Redact(r))
	}
	return strings.TrimSpace(b.String())
}
