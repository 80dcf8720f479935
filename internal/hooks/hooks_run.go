package hooks

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// Running hooks around a tool call (hooks.go has the contract). Your own
// hooks run in a sandbox made for hooks (exec below says why); a workspace's run
// through the gate every command passes (runGated: exec permission, safe
// mode, the sandbox with the workspace writable, the check after it, the
// audit log). None is asked about: hooks come from your own config, or
// from a workspace's once you confirmed them. A firing that blocks,
// changes the arguments or amends a result is one line for you, a "hook"
// event in --output stream-json and an entry in the audit log; /status
// counts them. With no hooks there is nothing to do: a call costs what it
// did before hooks.

// Host is what the hooks need of the session: a hook run as the session
// runs hooks, the audit log, and the user's lines.
type Host interface {
	// RunHook runs h with stdin and the variables env added: a workspace's
	// through the gate every command passes (sandboxed, checked after,
	// audited); one of the user's own in the sandbox made for hooks (of
	// the home, what its command names and its readable: and writable:
	// lists; the transcript readable; your environment less its secrets;
	// Result.Outside naming a write it was refused), checked after like a
	// command; one your config marks unsandboxed as your program, audited.
	RunHook(ctx context.Context, h config.HookConfig, stdin string, env []string, readable string) (runner.Result, error)
	Audit(action, detail string, err error)
	Summary(tool string, args map[string]any) string // a call in a few words
	Say(tone termtext.Tone, line string)             // a firing (Plain) or a hook that cannot be used (Warn)
	Emit(fields map[string]any)                      // a firing, as a "hook" event of --output
}

// Outcome is a call's result as the hooks read and may amend it.
type Outcome struct {
	Text, Summary string
	Failed        bool
	Notes         []string
	Response      map[string]any // Claude Code's tool_response (nil: Harvey's own shape)
	Class         string         // how it ended where Failed does not say (internal/toolclass)
}

// Runner runs the session's hooks.
type Runner struct {
	hooks   []config.HookConfig // in the order they run
	host    Host
	root    string       // the workspace
	version string       // Harvey's, in the transcript
	fired   atomic.Int64 // firings that blocked, changed or amended something
	ran     atomic.Int64 // hooks run
	pending string       // context from session_start hooks, for the next prompt
	// sandboxSaid: the hooks whose sandbox refusal was said in full.
	sandboxSaid sync.Map
	transcript  hookTranscript // hooks_transcript.go
}

// New is the runner for the hooks of cfg in the workspace root (nil when
// there are none, so that a call without hooks does nothing more).
func New(hooks []config.HookConfig, host Host, root, version string) *Runner {
	var ok []config.HookConfig
	for _, h := range hooks {
		if err := h.Check(); err != nil {
			host.Say(termtext.Warn, fmt.Sprintf("warning: hook %s not used: %v", configfile.HookShown(h), err))
			continue
		}
		ok = append(ok, h)
	}
	if len(ok) == 0 {
		return nil
	}
	return &Runner{hooks: Sort(ok), host: host, root: root, version: version}
}

// Blocked is a call a hook did not let run: the model reads why.
type Blocked struct{ hook, reason string }

func (e *Blocked) Error() string {
	return fmt.Sprintf("blocked by your hook (%s): %s", e.hook, e.reason)
}

func (e *Blocked) Unwrap() error { return refusal.ErrDenied }

// Pre runs the pre_tool hooks that apply, in order: each may block the
// call or give it new arguments (which must fit the tool's schema, and
// are what later hooks and the tool see), and add context the model reads
// with the call's result (added: Claude Code's additionalContext).
func (r *Runner) Pre(ctx context.Context, tool, id string, schema, args map[string]any) (_ map[string]any, added string, _ error) {
	if r == nil {
		return args, "", nil
	}
	root := r.root
	var contexts []string
	for _, h := range r.hooks {
		if !hookApplies(h, config.HookPre, tool, args, claudeInput(tool, args, root)) {
			continue
		}
		ans, err := r.run(ctx, h, config.HookPre, tool, id, args, nil)
		if err != nil {
			if r.failed(h, tool, err) {
				return nil, "", &Blocked{hook: configfile.HookShown(h), reason: "the hook failed (" + termtext.OneLine(err.Error()) + "), and a failing pre_tool hook blocks the call"}
			}
			continue
		}
		if ans.block {
			r.tell(h, tool, "blocked", ans.reason)
			return nil, "", &Blocked{hook: configfile.HookShown(h), reason: ans.reason}
		}
		if ans.modify != nil {
			next := ans.modify
			if err := fitsSchema(schema, next); err != nil {
				r.tell(h, tool, "blocked", "its new arguments do not fit the tool: "+err.Error())
				return nil, "", &Blocked{hook: configfile.HookShown(h), reason: "the hook's new arguments do not fit " + tool + ": " + err.Error()}
			}
			r.tell(h, tool, "modified", r.host.Summary(tool, next))
			args = next
		}
		if ans.context != "" {
			r.tell(h, tool, "added context", fmt.Sprintf("%d bytes", len(ans.context)))
			contexts = append(contexts, ans.context)
		}
	}
	return args, clipContext(strings.Join(contexts, "\n")), nil
}

// ReadsStreams reports whether a post_tool hook applies to this call:
// then a command's stdout and stderr are kept apart for it.
func (r *Runner) ReadsStreams(tool string, args map[string]any) bool {
	if r == nil || tool != "run_command" {
		return false
	}
	in := claudeInput(tool, args, r.root)
	return slices.ContainsFunc(r.hooks, func(h config.HookConfig) bool { return hookApplies(h, config.HookPost, tool, args, in) })
}

// fitsSchema coerces args to the tool's schema and checks its required
// fields.
func fitsSchema(schema, args map[string]any) error {
	if err := coerce.Args(schema, args); err != nil {
		return err
	}
	var req []string
	switch r := schema["required"].(type) {
	case []string:
		req = r
	case []any:
		for _, v := range r {
			if s, ok := v.(string); ok {
				req = append(req, s)
			}
		}
	}
	for _, k := range req {
		if _, ok := args[k]; !ok {
			return fmt.Errorf("%q is required", k)
		}
	}
	return nil
}

// Post runs the post_tool hooks that apply, in order, on the call's
// result: each may amend it (still redacted; the executor caps it) or
// add a note the model reads (exit 2, or a block answer: the call ran).
func (r *Runner) Post(ctx context.Context, tool, id string, args map[string]any, res Outcome, callErr error) (Outcome, error) {
	if r == nil {
		return res, callErr
	}
	root := r.root
	for _, h := range r.hooks {
		if !hookApplies(h, config.HookPost, tool, args, claudeInput(tool, args, root)) {
			continue
		}
		seen := &hookResult{text: res.Text, status: "ok", response: res.Response}
		if res.Failed {
			seen.status = "error"
		}
		if callErr != nil {
			seen = &hookResult{text: callErr.Error(), status: "error"}
		}
		ans, err := r.run(ctx, h, config.HookPost, tool, id, args, seen)
		switch {
		case err != nil:
			if r.failed(h, tool, err) {
				return Outcome{}, &Blocked{hook: configfile.HookShown(h), reason: "the result is withheld: the hook failed (" + termtext.OneLine(err.Error()) + ") and says on_error: block"}
			}
		case ans.amend != nil:
			r.tell(h, tool, "amended", fmt.Sprintf("the result, now %d bytes", len(*ans.amend)))
			res = Outcome{Text: secrets.Redact(*ans.amend), Summary: "amended by a hook", Notes: res.Notes}
			callErr = nil
		case ans.block:
			r.tell(h, tool, "noted", ans.reason)
			note := "\n[your hook after this call: " + secrets.Redact(ans.reason) + "]"
			if callErr != nil {
				callErr = fmt.Errorf("%w%s", callErr, note)
			} else {
				res.Text += note
			}
		}
		if err == nil && ans.context != "" {
			r.tell(h, tool, "added context", fmt.Sprintf("%d bytes", len(ans.context)))
			res, callErr = WithContext(res, callErr, clipContext(ans.context))
		}
	}
	return res, callErr
}

// run runs one hook and reads its answer: exit 2 blocks with its stderr
// as the reason; another failure, a timeout or an answer that is not one
// is an error (failed decides what it means).
func (r *Runner) run(ctx context.Context, h config.HookConfig, event, tool, id string, args map[string]any, result *hookResult) (hookAnswer, error) {
	root := r.root
	out, blocked, err := r.exec(ctx, h, tool, hookInput(event, tool, id, args, root, result, r.transcriptPath()))
	if err != nil {
		return hookAnswer{}, err
	}
	if blocked != nil {
		return *blocked, nil
	}
	return parseHookAnswer(out, tool, args, root)
}

// exec runs one hook with in on its stdin and returns its stdout; exit 2
// is a block, its stderr the reason; another failure, or no answer within
// its timeout, is an error. Your own hooks run in the sandbox made for
// hooks (the host's RunHook: a command's view plus what the hook's command
// names and its own lists, your environment less its secrets), so a hook
// that runs the workspace's code (go test, make, npx) cannot reach past
// the workspace; one your config marks unsandboxed runs as your program. A
// workspace's run through the gate every command passes, in the sandbox,
// with what a command gets. A hook of yours that tried to write past its
// sandbox is said, whatever its exit status (one that logs and goes on
// exits 0), with the setting that lets it (issue 75).
func (r *Runner) exec(ctx context.Context, h config.HookConfig, about string, in []byte) ([]byte, *hookAnswer, error) {
	r.ran.Add(1)
	root := r.root
	vars := []string{"CLAUDE_PROJECT_DIR=" + root, "HARVEY_WORKSPACE=" + root, "HARVEY_HOOK_EVENT=" + h.Event}
	res, err := r.host.RunHook(ctx, h, string(in), vars, r.transcript.path)
	switch {
	case err != nil:
		return nil, nil, err
	case res.TimedOut:
		return nil, nil, fmt.Errorf("no answer within its timeout (%s)", h.TimeLimit())
	case res.Err != nil:
		return nil, nil, res.Err
	case res.Outside != "" && !h.FromWorkspace:
		refused := outsideYours(res)
		if res.ExitCode != 0 {
			return nil, nil, refused
		}
		r.tell(h, about, "could not write", "("+configfile.HookShown(h)+") "+refused.Error()+"; its answer stands")
	case res.Blocked != sandboxpolicy.RuleNone:
		// The sandbox refused what the hook tried (sh's own exit 2 for a
		// redirect it could not open is no decision of the hook's).
		return nil, nil, r.sandboxRefused(h, res)
	case res.ExitCode == 2:
		return nil, &hookAnswer{block: true, reason: cmp.Or(secrets.Redact(strings.TrimSpace(string(res.Stderr))), "exit status 2")}, nil
	case res.ExitCode != 0:
		return nil, nil, fmt.Errorf("exit status %d: %s", res.ExitCode, lastLine(res.Stderr))
	}
	return res.Output, nil, nil
}

// outsideYours says what a hook of yours tried past its sandbox, the last
// line of its stderr, and what to add to it in your config.
func outsideYours(res runner.Result) error {
	p, said := res.Outside, res.Stderr
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		if strings.HasPrefix(p, home+"/") {
			p = "~/" + strings.TrimPrefix(p, home+"/")
		}
		said = bytes.ReplaceAll(said, []byte(home+"/"), []byte("~/")) // shorter, the reason kept
	}
	return fmt.Errorf("%s is outside what a hook of yours may write (what its command redirects to and its own writable: list): %s; add writable: [%s] to this hook in your config (or unsandboxed: true to run it as your program)",
		termtext.QuotePath(p), lastLine(said), termtext.QuotePath(p))
}

// lastLine is why a hook failed, in its own words (runner.LastWords).
func lastLine(stderr []byte) string { return runner.LastWords(stderr) }

// sandboxRefused is the error of a workspace's hook the sandbox stopped:
// its rule in full the first time, shorter after.
func (r *Runner) sandboxRefused(h config.HookConfig, res runner.Result) error {
	key := configfile.HookShown(h)
	if _, said := r.sandboxSaid.LoadOrStore(key, true); said {
		return fmt.Errorf("the sandbox refused what it tried, as said before")
	}
	return fmt.Errorf("the sandbox refused what it tried (a workspace's hook runs as a command does): %s", strings.Trim(res.Note, "[]"))
}

// failed tells the user a hook failed and which way it decides; it
// reports whether the hook's failure blocks.
func (r *Runner) failed(h config.HookConfig, tool string, err error) bool {
	blocks := h.BlocksOnError()
	way := map[string]string{config.HookPre: "the call goes on (on_error: allow)", config.HookPost: "the result stands (on_error: block withholds it)",
		config.HookPrompt: "the prompt goes on (on_error: allow)"}[h.Event]
	switch {
	case blocks && h.Event == config.HookPre:
		way = "the call is blocked (on_error: allow lets it go on)"
	case blocks && h.Event == config.HookPrompt:
		way = "the prompt is not sent (on_error: allow lets it go on)"
	case blocks:
		way = "the result is withheld (on_error: block)"
	case way == "":
		way = "it is left out"
	}
	r.tell(h, tool, "failed", "("+configfile.HookShown(h)+") "+termtext.OneLine(err.Error())+"; "+way)
	return blocks
}

// tell is one line for the user, a stream-json event and an audit entry.
func (r *Runner) tell(h config.HookConfig, tool, what, detail string) {
	r.fired.Add(1)
	r.host.Say(termtext.Plain, fmt.Sprintf("⚑ hook %s %s: %s", what, tool, termtext.Sanitize(secrets.Redact(detail))))
	r.host.Emit(map[string]any{"hook": configfile.HookShown(h), "event": h.Event, "tool": tool, "action": what, "detail": secrets.Redact(detail)})
	var err error
	if what == "blocked" || what == "failed" {
		err = refusal.ErrDenied
	}
	r.host.Audit("hook "+what, tool+": "+configfile.HookShown(h)+": "+detail, err)
}

// Describe lists the hooks in the order they run, for /hooks.
func (r *Runner) Describe() string {
	if r == nil {
		return "no hooks (hooks: in your config; docs/hooks.md)"
	}
	var b strings.Builder
	for i, h := range r.hooks {
		when := ""
		for _, w := range h.When {
			when += fmt.Sprintf(" when %s %s", w.Field, w.Describe())
		}
		onError := "allow"
		if h.BlocksOnError() {
			onError = "block"
		}
		fmt.Fprintf(&b, "%d. %s (priority %d, timeout %s, on error: %s)%s\n", i+1, configfile.HookShown(h), h.Priority, h.TimeLimit(), onError, when)
	}
	fmt.Fprintf(&b, "%d run this session, %d blocked, changed or added something", r.ran.Load(), r.fired.Load())
	return b.String()
}

// WithContext adds the context the pre_tool hooks gave to the call's
// result (or its error), where the model reads it.
func WithContext(res Outcome, err error, added string) (Outcome, error) {
	if added == "" {
		return res, err
	}
	note := "\n[context from your hooks: " + secrets.Redact(added) + "]"
	if err != nil {
		return res, fmt.Errorf("%w%s", err, note)
	}
	res.Text += note
	return res, nil
}

// Counts are the session's hooks, how many ran and how many blocked,
// changed or added something (/status).
func (r *Runner) Counts() (hooks, ran, fired int64) {
	if r == nil {
		return 0, 0, 0
	}
	return int64(len(r.hooks)), r.ran.Load(), r.fired.Load()
}
