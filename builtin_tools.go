package harvey

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/alive"
	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/gitargs"
	"github.com/harvey-agent/harvey/internal/outputstore"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/toolclass"
	"github.com/harvey-agent/harvey/internal/walk"
	"github.com/harvey-agent/harvey/internal/wsfile"
)

// The built-in tools. Descriptions are short on purpose: every token of
// schema costs seconds on a Raspberry Pi. Each handler reads its arguments
// with safe two-value assertions and delegates to the same functions the
// slash commands use.

// gateOps is what the built-in tools need from the gate (gate.go): the
// checked operations every effect passes through, and the cap on a result.
type gateOps interface {
	readChecked(ctx context.Context, p string, offset, limit int) (*wsfile.Result, error)
	writeChecked(ctx context.Context, tool, p, content string) (string, error)
	editChecked(ctx context.Context, tool, p, oldText, newText string, all bool) (string, error)
	listChecked(ctx context.Context, p string) (string, int, error)
	searchChecked(ctx context.Context, pattern, p string) (walk.Hits, error)
	findChecked(ctx context.Context, question string) (string, int, error)
	runCheckedEcho(ctx context.Context, tool, line string, timeout time.Duration, echo io.Writer, streams bool) (runner.Result, error)
	gitChecked(ctx context.Context, sub string, args []string) (string, error)
	startJob(ctx context.Context, tool, line string) (jobStart, error)
	readJob(id int) (string, error)
	waitJob(ctx context.Context, id int, cond string, d time.Duration) (string, bool, error)
	killJob(id int) (string, error)
	taskStatus(id int) (string, error)
	readOutput(q outputstore.Query) (string, error)
	taskWait(ctx context.Context, id int, d time.Duration) (string, error)
	skill(name, file string) (string, error)
	resultCap() int
	capped(n int) gateOps // the same gate with a turn's cap on a result
}

// builtinTools are the ten built-in tools, built from exactly what they
// use: the gate, the command timeout and where an approved command's
// output is shown. They reach nothing else of the session.
type builtinTools struct {
	gate       gateOps
	runTimeout func() time.Duration // run_timeout (read when a command runs: the config may change)
	echo       func() io.Writer     // the terminal in the REPL; nil headless
	width      func() int           // its columns (0: unknown)
}

// registerBuiltinTools registers the tools' schemas with t's handlers (a
// nil t gives the schemas alone).
func registerBuiltinTools(r *ToolRegistry, t *builtinTools) {
	var g gateOps
	if t != nil {
		g = t.gate
	}
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	integer := func(desc string) map[string]any { return map[string]any{"type": "integer", "description": desc} }
	obj := func(props map[string]any, required ...string) map[string]any {
		m := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			m["required"] = required
		}
		return m
	}

	read := obj(map[string]any{
		"path":   str("File path relative to the workspace"),
		"offset": integer("First line to read, from 1"),
		"limit":  integer("Number of lines to read"),
	}, "path")
	r.registerFunc("read_file", "Read a text file. Use offset/limit (lines) to page a large file.",
		read, typed(read, t.readFile, g), EffectRead, "built-in")

	write := obj(map[string]any{
		"path":    str("File path relative to the workspace"),
		"content": str("The complete new file content"),
	}, "path", "content")
	r.registerFunc("write_file", "Create or overwrite a file with the given content.",
		write, typed(write, t.writeFile, g), EffectWrite, "built-in")

	edit := obj(map[string]any{
		"path":        str("File path relative to the workspace"),
		"old_text":    str("The exact text to replace"),
		"new_text":    str("The replacement text"),
		"replace_all": map[string]any{"type": "boolean", "description": "Replace every match"},
	}, "path", "old_text", "new_text")
	r.registerFunc("edit_file", "Replace old_text with new_text in a file. old_text must match one place; copy it from read_file. Empty old_text creates a new file.",
		edit, typed(edit, t.editFile, g), EffectWrite, "built-in")

	list := obj(map[string]any{"path": str("Directory relative to the workspace (default .)")})
	r.registerFunc("list_files", "List a directory: names, sizes, directories end in /.",
		list, typed(list, t.listFiles, g), EffectRead, "built-in")

	search := obj(map[string]any{
		"pattern": str("Go regular expression"),
		"path":    str("File or directory to search (default .)"),
	}, "pattern")
	r.registerFunc("search_files", "Search file contents with a regular expression. Returns file:line: text.",
		search, typed(search, t.searchFiles, g), EffectRead, "built-in")

	find := obj(map[string]any{"question": str("What you look for, in plain words")}, "question")
	r.registerFunc("find_code", "Find the code that answers a question in plain words. Returns the best pieces with file and lines.",
		find, typed(find, t.findCode, g), EffectRead, "built-in")

	run := obj(map[string]any{
		"command":    str("The command line"),
		"timeout":    integer("Timeout in seconds"),
		"background": map[string]any{"type": "boolean", "description": "Keep it running (a server): returns a job id"},
	}, "command")
	r.registerFunc("run_command", "Run a shell command in the workspace and return its output and exit code.",
		run, typed(run, t.runCommand, g), EffectExec, "built-in")
	job := obj(map[string]any{"id": integer("Job id")}, "id")
	jobOut := obj(map[string]any{"id": integer("Job id"),
		"wait_for": map[string]any{"type": []string{"integer", "string"}, "description": "Wait until it listens on this port, this URL answers, or this text is in its output (instead of sleep)"},
		"timeout":  integer("Seconds to wait at most (default 30)")}, "id")
	r.registerFunc("job_output", "A background job's new output and state; with wait_for, once it is ready.",
		jobOut, typed(jobOut, t.jobOutput, g), EffectRead, sourceJobs)
	r.registerFunc("job_kill", "Stop a background job.",
		job, typed(job, t.jobKill, g), EffectRead, sourceJobs)
	outp := obj(map[string]any{"id": map[string]any{"type": []string{"integer", "string"}, "description": "The output's id, from a cut result (default: the last command's)"},
		"pattern": str("Only the lines matching this regular expression"), "offset": integer("First line, from 1"), "limit": integer("Number of lines")})
	r.registerFunc("read_output", "Read a command's or job's whole output (a cut result says its id): page it, or find lines.",
		outp, typed(outp, t.readOutput, g), EffectRead, sourceOutputs)
	task := obj(map[string]any{"id": integer("Task id")}, "id")
	r.registerFunc("task_status", "An async tool call's state, and its result once done.",
		task, typed(task, t.taskStatus, g), EffectRead, sourceTasks)
	wait := obj(map[string]any{"id": integer("Task id"), "timeout": integer("Seconds to wait at most (default 60)")}, "id")
	r.registerFunc("task_wait", "Wait for an async tool call to finish; returns its result.",
		wait, typed(wait, t.taskWait, g), EffectRead, sourceTasks)

	git := obj(map[string]any{
		"subcommand": map[string]any{"type": "string", "enum": gitargs.Subcommands},
		"args": map[string]any{"type": []string{"array", "string"}, "items": map[string]any{"type": "string"},
			"description": "Arguments as a list, e.g. [\"--oneline\", \"-n\", \"5\"] (a string is split like a shell)"},
	}, "subcommand")
	r.registerFunc("git_command", "Run a read-only git command.",
		git, typed(git, t.gitCommand, g), EffectRead, "built-in")
}

// registerDelegate registers the delegate tool, run by sub (nil: the
// schema alone). It changes nothing itself: every call its sub-agent makes
// passes the gate and asks as that call would.
func registerDelegate(r *ToolRegistry, sub func(ctx context.Context, task string) (string, error)) {
	args := map[string]any{"type": "object", "required": []string{"task"}, "properties": map[string]any{
		"task": map[string]any{"type": "string", "description": "What to find out or do, in words"}}}
	run := func(ctx context.Context, _ callScope, in map[string]any) (toolResult, error) {
		task, _ := in["task"].(string)
		if sub == nil {
			return toolResult{}, fmt.Errorf("no sub-agent here")
		}
		text, err := sub(ctx, task)
		return toolResult{Text: text, Summary: termtext.Plural(strings.Count(strings.TrimSpace(text), "\n")+1, "line") + " answered"}, err
	}
	r.registerFunc("delegate", "Hand a search or a question to a helper with its own context; returns its short answer. Use it to read many files.",
		args, run, EffectRead, sourceDelegate)
}

// The built-in tools' arguments, decoded after schema coercion: a handler
// gets a typed value, never a map to pick apart.
type (
	readArgs struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	writeArgs struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	editToolArgs struct {
		Path       string `json:"path"`
		OldText    string `json:"old_text"`
		NewText    string `json:"new_text"`
		ReplaceAll bool   `json:"replace_all"`
	}
	listArgs struct {
		Path string `json:"path"`
	}
	searchArgs struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
	}
	runArgs struct {
		Command    string `json:"command"`
		Timeout    int    `json:"timeout"`
		Background bool   `json:"background"`
	}
	jobArgs struct {
		ID      int `json:"id"`
		WaitFor any `json:"wait_for"` // a port, a URL or a text
		Timeout int `json:"timeout"`
	}
	taskArgs struct {
		ID      int `json:"id"`
		Timeout int `json:"timeout"`
	}
	gitToolArgs struct {
		Subcommand string `json:"subcommand"`
		Args       any    `json:"args"` // a list of strings, or one string split like a shell
	}
)

// typed makes a tool function from a typed handler: the arguments, which
// the caller has coerced to the schema once (the executor, or GetTool's
// handler), are decoded into In. A handler whose result is text the model
// reads takes the gate capped to the call's limit (g.capped(call.maxOut)).
func typed[In any](_ map[string]any, h func(context.Context, gateOps, callScope, In) (toolResult, error), g gateOps) toolFunc {
	return func(ctx context.Context, call callScope, args map[string]any) (toolResult, error) {
		if args == nil {
			args = map[string]any{}
		}
		b, err := json.Marshal(args)
		if err != nil {
			return toolResult{}, fmt.Errorf("arguments: %v", err)
		}
		var in In
		if err := json.Unmarshal(b, &in); err != nil {
			return toolResult{}, toolclass.Mark(toolclass.InvalidArgs, fmt.Errorf("arguments: %v", err))
		}
		return h(ctx, g, call, in)
	}
}

const maxContentBytes = 10 << 20

func (t *builtinTools) readFile(ctx context.Context, g gateOps, call callScope, in readArgs) (toolResult, error) {
	if in.Offset < 0 || in.Limit < 0 {
		return toolResult{}, fmt.Errorf("offset and limit must not be negative")
	}
	rr, err := g.capped(call.maxOut).readChecked(ctx, in.Path, in.Offset, in.Limit)
	if err != nil {
		return toolResult{}, err
	}
	sum := termtext.Plural(rr.Lines, "line")
	if rr.Binary {
		sum = rr.Text
	} else if rr.NextLine > 0 {
		sum += fmt.Sprintf(" (more from line %d)", rr.NextLine)
	}
	return toolResult{Text: rr.Text, Summary: sum}, nil
}

func (t *builtinTools) writeFile(ctx context.Context, g gateOps, _ callScope, in writeArgs) (toolResult, error) {
	if len(in.Content) > maxContentBytes {
		return toolResult{}, fmt.Errorf("content is too large (over 10 MB)")
	}
	msg, err := g.writeChecked(ctx, "write_file", in.Path, in.Content)
	return toolResult{Text: msg}, err
}

func (t *builtinTools) editFile(ctx context.Context, g gateOps, _ callScope, in editToolArgs) (toolResult, error) {
	if len(in.NewText) > maxContentBytes || len(in.OldText) > maxContentBytes {
		return toolResult{}, fmt.Errorf("old_text or new_text is too large (over 10 MB)")
	}
	msg, err := g.editChecked(ctx, "edit_file", in.Path, in.OldText, in.NewText, in.ReplaceAll)
	return toolResult{Text: msg}, err
}

func (t *builtinTools) listFiles(ctx context.Context, g gateOps, call callScope, in listArgs) (toolResult, error) {
	text, n, err := g.capped(call.maxOut).listChecked(ctx, cmp.Or(in.Path, "."))
	return toolResult{Text: text, Summary: termtext.Plural(n, "entry")}, err
}

func (t *builtinTools) searchFiles(ctx context.Context, g gateOps, call callScope, in searchArgs) (toolResult, error) {
	h, err := g.capped(call.maxOut).searchChecked(ctx, in.Pattern, in.Path)
	return toolResult{Text: h.Text, Summary: h.Summary()}, err
}

// findArgs is find_code's argument.
type findArgs struct {
	Question string `json:"question"`
}

func (t *builtinTools) findCode(ctx context.Context, g gateOps, call callScope, in findArgs) (toolResult, error) {
	text, n, err := g.capped(call.maxOut).findChecked(ctx, in.Question)
	sum := termtext.Plural(n, "piece") + " found"
	if n == 0 {
		sum = "nothing found"
	}
	return toolResult{Text: text, Summary: sum}, err
}

func (t *builtinTools) runCommand(ctx context.Context, g gateOps, call callScope, in runArgs) (toolResult, error) {
	if in.Timeout < 0 {
		return toolResult{}, fmt.Errorf("timeout must not be negative")
	}
	timeout := t.runTimeout()
	if d := time.Duration(in.Timeout) * time.Second; in.Timeout > 0 && d < timeout {
		timeout = d
	}
	g = g.capped(call.maxOut)
	if in.Background {
		st, err := g.startJob(ctx, "run_command", in.Command)
		return toolResult{Text: st.text, Summary: st.summary, Failed: st.failed}, err
	}
	echo, stop := alive.Watch(t.echo(), t.width)
	res, err := g.runCheckedEcho(ctx, "run_command", in.Command, timeout, echo, call.streams)
	stop()
	if err != nil {
		return toolResult{}, err
	}
	return commandResult(res, g.resultCap()), nil
}

func (t *builtinTools) jobOutput(ctx context.Context, g gateOps, call callScope, in jobArgs) (toolResult, error) {
	if in.WaitFor == nil || fmt.Sprint(in.WaitFor) == "" {
		text, err := g.capped(call.maxOut).readJob(in.ID)
		return toolResult{Text: text}, err
	}
	d := 30 * time.Second
	if in.Timeout > 0 {
		d = min(time.Duration(in.Timeout)*time.Second, t.runTimeout())
	}
	text, ready, err := g.capped(call.maxOut).waitJob(ctx, in.ID, fmt.Sprint(in.WaitFor), d)
	return toolResult{Text: text, Summary: map[bool]string{true: "ready", false: "not ready"}[ready], Failed: !ready}, err
}

func (t *builtinTools) jobKill(ctx context.Context, g gateOps, call callScope, in jobArgs) (toolResult, error) {
	text, err := g.capped(call.maxOut).killJob(in.ID)
	return toolResult{Text: text, Summary: "stopped"}, err
}

func (t *builtinTools) readOutput(_ context.Context, g gateOps, call callScope, in outputstore.Query) (toolResult, error) {
	text, err := g.capped(call.maxOut).readOutput(in)
	if errors.Is(err, outputstore.ErrNone) {
		err = toolclass.Mark(toolclass.InvalidArgs, err)
	}
	return toolResult{Text: text, Summary: termtext.FirstLine(text)}, err
}

func (t *builtinTools) taskStatus(ctx context.Context, g gateOps, call callScope, in taskArgs) (toolResult, error) {
	text, err := g.capped(call.maxOut).taskStatus(in.ID)
	return toolResult{Text: text, Summary: termtext.FirstLine(text)}, err
}

func (t *builtinTools) taskWait(ctx context.Context, g gateOps, call callScope, in taskArgs) (toolResult, error) {
	text, err := g.capped(call.maxOut).taskWait(ctx, in.ID, time.Duration(in.Timeout)*time.Second)
	return toolResult{Text: text, Summary: termtext.FirstLine(text)}, err
}

func (t *builtinTools) gitCommand(ctx context.Context, g gateOps, call callScope, in gitToolArgs) (toolResult, error) {
	var argv []string
	switch v := in.Args.(type) {
	case nil:
	case string:
		if strings.TrimSpace(v) != "" {
			var err error
			if argv, _, err = runner.ParseCommandLine(v); err != nil {
				return toolResult{}, fmt.Errorf("args: %v", err)
			}
		}
	case []any:
		for i, x := range v {
			s, err := coerce.ScalarText(x)
			if err != nil {
				return toolResult{}, fmt.Errorf("args item %d: %v", i, err)
			}
			argv = append(argv, s)
		}
	default:
		return toolResult{}, fmt.Errorf("args must be a list of strings (or one string), got %s", coerce.JSONType(v))
	}
	out, err := g.capped(call.maxOut).gitChecked(ctx, in.Subcommand, argv)
	return toolResult{Text: out}, err
}

// commandResult is the result of run_command: its text for the model, its
// status for the user (✗ when it failed), its notes, and what Claude Code's
// hooks read as a Bash tool_response.
func commandResult(r runner.Result, limit int) toolResult {
	text := r.Text(limit)
	resp := map[string]any{"output": text, "status": "ok", "success": !r.Failed(), "exit_code": r.ExitCode,
		"interrupted": r.TimedOut || r.Err != nil && errors.Is(r.Err, context.Canceled), "isImage": false}
	if r.Failed() {
		resp["status"] = "error"
	}
	if r.StdoutPart != nil || r.StderrPart != nil {
		resp["stdout"] = secrets.RedactWindow(string(r.StdoutPart))
		resp["stderr"] = secrets.RedactWindow(string(r.StderrPart))
	} else {
		resp["stdout"], resp["stderr"] = secrets.RedactWindow(string(r.Output)), "" // one pipe: both, as the model reads them
	}
	class := map[bool]string{true: toolclass.Timeout}[r.TimedOut]
	return toolResult{Text: text, Summary: r.Status(), Failed: r.Failed(), Notes: r.Notes(), Response: resp, Class: class}
}
