package harvey

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The built-in tools. Descriptions are short on purpose: every token of
// schema costs seconds on a Raspberry Pi. Each handler reads its arguments
// with safe two-value assertions and delegates to the same functions the
// slash commands use.

func registerBuiltinTools(r *ToolRegistry, a *Agent) {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	integer := func(desc string) map[string]any { return map[string]any{"type": "integer", "description": desc} }
	obj := func(props map[string]any, required ...string) map[string]any {
		m := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			m["required"] = required
		}
		return m
	}

	r.register("read_file", "Read a text file. Use offset/limit (lines) to page a large file.",
		obj(map[string]any{
			"path":   str("File path relative to the workspace"),
			"offset": integer("First line to read, from 1"),
			"limit":  integer("Number of lines to read"),
		}, "path"), a.toolReadFile, EffectRead, "built-in")

	r.register("write_file", "Create or overwrite a file with the given content.",
		obj(map[string]any{
			"path":    str("File path relative to the workspace"),
			"content": str("The complete new file content"),
		}, "path", "content"), a.toolWriteFile, EffectWrite, "built-in")

	r.register("edit_file", "Replace old_text with new_text in a file. old_text must match one place; copy it from read_file. Empty old_text creates a new file.",
		obj(map[string]any{
			"path":        str("File path relative to the workspace"),
			"old_text":    str("The exact text to replace"),
			"new_text":    str("The replacement text"),
			"replace_all": map[string]any{"type": "boolean", "description": "Replace every match"},
		}, "path", "old_text", "new_text"), a.toolEditFile, EffectWrite, "built-in")

	r.register("list_files", "List a directory: names, sizes, directories end in /.",
		obj(map[string]any{"path": str("Directory relative to the workspace (default .)")}),
		a.toolListFiles, EffectRead, "built-in")

	r.register("search_files", "Search file contents with a regular expression. Returns file:line: text.",
		obj(map[string]any{
			"pattern": str("Go regular expression"),
			"path":    str("File or directory to search (default .)"),
		}, "pattern"), a.toolSearchFiles, EffectRead, "built-in")

	r.register("run_command", "Run a shell command in the workspace and return its output and exit code.",
		obj(map[string]any{
			"command": str("The command line"),
			"timeout": integer("Timeout in seconds"),
		}, "command"), a.toolRunCommand, EffectExec, "built-in")

	r.register("git_command", "Run a read-only git command.",
		obj(map[string]any{
			"subcommand": map[string]any{"type": "string", "enum": GitSubcommands},
			"args": map[string]any{"type": []string{"array", "string"}, "items": map[string]any{"type": "string"},
				"description": "Arguments as a list, e.g. [\"--oneline\", \"-n\", \"5\"] (a string is split like a shell)"},
		}, "subcommand"), a.toolGitCommand, EffectRead, "built-in")
}

// argString reads a string argument with a safe assertion.
func argString(args map[string]any, key string, required bool) (string, error) {
	v, present := args[key]
	if !present || v == nil {
		if required {
			return "", fmt.Errorf("missing required argument %q", key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %q must be a string, got %s", key, jsonType(v))
	}
	if required && s == "" {
		return "", fmt.Errorf("argument %q must be a non-empty string", key)
	}
	return s, nil
}

// argInt reads an optional integer argument (after coercion, a float64 or
// int from JSON).
func argInt(args map[string]any, key string) (int, error) {
	v, present := args[key]
	if !present || v == nil {
		return 0, nil
	}
	switch n := v.(type) {
	case float64:
		if n != float64(int(n)) {
			return 0, fmt.Errorf("argument %q must be a whole number", key)
		}
		return int(n), nil
	case int:
		return n, nil
	case int64:
		return int(n), nil
	}
	return 0, fmt.Errorf("argument %q must be an integer, got %s", key, jsonType(v))
}

// argBool reads an optional boolean argument.
func argBool(args map[string]any, key string) (bool, error) {
	v, present := args[key]
	if !present || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("argument %q must be true or false, got %s", key, jsonType(v))
	}
	return b, nil
}

func (a *Agent) toolReadFile(ctx context.Context, args map[string]any) (string, error) {
	p, err := argString(args, "path", true)
	if err != nil {
		return "", err
	}
	offset, err := argInt(args, "offset")
	if err != nil {
		return "", err
	}
	limit, err := argInt(args, "limit")
	if err != nil {
		return "", err
	}
	if offset < 0 || limit < 0 {
		return "", fmt.Errorf("offset and limit must not be negative")
	}
	rr, err := a.readChecked(ctx, p, offset, limit)
	if err != nil {
		return "", err
	}
	return rr.Text, nil
}

// readChecked is the read path shared by /read and read_file: the path gate
// (resolveWorkspacePath, permissions included) inside ReadWorkspaceFile.
func (a *Agent) readChecked(ctx context.Context, p string, offset, limit int) (*ReadResult, error) {
	rr, err := ReadWorkspaceFile(a.Workspace, p, offset, limit, a.resultCap(ctx))
	if err != nil {
		a.audit("read", p, err, 0)
		return nil, err
	}
	a.audit("read", rr.Path, nil, 0)
	return rr, nil
}

func (a *Agent) toolWriteFile(ctx context.Context, args map[string]any) (string, error) {
	p, err := argString(args, "path", true)
	if err != nil {
		return "", err
	}
	content, err := argString(args, "content", false)
	if err != nil {
		return "", err
	}
	if _, ok := args["content"]; !ok {
		return "", fmt.Errorf("missing required argument %q", "content")
	}
	if len(content) > 10<<20 {
		return "", fmt.Errorf("content is too large (over 10 MB)")
	}
	return a.writeChecked(ctx, "write_file", p, content)
}

// writeChecked is the write path shared by /write, /apply and write_file.
func (a *Agent) writeChecked(ctx context.Context, tool, p, content string) (string, error) {
	return a.changeFile(ctx, tool, p, func(string, bool) (string, string, error) {
		return content, "", nil
	})
}

// fileChange is a planned write: the file it changes (a link's target, not
// its name), what it holds now and what it will hold.
type fileChange struct {
	asked   string // the path as given
	target  string // the resolved workspace path that changes
	old     string
	existed bool
	content string
	note    string // the result text, when the change computes one
}

// diff is the change as the approval shows it.
func (fc *fileChange) diff() string { return unifiedDiff(fc.target, fc.old, fc.content, fc.existed) }

// action names the change for the approval: the real target, and the
// spelling it was asked for when that differs (a link).
func (fc *fileChange) action() string {
	s := "write " + quotePath(fc.target)
	if asked, _ := lexicalClean(fc.asked); asked != fc.target {
		s += " (through " + quotePath(asked) + ")"
	}
	return s
}

// planChange resolves p through the path gate, reads what it holds and
// computes the new content. A nil change means the content is unchanged.
func (a *Agent) planChange(p string, change func(old string, exists bool) (string, string, error)) (*fileChange, error) {
	old, exists, target, err := ReadForDiff(a.Workspace, p)
	if err != nil {
		a.audit("write", p, err, 0)
		return nil, err
	}
	content, note, err := change(old, exists)
	if err != nil {
		return nil, err
	}
	if exists && wouldDestroySecrets(old, content) {
		err := refuse(target, errDestroySecrets)
		a.audit("write", target, err, 0)
		return nil, err
	}
	fc := &fileChange{asked: p, target: target, old: old, existed: exists, content: content, note: note}
	if exists && old == content {
		return nil, nil
	}
	return fc, nil
}

// commitChange writes a planned change if the file still holds what the
// plan (and the approval) saw, then records it for the audit log and /undo.
func (a *Agent) commitChange(by string, fc *fileChange) (string, error) {
	if now, nowExists, _, err := ReadForDiff(a.Workspace, fc.target); err != nil || now != fc.old || nowExists != fc.existed {
		err := refuse(fc.target, "the file changed while the change was being approved; read it again")
		a.audit("write", fc.target, err, 0)
		return "", err
	}
	existed, err := WriteWorkspaceFile(a.Workspace, fc.target, []byte(fc.content))
	a.audit("write", fc.target, err, 0)
	if err != nil {
		return "", err
	}
	a.recordChange(by, fc.target, fc.old, fc.existed, fc.content)
	if fc.note != "" {
		return fc.note, nil
	}
	verb := "created"
	if existed {
		verb = "wrote"
	}
	return fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, fc.target, len(fc.content), countLines(fc.content)), nil
}

// changeFile is the one write path (/write, write_file, edit_file; /apply
// plans and commits through the same steps): plan (the path gate and the
// new content), approval with a diff of the real target, commit.
func (a *Agent) changeFile(ctx context.Context, tool, p string, change func(old string, exists bool) (string, string, error)) (string, error) {
	fc, err := a.planChange(p, change)
	if err != nil {
		return "", err
	}
	if fc == nil {
		clean, _ := lexicalClean(p)
		return fmt.Sprintf("%s is unchanged (same content)", clean), nil
	}
	if err := a.confirm(ctx, tool, fc.action(), fc.diff()); err != nil {
		a.audit("write", fc.target, err, 0)
		return "", err
	}
	return a.commitChange(changedBy(tool), fc)
}

func (a *Agent) toolEditFile(ctx context.Context, args map[string]any) (string, error) {
	p, err := argString(args, "path", true)
	if err != nil {
		return "", err
	}
	oldText, err := argString(args, "old_text", false)
	if err != nil {
		return "", err
	}
	newText, err := argString(args, "new_text", false)
	if err != nil {
		return "", err
	}
	if _, ok := args["new_text"]; !ok {
		return "", fmt.Errorf("missing required argument %q", "new_text")
	}
	all, err := argBool(args, "replace_all")
	if err != nil {
		return "", err
	}
	if len(newText) > 10<<20 || len(oldText) > 10<<20 {
		return "", fmt.Errorf("old_text or new_text is too large (over 10 MB)")
	}
	return a.editChecked(ctx, "edit_file", p, oldText, newText, all)
}

// editChecked applies one edit_file change through changeFile.
func (a *Agent) editChecked(ctx context.Context, tool, p, oldText, newText string, all bool) (string, error) {
	clean, err := lexicalClean(p)
	if err != nil {
		return "", err
	}
	return a.changeFile(ctx, tool, p, func(old string, exists bool) (string, string, error) {
		if oldText == "" {
			if exists {
				return "", "", refuse(clean, "the file exists: give old_text to edit it (empty old_text only creates a new file)")
			}
			return newText, fmt.Sprintf("created %s (%d bytes, %d lines)", clean, len(newText), countLines(newText)), nil
		}
		if !exists {
			return "", "", refuse(clean, "no such file (to create it, use an empty old_text)")
		}
		r, err := applyEdit(old, oldText, newText, all)
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
func editSummary(name, old string, r *editResult) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "edited %s: lines %d-%d replaced by lines %d-%d", name, r.OldLines[0], r.OldLines[1], r.NewLines[0], r.NewLines[1])
	if r.Count > 1 {
		fmt.Fprintf(&sb, " (and %d more places)", r.Count-1)
	}
	if r.Level != levelExact {
		fmt.Fprintf(&sb, "; matched with %s", r.Level)
	}
	sb.WriteString("\n")
	// Diffed redacted (redaction keeps lines), so a hunk inside a key block
	// shows none of it.
	d := strings.SplitAfter(unifiedDiff(name, redactSecrets(old), redactSecrets(r.Text), true), "\n")
	if len(d) > 2 {
		d = d[2:] // the ---/+++ header repeats the name
	}
	if len(d) > 40 {
		d = append(d[:40], fmt.Sprintf("... (%d more diff lines)\n", len(d)-40))
	}
	sb.WriteString(strings.Join(d, ""))
	return sb.String()
}

const errDestroySecrets = "the new content has Harvey's [REDACTED] markers where the file holds secrets; writing it would destroy them. Change only the lines you need with edit_file"

// wouldDestroySecrets reports whether content carries redaction markers
// over a file that holds secrets: the model saw the file redacted and is
// writing the markers back in place of the real values.
func wouldDestroySecrets(old, content string) bool {
	return strings.Contains(content, "[REDACTED") && !strings.Contains(old, "[REDACTED") && redactSecrets(old) != old
}

// changedBy names who made a change, for /undo list.
func changedBy(tool string) string {
	if tool == "" {
		return "/write"
	}
	return tool
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func (a *Agent) toolListFiles(ctx context.Context, args map[string]any) (string, error) {
	p, err := argString(args, "path", false)
	if err != nil {
		return "", err
	}
	if p == "" {
		p = "."
	}
	return a.listChecked(ctx, p)
}

func (a *Agent) listChecked(ctx context.Context, p string) (string, error) {
	text, _, err := ListWorkspaceDir(a.Workspace, p, a.resultCap(ctx))
	a.audit("list", p, err, 0)
	return text, err
}

func (a *Agent) toolSearchFiles(ctx context.Context, args map[string]any) (string, error) {
	pattern, err := argString(args, "pattern", true)
	if err != nil {
		return "", err
	}
	p, err := argString(args, "path", false)
	if err != nil {
		return "", err
	}
	return a.searchChecked(ctx, pattern, p)
}

func (a *Agent) searchChecked(ctx context.Context, pattern, p string) (string, error) {
	if p == "" {
		p = "."
	}
	text, _, err := SearchWorkspace(a.Workspace, pattern, p, a.resultCap(ctx))
	a.audit("search", pattern+" in "+p, err, 0)
	return text, err
}

func (a *Agent) toolRunCommand(ctx context.Context, args map[string]any) (string, error) {
	line, err := argString(args, "command", true)
	if err != nil {
		return "", err
	}
	secs, err := argInt(args, "timeout")
	if err != nil {
		return "", err
	}
	if secs < 0 {
		return "", fmt.Errorf("timeout must not be negative")
	}
	timeout := time.Duration(a.Config.RunTimeout)
	if secs > 0 && time.Duration(secs)*time.Second < timeout {
		timeout = time.Duration(secs) * time.Second
	}
	res, err := a.runChecked(ctx, "run_command", line, timeout)
	if err != nil {
		return "", err
	}
	return res.Text(a.resultCap(ctx)), nil
}

// runChecked is the command path shared by /run, ! and run_command: the
// line is planned (a shell only outside safe mode) and run through the one
// gate for programs, runGated.
func (a *Agent) runChecked(ctx context.Context, tool, line string, timeout time.Duration) (RunResult, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return RunResult{}, fmt.Errorf("no command given")
	}
	if len(line) > 4096 {
		return RunResult{}, fmt.Errorf("command is too long (over 4096 bytes)")
	}
	argv, err := a.commandPolicy().plan(line)
	if err != nil {
		a.audit("run", line, err, 0)
		return RunResult{}, err
	}
	return a.runGated(ctx, runRequest{audit: "run", shown: line, tool: tool, action: "run: " + line, argv: argv, timeout: timeout})
}

func (a *Agent) commandPolicy() CommandPolicy {
	return CommandPolicy{SafeMode: a.Config.SafeMode, Allowed: a.Config.AllowedCommands}
}

// runRequest is a program to start, and on whose behalf.
type runRequest struct {
	audit   string // the audit action ("run", "tool")
	shown   string // the command as the audit log and escalation show it
	tool    string // the tool asking (its approval); "" for the user's own command
	action  string // the approval's text
	argv    []string
	timeout time.Duration // 0: run_timeout
}

// runGated is the one gate every program Harvey starts for the user or the
// model passes (git has its own, narrower one): exec permission, safe
// mode's allowlist, the approval (tools only), the sandboxed runner, the
// audit record, and in the REPL the offer to rerun what the sandbox blocked.
func (a *Agent) runGated(ctx context.Context, r runRequest) (RunResult, error) {
	err := a.checkPermission(".", PermExec)
	if err == nil {
		err = a.commandPolicy().allows(r.argv)
	}
	if err == nil && r.tool != "" {
		err = a.confirm(ctx, r.tool, r.action, "")
	}
	if err != nil {
		a.audit(r.audit, r.shown, err, 0)
		return RunResult{}, err
	}
	if r.timeout <= 0 {
		r.timeout = time.Duration(a.Config.RunTimeout)
	}
	spec := procSpec{Dir: a.Workspace.Root, Argv: r.argv, Env: baseEnv(), Timeout: r.timeout, Limit: a.resultCap(ctx), Sandbox: a.commandSandbox()}
	res := runProcess(ctx, spec)
	a.Audit.Record(r.audit, r.shown, runOutcome(res), res.Duration)
	if sb, ok := a.escalate(ctx, r.shown, res); ok {
		spec.Sandbox = sb
		res = runProcess(ctx, spec)
		what := r.audit + " outside the sandbox"
		if sb != nil {
			what = r.audit + " with network"
		}
		a.Audit.Record(what, r.shown, runOutcome(res), res.Duration)
	}
	return res, nil
}

func runOutcome(res RunResult) AuditOutcome {
	if res.Err != nil || res.ExitCode != 0 || res.TimedOut {
		return AuditError
	}
	return AuditSuccess
}

// escalate asks, in the REPL only, whether a command the sandbox blocked
// may run once more with the one rule lifted: network for a refused
// connection, otherwise no sandbox at all. It is a second, explicit
// question (only "yes" counts; --yes and "always" do not answer it), and
// headless it is never asked.
func (a *Agent) escalate(ctx context.Context, line string, res RunResult) (*sandboxSpec, bool) {
	if res.Blocked == ruleNone || !a.Interactive || a.In == nil || ctx.Err() != nil {
		return nil, false
	}
	var sb *sandboxSpec
	q := "Run it again OUTSIDE the sandbox, with all your rights? Type yes to allow: "
	if res.Blocked == ruleNetwork {
		sb = a.commandSandbox()
		sb.Network = true
		q = "Run it again with network connections allowed (still sandboxed otherwise)? Type yes to allow: "
	}
	fmt.Fprintf(a.Err, "%s the sandbox blocked: %s\n  %s\n", a.colorize("33", "!"), sanitizeForTerminal(line), sanitizeForTerminal(res.Note))
	ans, err := a.In.ReadLine(q)
	if err != nil || strings.ToLower(strings.TrimSpace(ans)) != "yes" {
		return nil, false
	}
	return sb, true
}

func (a *Agent) toolGitCommand(ctx context.Context, args map[string]any) (string, error) {
	sub, err := argString(args, "subcommand", true)
	if err != nil {
		return "", err
	}
	var argv []string
	switch v := args["args"].(type) {
	case nil:
	case string:
		if strings.TrimSpace(v) != "" {
			argv, _, err = parseCommandLine(v)
			if err != nil {
				return "", fmt.Errorf("args: %v", err)
			}
		}
	case []any:
		for i, x := range v {
			s, err := scalarText(x)
			if err != nil {
				return "", fmt.Errorf("args item %d: %v", i, err)
			}
			argv = append(argv, s)
		}
	default:
		return "", fmt.Errorf("args must be a list of strings (or one string), got %s", jsonType(v))
	}
	return a.gitChecked(ctx, sub, argv)
}

// gitChecked is the one git path: git_command, /git and <!-- @git-status -->.
// Every path git is asked about or prints goes through the same policy as
// read_file: agents/, the denylist, and read permission.
func (a *Agent) gitChecked(ctx context.Context, sub string, args []string) (string, error) {
	out, err := RunGit(ctx, a.Workspace, sub, args, a.resultCap(ctx))
	a.audit("git", strings.TrimSpace(sub+" "+strings.Join(args, " ")), err, 0)
	return out, err
}
