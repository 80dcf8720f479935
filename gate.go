package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/diff"
	"github.com/harvey-agent/harvey/internal/editmatch"
	"github.com/harvey-agent/harvey/internal/gittool"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/jobs"
	"github.com/harvey-agent/harvey/internal/lsp"
	"github.com/harvey-agent/harvey/internal/outputstore"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/skills"
	"github.com/harvey-agent/harvey/internal/tasks"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/walk"
	"github.com/harvey-agent/harvey/internal/wsfile"
	"github.com/harvey-agent/harvey/internal/wspath"
	"github.com/harvey-agent/harvey/internal/wsquery"
)

// Gate is the one gate every effect passes — a read, a change, a command,
// git — built from exactly what it uses: the workspace and its path
// policy, the config (permissions, safe mode, the sandbox, run_timeout),
// the audit log, the undo stack and the approval service. Tools and slash
// commands call the same entry points (readChecked, changeFile and the
// writes built on it, runGated, gitChecked), so they cannot disagree.
type Gate struct {
	ws        *Workspace
	cfg       *configfile.File
	log       *audit.Log
	undo      *wsfile.Journal // what each file change replaced, for /undo (shared by capped views)
	approvals *approvals      // asks before an effect (approval.go)
	maxOut    func() int      // the cap on one result: the main model's, or a turn's (capped)
	// bare: commands get no caches and no network at all (the model
	// check's throw-away sessions: a model under test leaves nothing a
	// later build of the user's loads).
	bare bool
	// embedFor chooses the embedder of the workspace index for find_code,
	// given the model the index is bound to (rag.WorkspaceEmbedder; nil, or
	// a nil answer: the lexical ranking alone).
	embedFor func(bound string) wsquery.Embedder
	// note shows the user a line about a wait (nil: nothing shown).
	note func(string)
	// hooks run before and after every tool call (internal/hooks; nil: none).
	hooks *hooks.Runner
	// jobs are the session's background commands (gate_jobs.go).
	jobs *jobs.Manager
	// tasks are the session's async calls of your tools (gate_tasks.go).
	tasks *tasks.Manager
	// outputs keeps every command's and job's output whole (read_output).
	outputs *outputstore.Store
	// skills are the session's skills (skills.go; nil: none).
	skills *skills.Set
	// buffers are an editor's files (harvey acp): reads and changes go
	// through them once the path gate has resolved the target (nil: the disk).
	buffers wsfile.Buffers
	// lsp are the language servers whose errors a change returns (gate_lsp.go).
	lsp *lsp.Manager
}

// audit records an effect with the outcome its error means.
func (g *Gate) audit(action, details string, err error, d time.Duration) {
	g.log.Record(action, details, audit.OutcomeOf(err), d)
}

// confirm asks the approval service about an effect of tool (a slash
// command is the user's own request).
func (g *Gate) confirm(ctx context.Context, tool, action string) error {
	return g.approvals.approve(ctx, approvalRequest{tool: tool, who: requesterOf(tool), action: action})
}

// readChecked is the read path shared by /read and read_file: the path gate
// (Tree.Resolve, permissions included) inside wsfile.Read.
func (g *Gate) readChecked(ctx context.Context, p string, offset, limit int) (*wsfile.Result, error) {
	rr, err := wsfile.ReadIn(ctx, g.ws.Tree, g.buffers, p, offset, limit, g.maxOut())
	if err != nil {
		g.audit("read", p, err, 0)
		return nil, err
	}
	g.audit("read", rr.Path, nil, 0)
	return rr, nil
}

// writeChecked is the write path shared by /write and write_file.
func (g *Gate) writeChecked(ctx context.Context, tool, p, content string) (string, error) {
	return g.changeFile(ctx, tool, p, content, nil)
}

// changeFile is the one write path (/write, write_file, edit_file): one
// transaction on a path resolved once (internal/wsfile: plan, the approval with
// the change as data, commit), then its record in the audit log. /apply
// plans and commits through the same steps, with one approval for all.
func (g *Gate) changeFile(ctx context.Context, tool, p, content string, edit wsfile.Edit) (string, error) {
	fc, err := wsfile.ChangeFileIn(ctx, g.ws.Tree, g.buffers, p, content, edit, changeApproval{g.approvals, tool}, g.undo, changedBy(tool))
	if fc == nil && err == nil {
		clean, _ := wspath.LexicalClean(p)
		return fmt.Sprintf("%s is unchanged (same content)", clean), nil
	}
	return g.changed(ctx, fc, p, err)
}

// planChange plans a change (/apply shows every plan before it asks).
func (g *Gate) planChange(p, content string) (*wsfile.Change, error) {
	fc, err := wsfile.PlanIn(context.Background(), g.ws.Tree, g.buffers, p, content, nil)
	if err != nil {
		_, err = g.changed(context.Background(), fc, p, err)
		return nil, err
	}
	return fc, nil
}

// commitChange writes a planned change that was approved.
func (g *Gate) commitChange(ctx context.Context, by string, fc *wsfile.Change) (string, error) {
	return g.changed(ctx, fc, fc.Target, fc.CommitIn(context.Background(), g.ws.Tree, g.undo, by))
}

// changed records a change's outcome in the audit log (a change that could
// not be computed, such as an edit whose old text is missing, touched
// nothing and is not an effect) and says what was done.
func (g *Gate) changed(ctx context.Context, fc *wsfile.Change, p string, err error) (string, error) {
	target := p
	if fc != nil {
		target = fc.Target
	}
	var cf wsfile.Failed
	if errors.As(err, &cf) {
		return "", cf.Unwrap()
	}
	g.audit("write", target, err, 0)
	switch {
	case err != nil:
		return "", err
	case fc.Note != "":
		return fc.Note + g.diagnose(ctx, fc), nil
	case fc.Existed:
		return fmt.Sprintf("wrote %s (%d bytes, %d lines)", fc.Target, len(fc.Content), termtext.CountLines(fc.Content)) + g.diagnose(ctx, fc), nil
	}
	return fmt.Sprintf("created %s (%d bytes, %d lines)", fc.Target, len(fc.Content), termtext.CountLines(fc.Content)) + g.diagnose(ctx, fc), nil
}

// editChecked applies one edit_file change through changeFile.
func (g *Gate) editChecked(ctx context.Context, tool, p, oldText, newText string, all bool) (string, error) {
	clean, err := wspath.LexicalClean(p)
	if err != nil {
		return "", err
	}
	return g.changeFile(ctx, tool, p, "", func(old string, exists bool) (string, string, error) {
		if oldText == "" {
			if exists {
				return "", "", wspath.Failed(clean, "the file exists: give old_text to edit it (empty old_text only creates a new file)", nil)
			}
			return newText, fmt.Sprintf("created %s (%d bytes, %d lines)", clean, len(newText), termtext.CountLines(newText)), nil
		}
		if !exists {
			return "", "", wspath.Failed(clean, "no such file (to create it, use an empty old_text)", fs.ErrNotExist)
		}
		r, err := editmatch.ApplyInView(old, oldText, newText, all)
		if err != nil {
			if strings.Contains(oldText, "[REDACTED") {
				err = fmt.Errorf("%w (old_text contains text Harvey redacted: secrets are hidden from you, so choose old_text that does not include them)", err)
			}
			return "", "", fmt.Errorf("%s: %w", clean, err)
		}
		return r.Text, editSummary(clean, old, r), nil
	})
}

// editSummary tells the model what changed: where, how the snippet matched,
// and a short diff (redacted like every file text the model sees).
func editSummary(name, old string, r *editmatch.Result) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "edited %s: lines %d-%d replaced by lines %d-%d", name, r.OldLines[0], r.OldLines[1], r.NewLines[0], r.NewLines[1])
	if r.Count > 1 {
		fmt.Fprintf(&sb, " (and %d more places)", r.Count-1)
	}
	if r.Level != editmatch.Exact {
		fmt.Fprintf(&sb, "; matched with %s", r.Level)
	}
	if r.Note != "" {
		fmt.Fprintf(&sb, "; %s", r.Note)
	}
	sb.WriteString("\n")
	// Diffed redacted, the whole texts first (redaction keeps lines), so a
	// hunk inside a key block shows none of it; redaction returns a text
	// it leaves unchanged without copying it, and the diff costs the
	// change, not the file.
	d := strings.SplitAfter(diff.Unified(name, secrets.Redact(old), secrets.Redact(r.Text), true), "\n")
	if len(d) > 2 {
		d = d[2:] // the ---/+++ header repeats the name
	}
	if len(d) > 40 {
		d = append(d[:40], fmt.Sprintf("... (%d more diff lines)\n", len(d)-40))
	}
	sb.WriteString(strings.Join(d, ""))
	return sb.String()
}

// changedBy names who made a change, for /undo list.
func changedBy(tool string) string {
	if tool == "" {
		return "/write"
	}
	return tool
}

func (g *Gate) listChecked(ctx context.Context, p string) (string, int, error) {
	text, n, err := wsfile.List(g.ws.Tree, p, g.maxOut())
	g.audit("list", p, err, 0)
	return text, n, err
}

func (g *Gate) searchChecked(ctx context.Context, pattern, p string) (walk.Hits, error) {
	if p == "" {
		p = "."
	}
	h, err := walk.Search(ctx, g.ws.Tree, &g.ws.secretFree, pattern, p, g.maxOut())
	g.audit("search", pattern+" in "+p, err, 0)
	return h, err
}

// findChecked is find_code: the workspace index (internal/wsquery),
// brought up to date, queried in plain words, each hit re-checked against
// the path policy, the answer within the result cap.
func (g *Gate) findChecked(ctx context.Context, question string) (string, int, error) {
	if strings.TrimSpace(question) == "" {
		return "", 0, errors.New("find_code: the question is empty")
	}
	rep := wsquery.Report{EmbedFor: g.embedFor, Waiting: func(done, total int) {
		switch {
		case g.note == nil:
		case total == 0:
			g.note("find_code waits for the workspace index, being built (counting the files)")
		default:
			g.note(fmt.Sprintf("find_code waits for the workspace index, being built (%d of %d files)", done, total))
		}
	}}
	hits, st, err := g.ws.index.Query(ctx, question, 5, rep)
	g.audit("find", question, err, 0)
	if err != nil {
		return "", 0, err
	}
	out := wsquery.FormatHits(hits, g.maxOut())
	if st.LeftOut != "" {
		out += "\n[" + st.LeftOut + "]"
	}
	return out, len(hits), nil
}

// runChecked is the command path shared by /run, ! and run_command: the
// line is planned (a shell only outside safe mode) and run through the one
// gate for programs, runGated.
func (g *Gate) runChecked(ctx context.Context, tool, line string, timeout time.Duration) (runner.Result, error) {
	return g.runCheckedEcho(ctx, tool, line, timeout, nil, false)
}

// runCheckedEcho is runChecked showing the output on echo as it arrives
// (and with streams, keeping stdout and stderr apart besides).
func (g *Gate) runCheckedEcho(ctx context.Context, tool, line string, timeout time.Duration, echo io.Writer, streams bool) (runner.Result, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return runner.Result{}, fmt.Errorf("no command given")
	}
	if len(line) > 4096 {
		return runner.Result{}, fmt.Errorf("command is too long (over 4096 bytes)")
	}
	argv, err := g.commandPolicy().Plan(line)
	if err != nil {
		g.audit("run", line, err, 0)
		return runner.Result{}, err
	}
	return g.runGated(ctx, runRequest{audit: "run", shown: line, tool: tool, action: "run: " + line, argv: argv, timeout: timeout, echo: echo, streams: streams})
}

func (g *Gate) commandPolicy() runner.CommandPolicy {
	return runner.CommandPolicy{SafeMode: g.cfg.SafeMode, Allowed: g.cfg.AllowedCommands}
}

// runRequest is a program to start, and on whose behalf.
type runRequest struct {
	audit   string // the audit action ("run", "tool")
	shown   string // the command as the audit log and escalation show it
	tool    string // the tool asking (its approval); "" for the user's own command
	action  string // the approval's text
	argv    []string
	timeout time.Duration // 0: run_timeout
	echo    io.Writer     // shows the output as it arrives (nil: nothing shown)
	streams bool          // keep stdout and stderr apart besides (runner.Result.StdoutPart, StderrPart)
	env     []string      // a tool's own variables (its env:), besides the filtered environment
	hosts   []string      // a tool's own hosts (its network:), besides sandbox.hosts
	// hook: a hook's command (internal/hooks): this on stdin, these
	// variables besides the filtered environment, stderr kept apart, its
	// own network when asked, and never the offer to run it again
	// outside the sandbox.
	hook  *hookRun
	layer string // its caches' layer (runAdmitted)
}

// hookRun is what a workspace's hook gets besides a command's (no more
// power: its input and its variables).
type hookRun struct {
	stdin    string
	env      []string
	readable string // the session's transcript (internal/hooks), read-only
}

// runGated is the one gate every program Harvey starts for the user or the
// model passes (git has its own, narrower one): exec permission, safe
// mode's allowlist, the approval (tools only), the sandboxed runner, the
// audit record, and in the REPL the offer to rerun what the sandbox blocked.
func (g *Gate) runGated(ctx context.Context, r runRequest) (runner.Result, error) {
	if err := g.admit(ctx, r); err != nil {
		return runner.Result{}, err
	}
	return g.runAdmitted(ctx, r, true), nil
}

// runAdmitted runs what admit allowed: sandboxed, with the check after it;
// escalate: in the REPL, a command the sandbox blocked may be asked about
// once more (never for a task in the background).
func (g *Gate) runAdmitted(ctx context.Context, r runRequest, escalate bool) runner.Result {
	if r.timeout <= 0 {
		r.timeout = time.Duration(g.cfg.RunTimeout)
	}
	r.layer = g.jobs.Layer("run") // a command moved to the background keeps its own
	want := sandboxpolicy.SpecFor{Purpose: r.layer, Hosts: r.hosts}
	if r.hook != nil && r.hook.readable != "" {
		want.Readable = []string{r.hook.readable} // the session's transcript, read-only
	}
	spec := runner.Proc{Dir: g.ws.Root, Argv: r.argv, Env: append(runner.EnvFor(g.cfg.Sandbox), r.env...), Timeout: r.timeout, Limit: g.maxOut(), Sandbox: g.sandboxSpec(want), Echo: r.echo, KeepStreams: r.streams}
	if r.hook != nil {
		spec.Stdin, spec.SplitStderr, spec.Env = r.hook.stdin, true, append(spec.Env, r.hook.env...)
	}
	res := g.runGuarded(ctx, r, spec)
	if r.hook != nil || !escalate {
		return res
	}
	if sb, ok := g.escalate(ctx, r.shown, res); ok {
		spec.Sandbox = sb
		if sb == nil {
			// The user's explicit yes to run it with all their rights:
			// what it does to .git is theirs, as their own git's is.
			res = runner.Run(ctx, spec)
			g.log.Record(r.audit+" outside the sandbox", r.shown, runOutcome(res), res.Duration)
			return res
		}
		r.audit += " with network"
		res = g.runGuarded(ctx, r, spec)
	}
	return res
}

// admit is the gate's word before any program starts for the user or the
// model (a command, a background job): exec permission, safe mode's
// allowlist, the refusal where there is no sandbox, and the approval
// (tools only); a refusal is audited.
func (g *Gate) admit(ctx context.Context, r runRequest) error {
	err := g.checkPermission(".", wspath.PermExec)
	if err == nil {
		err = g.commandPolicy().Allows(r.argv)
	}
	if err == nil {
		err = sandboxpolicy.NoSandboxRefusal(g.cfg.Sandbox)
	}
	if err == nil && r.tool != "" {
		err = g.confirm(ctx, r.tool, r.action)
	}
	if err != nil {
		g.audit(r.audit, r.shown, err, 0)
	}
	return err
}

// runGuarded runs a sandboxed program and then the check after every
// command (internal/guard): what it changed in .git that the user's next git
// would run is undone, said in the result and in the audit log.
func (g *Gate) runGuarded(ctx context.Context, r runRequest, spec runner.Proc) runner.Result {
	check := guard.Command(g.ws.Root, r.shown)
	var kept *outputstore.Entry
	var fg *jobs.Foreground
	if r.hook == nil {
		kept = g.outputs.Command(r.shown)
		spec.Keep = kept
	}
	if r.echo != nil && r.hook == nil { // a command you watch: Ctrl-Z may move it to the background
		fg = g.jobs.Hold(4*g.maxOut(), r.layer)
		spec.Detach = fg.Chan()
	}
	res := runner.Run(ctx, spec)
	if res.Moved != nil {
		return g.moved(r, res, fg, check, kept)
	}
	g.jobs.Release(fg)
	res.Kept = kept.Close()
	res.Undone, res.Changed = check.Check()
	g.log.Record(r.audit, r.shown, runOutcome(res), res.Duration)
	for _, u := range res.Undone {
		g.log.Record("undone", r.shown+": "+u, audit.Denied, 0)
	}
	return res
}

func runOutcome(res runner.Result) audit.Outcome {
	if res.Err != nil || res.ExitCode != 0 || res.TimedOut {
		return audit.Error
	}
	return audit.Success
}

// escalate asks, in the REPL only, whether a command the sandbox blocked
// may run once more with the one rule lifted: network for a refused
// connection, otherwise no sandbox at all. It is a second, explicit
// question (only "yes" counts; --yes and "always" do not answer it), and
// headless it is never asked.
func (g *Gate) escalate(ctx context.Context, line string, res runner.Result) (*sandbox.Spec, bool) {
	if res.Blocked == sandboxpolicy.RuleNone || ctx.Err() != nil {
		return nil, false
	}
	var sb *sandbox.Spec
	q := "Run it again OUTSIDE the sandbox, with all your rights? Type yes to allow: "
	if res.Blocked == sandboxpolicy.RuleNetwork {
		sb = g.sandboxSpec(sandboxpolicy.SpecFor{Purpose: "run", Network: true})
		q = "Run it again with network connections allowed (still sandboxed otherwise)? Type yes to allow: "
	}
	err := g.approvals.approve(ctx, approvalRequest{tool: "sandbox", who: bySandbox, action: line, note: res.Note, question: q})
	return sb, err == nil
}

// gitChecked is the one git path: git_command, /git and <!-- @git-status -->.
// Every path git is asked about or prints goes through the same policy as
// read_file: agents/, the denylist, and read permission.
func (g *Gate) gitChecked(ctx context.Context, sub string, args []string) (string, error) {
	out, err := runGit(ctx, g.ws, sub, args, g.maxOut())
	g.audit("git", strings.TrimSpace(sub+" "+strings.Join(args, " ")), err, 0)
	return out, err
}

// HasPermission reports whether perm is granted for the workspace-relative
// path rel under the agent's permissions: block.
func (g *Gate) HasPermission(rel, perm string) bool {
	return wspath.Permits(g.cfg.Permissions, rel, perm)
}

// checkPermission returns a refusal when perm is not granted for rel.
func (g *Gate) checkPermission(rel, perm string) error {
	if g.HasPermission(rel, perm) {
		return nil
	}
	return wspath.Refuse(rel, fmt.Sprintf("refused: no %s permission (see /permissions)", perm))
}

// commandSandboxFor is commandSandbox with the caches' private layers kept
// under purpose ("run" for commands, "mcp-NAME" for a server, which runs
// beside them and must not share a layer): internal/sandboxpolicy's CommandSpec.
func (g *Gate) commandSandboxFor(purpose string) *sandbox.Spec {
	return g.sandboxSpec(sandboxpolicy.SpecFor{Purpose: purpose})
}

// sandboxSpec is the command sandbox with w's purpose, readable paths and
// network, and the session's workspace, policy and safe mode.
func (g *Gate) sandboxSpec(w sandboxpolicy.SpecFor) *sandbox.Spec {
	w.Root, w.Policy, w.SafeMode, w.Allowed, w.Bare = g.ws.Root, g.cfg.Sandbox, g.cfg.SafeMode, g.cfg.AllowedCommands, g.bare
	if w.Purpose == "run" || strings.HasPrefix(w.Purpose, "job-") {
		w.Readable = append(w.Readable, g.skills.Dirs()...) // your skills' scripts, for commands only (never a server)
	}
	return sandboxpolicy.CommandSpec(w)
}

// resultCap is the cap on one tool result or command output this gate
// applies.
func (g *Gate) resultCap() int { return g.maxOut() }

// withCap is the gate for one tool call of a turn whose model has its own
// cap on a result (a route's model has its own window); 0 keeps the main
// model's. The view shares everything else: the audit log, the undo stack,
// the approvals.
func (g *Gate) withCap(n int) *Gate {
	if n <= 0 {
		return g
	}
	c := *g
	c.maxOut = func() int { return n }
	return &c
}

// capped is withCap for the built-in tools (gateOps).
func (g *Gate) capped(n int) gateOps { return g.withCap(n) }

// runGit runs a read-only git subcommand in the workspace (internal/gittool).
func runGit(ctx context.Context, ws *Workspace, sub string, args []string, limit int) (string, error) {
	return gittool.Run(ctx, ws.Tree, ws.git, sub, args, limit)
}
