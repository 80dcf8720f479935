package harvey

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/textcalls"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// ErrToolLoopLimit is returned when a turn uses more tool rounds than
// max_tool_calls_per_turn allows.
var ErrToolLoopLimit = errors.New("tool call limit reached")

// resultSlack is the room past the cap for a handler's truncation marker
// and paging hint.
const resultSlack = 512

// maxCallsPerReply bounds the tool calls one model reply may make: a
// generous number for real work, far from the thousands a prompt-injected
// reply could ask for. The calls past it get an error result.
const maxCallsPerReply = 16

// repeatLimit: the same call with the same arguments this many times in a
// row gets an error result instead of running again.
const repeatLimit = 3

// ToolExecutor runs the multi-turn tool loop for one user turn. It holds
// the turn (client, model, limits) and a narrow host for what it reports;
// it never reaches back into the Agent.
type ToolExecutor struct {
	registry       *ToolRegistry
	client         llm.LLMClient
	maxIterations  int
	maxOutputBytes int

	turn    *turn
	host    execHost
	prose   bool
	history []string // call signatures this turn, for repeat detection
	onRound func()   // called before tools run (stops the spinner)
	// askedModel: this turn already asked the model to send a call alone.
	askedModel bool
	retry      llm.RetryPolicy
	hooks      *hooks.Runner // your hooks around each call (nil: none)
	parallel   int           // tools.max_parallel: calls run ahead at once (0: from the cores)
}

// maxParallel is how many calls of one reply run ahead at once:
// tools.max_parallel, else twice the cores and at least four (the calls
// that run ahead wait on files and processes more than on a core).
func (e *ToolExecutor) maxParallel() int {
	if e.parallel > 0 {
		return e.parallel
	}
	return max(4, 2*runtime.NumCPU())
}

// execHost is what the tool loop needs from the session around it: to say
// what happens, ask before an effect, record it, and switch a model that
// refuses tools to prose mode.
type execHost interface {
	note(s string)                                      // a dim progress line
	warn(s string)                                      // a yellow warning line
	toolLine(prefix, name, summary string)              // "⚙ read_file a.go"
	resultLine(ok bool, summary string, notes []string) // "✓ 12 lines" / "✗ why", then the notes
	audit(action, details string, err error, d time.Duration)
	// callEvent and resultEvent tell a program reading the run (--output
	// json|stream-json) what was called, as sent, and how it ended.
	callEvent(id, name, rawArgs string, recovered bool)
	resultEvent(id, name, status, summary, output string, notes []string, d time.Duration)
	recordToolCall(name, raw, result string, failed bool)
	// proseFallback marks model as unable to call tools and returns the
	// system prompt for prose mode, or an error when fallback is off.
	proseFallback(model string) (string, error)
}

// RunToolLoop drives the conversation: send messages (and tools) to the
// model; if it asks for tools (structured, or printed as text), run them and
// send the results back; repeat until it answers in text. It returns the
// extended history. Hitting the round limit is an error, not a silent stop.
func (e *ToolExecutor) RunToolLoop(ctx context.Context, messages []llm.Message, out io.Writer) ([]llm.Message, llm.ChatStats, error) {
	var total llm.ChatStats
	lookup := e.lookup()
	// What the model writes is redacted as whole lines before it leaves
	// (the terminal, --output): a secret split across stream pieces is
	// still one secret.
	rr := secrets.NewReplyRedactor(out)
	defer rr.Flush()
	out = rr
	for round := 0; ; round++ {
		e.fitRound(messages, lastAssistant(messages))
		hb := textcalls.NewHoldback(out, func(n string) bool { _, ok := lookup(n); return ok })
		send, sendTools := messages, e.roundTools()
		if e.turn != nil {
			send, sendTools = e.turn.prepare(messages, sendTools)
		}
		var rt llm.Retried
		stats, calls, err := e.retry.Chat(ctx, hb, func(ctx context.Context, w io.Writer) (llm.ChatStats, []anyllm.ToolCall, error) {
			return e.client.ChatWithTools(ctx, send, sendTools, w)
		}, &rt)
		total.Add(stats)
		tr := e.trace()
		tr.Round(stats, calls, rt.Retries)
		if err != nil {
			if retry, ferr := e.fallBackToProse(err, messages); retry {
				round--
				continue
			} else if ferr != nil {
				return messages, total, ferr
			}
			_, held := hb.Finish()
			io.WriteString(out, held)
			return messages, total, err
		}
		text, held := hb.Finish()
		var r replyCalls
		if len(calls) == 0 {
			r = e.recoverPrinted(text, held, hb, out, lookup, tr, round < e.maxIterations)
			if r.note != "" {
				// The model meant to act but its call cannot be read
				// faithfully: nothing runs, and it is told what to fix.
				messages = append(messages, llm.Message{Role: llm.RoleAssistant, Content: text}, llm.Message{Role: llm.RoleUser, Content: r.note})
				continue
			}
			calls, text = r.calls, r.text
		}
		if len(calls) == 0 {
			messages = append(messages, llm.Message{Role: llm.RoleAssistant, Content: text})
			return messages, total, nil
		}
		if round >= e.maxIterations {
			messages = append(messages, llm.Message{Role: llm.RoleAssistant, Content: text})
			return messages, total, fmt.Errorf("%w: the model asked for tools %d rounds in a row (max_tool_calls_per_turn is %d); stopped", ErrToolLoopLimit, round+1, e.maxIterations)
		}
		rr.EndLine() // the reply's last line, ended, before the tools' lines
		if e.prose || r.recovered {
			conv := append(slices.Clone(messages), llm.Message{Role: llm.RoleAssistant, Content: text})
			e.hooks.SetConversation(len(conv), hooks.TranscriptOf(conv))
			messages, err = e.runPrinted(ctx, messages, text, calls)
		} else {
			messages = append(messages, llm.Message{Role: llm.RoleAssistant, Content: text, ToolCalls: calls})
			e.hooks.SetConversation(len(messages), hooks.TranscriptOf(messages))
			var results []llm.Message
			results, err = e.ExecuteToolCalls(ctx, calls)
			messages = append(messages, results...)
		}
		if err != nil {
			return messages, total, err
		}
	}
}

// offeredNames are the tools this turn offers the model (every registered
// one where the turn does not say).
func (e *ToolExecutor) offeredNames() []string {
	if e.turn == nil || e.turn.tools == nil {
		return e.registry.Names()
	}
	var out []string
	for _, t := range e.turn.tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// lookup finds the schema of a tool the model may call: only what this
// turn offered, when the turn says.
func (e *ToolExecutor) lookup() textcalls.Lookup {
	if e.turn == nil || e.turn.tools == nil {
		return e.registry.schemaOf
	}
	return func(n string) (map[string]any, bool) {
		if !e.turn.offers(n) {
			return nil, false
		}
		return e.registry.schemaOf(n)
	}
}

// roundTools is the tools field of the next request (none in prose mode).
func (e *ToolExecutor) roundTools() []anyllm.Tool {
	if e.prose {
		return nil
	}
	if e.turn != nil && e.turn.tools != nil {
		return e.turn.tools
	}
	return e.registry.GetToolSchemas()
}

// fallBackToProse handles a server that refused tools: it remembers that,
// switches the turn to prose mode and says to retry the round. An error
// means the fallback is off.
func (e *ToolExecutor) fallBackToProse(err error, messages []llm.Message) (bool, error) {
	if !errors.Is(err, llm.ErrToolsUnsupported) || e.prose || e.host == nil || e.turn == nil {
		return false, nil
	}
	sys, ferr := e.host.proseFallback(e.turn.model)
	if ferr != nil {
		return false, fmt.Errorf("%v; %v", err, ferr)
	}
	e.prose = true
	if len(messages) > 0 && messages[0].Role == llm.RoleSystem {
		messages[0].Content = sys
	}
	return true, nil
}

// replyCalls is what a reply without structured calls does as text.
type replyCalls struct {
	calls     []anyllm.ToolCall
	text      string // the reply's text, less the calls recovered from it
	recovered bool   // the calls were printed
	note      string // what the model is told instead (a call that cannot be read, or one to send alone)
}

// recoverPrinted looks for calls the model printed, and shows the user
// what the holdback writer kept back (the reply's prose, or all of it).
// mayRetry: a call that cannot be read is explained to the model, which
// gets another round.
func (e *ToolExecutor) recoverPrinted(text, held string, hb *textcalls.Holdback, out io.Writer, lookup textcalls.Lookup, tr *modelcheck.Trace, mayRetry bool) replyCalls {
	// Schema mode is strict (the model could have called natively),
	// unless the layout took the tools out of the request.
	strict := !e.prose && (e.turn == nil || e.turn.layout == layoutNative)
	r := textcalls.Recover(text, lookup, strict)
	tr.Recovered(r, e.prose)
	if note := r.Note(); note != "" && mayRetry {
		if held != "" {
			io.WriteString(out, held)
		}
		fmt.Fprintf(out, "\n[not run: a tool call written as text could not be read: %s]\n", strings.Join(r.Unread, "; "))
		return replyCalls{text: text, note: note}
	}
	if len(r.Calls) == 0 {
		if held != "" {
			io.WriteString(out, held)
		}
		return replyCalls{text: text}
	}
	if r.Decision == textcalls.Ask {
		// The evidence does not decide: the model, not the user, is asked
		// to send the call alone — once a turn (then it is a quotation).
		if held != "" {
			io.WriteString(out, held)
		}
		if e.askedModel || !mayRetry {
			return replyCalls{text: text}
		}
		e.askedModel = true
		tr.AskedModel()
		fmt.Fprintf(out, "\n[not run: a tool call with prose around it; Harvey asked the model to send it alone if it meant to run it]\n")
		return replyCalls{text: text, note: textcalls.AskNote}
	}
	// The reply's act (decided by evidence: docs/tool-call-recovery.md):
	// it runs like a native call; prose after it, an answer written as if
	// it had returned, is left out.
	if written := hb.Len() - len(held); written == 0 && r.Prose != "" {
		io.WriteString(out, r.Prose+"\n")
	}
	return replyCalls{calls: r.Calls, text: r.Prose, recovered: true}
}

// runPrinted runs the calls of a model that does not speak the tool
// protocol (prose mode) or printed them: its text is kept, the calls run,
// and the results go back as a user message (prose mode) or as tool
// results.
func (e *ToolExecutor) runPrinted(ctx context.Context, messages []llm.Message, text string, calls []anyllm.ToolCall) ([]llm.Message, error) {
	messages = append(messages, llm.Message{Role: llm.RoleAssistant, Content: strings.TrimSpace(text + "\n" + describeCalls(calls))})
	results, err := e.executeCalls(ctx, calls, fromText)
	if err != nil {
		return messages, err
	}
	if e.prose {
		var sb strings.Builder
		for _, r := range results {
			sb.WriteString(r.Content)
			sb.WriteString("\n")
		}
		return append(messages, llm.Message{Role: llm.RoleUser, Content: strings.TrimSpace(sb.String())}), nil
	}
	messages[len(messages)-1] = llm.Message{Role: llm.RoleAssistant, Content: text, ToolCalls: calls}
	return append(messages, results...), nil
}

// trace is the turn's trace, or nil (its methods do nothing then).
func (e *ToolExecutor) trace() *modelcheck.Trace {
	if e.turn == nil {
		return nil
	}
	return e.turn.trace
}

// lastAssistant is the index of the last assistant message (the round in
// progress starts there), or len(messages) when there is none.
func lastAssistant(messages []llm.Message) int {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == llm.RoleAssistant {
			return i
		}
	}
	return len(messages)
}

// describeCalls renders recovered calls as the JSON the model printed.
func describeCalls(calls []anyllm.ToolCall) string {
	var parts []string
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf(`{"name": %q, "arguments": %s}`, c.Function.Name, c.Function.Arguments))
	}
	return strings.Join(parts, "\n")
}

// ExecuteToolCalls runs each call in order and returns one role "tool"
// message per call, with the matching ToolCallID. A failing call becomes an
// error result for the model; only cancellation ends the turn.
func (e *ToolExecutor) ExecuteToolCalls(ctx context.Context, calls []anyllm.ToolCall) ([]llm.Message, error) {
	return e.executeCalls(ctx, calls, native)
}

// callOrigin is how a call reached Harvey.
type callOrigin int

const (
	native   callOrigin = iota // the protocol's tool-call field
	fromText                   // printed, and decided to be the reply's act
)

func (e *ToolExecutor) executeCalls(ctx context.Context, calls []anyllm.ToolCall, origin callOrigin) ([]llm.Message, error) {
	if e.onRound != nil {
		e.onRound()
	}
	n := min(len(calls), maxCallsPerReply)
	prepared := make([]*preparedCall, n)
	for i := range n {
		prepared[i] = e.prepare(calls[i], origin)
	}
	e.runAhead(ctx, prepared)
	out := make([]llm.Message, 0, len(calls))
	for i, c := range calls {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if i >= maxCallsPerReply {
			msg := fmt.Sprintf("error: not run: one reply may make at most %d tool calls; make fewer calls and use their results", maxCallsPerReply)
			out = append(out, llm.Message{Role: llm.RoleTool, Content: fmt.Sprintf("[tool_result id=%s tool=%s bytes=%d truncated=false]\n%s\n[end tool_result id=%s]", c.ID, termtext.Flat(c.Function.Name), len(msg), msg, c.ID), ToolCallID: c.ID, ToolName: c.Function.Name})
			continue
		}
		out = append(out, e.finish(ctx, prepared[i]))
	}
	if len(calls) > maxCallsPerReply && e.host != nil {
		e.host.warn(fmt.Sprintf("warning: the model asked for %d tool calls in one reply; only the first %d ran", len(calls), maxCallsPerReply))
		e.host.audit("tool-calls", fmt.Sprintf("%d calls in one reply; %d not run", len(calls), len(calls)-maxCallsPerReply), refusal.ErrDenied, 0)
	}
	return out, ctx.Err()
}

// executeOne runs one call alone: prepared, run, finished.
func (e *ToolExecutor) executeOne(ctx context.Context, c anyllm.ToolCall, origin callOrigin) llm.Message {
	return e.finish(ctx, e.prepare(c, origin))
}

// preparedCall is one call of a reply, read and checked in call order
// (arguments, the tool, the repeat guard), then run and finished.
type preparedCall struct {
	c                  anyllm.ToolCall
	recovered          bool
	name, raw, summary string
	args               map[string]any
	entry              toolEntry
	err                error // refused before running: unknown, bad arguments, repeated
	// What running it gave; done is closed then (a call run ahead).
	res   toolResult
	dur   time.Duration
	ahead bool
	done  chan struct{}
}

// prepare reads and checks one call, saying nothing yet.
func (e *ToolExecutor) prepare(c anyllm.ToolCall, origin callOrigin) *preparedCall {
	p := &preparedCall{c: c, recovered: origin != native, name: c.Function.Name, done: make(chan struct{})}
	p.raw = strings.TrimSpace(c.Function.Arguments)
	if p.raw == "" {
		p.raw = "{}"
	}
	argErr := error(nil)
	if err := json.Unmarshal([]byte(p.raw), &p.args); err != nil {
		argErr = fmt.Errorf("arguments are not valid JSON (%v); send a JSON object", err)
	} else if p.args == nil {
		p.args = map[string]any{}
	}
	p.summary = callSummary(p.name, p.args)
	entry, ok := e.registry.entry(p.name)
	p.entry = entry
	offered := !ok || e.turn == nil || e.turn.tools == nil || e.turn.offers(p.name)
	switch {
	case ok && !offered:
		// Registered, but left out of this model's tools (the budget).
		p.err = fmt.Errorf("tool %q is not offered to this model (left out by the tool budget or your models: settings; see /mcp); use one of: %s", p.name, strings.Join(e.offeredNames(), ", "))
	case !ok:
		p.err = fmt.Errorf("unknown tool %q; available tools: %s", p.name, strings.Join(e.offeredNames(), ", "))
	case argErr != nil:
		p.err = argErr
	default:
		// Coerced once: a recovered call was coerced when it was read.
		if cerr := coerceNative(origin, entry.schema.Function.Parameters, p.args); cerr != nil {
			p.err = cerr
		} else if run := e.repeats(p.name, p.args); run >= repeatLimit {
			p.err = &repeatedCall{name: p.name, before: run - 1}
		}
	}
	return p
}

// runsAhead reports whether a call may run before the calls ahead of it
// are shown: it needs no approval and changes nothing (a read, a search,
// a read tool of yours or an MCP tool you marked read-only), and does not
// read a job or a task (whose reads advance in order, after the call that
// started it) or delegate.
func (p *preparedCall) runsAhead() bool {
	switch p.entry.source {
	case sourceJobs, sourceTasks, sourceDelegate: // a sub-agent's calls are shown as they run
		return false
	}
	return p.err == nil && p.entry.effect == EffectRead
}

// runAhead starts the reply's leading calls that run ahead, at most
// tools.max_parallel at once. It stops at the first call that writes,
// runs a command or asks: from there every call runs in order, when it is
// reached, so no call ever sees the workspace as it was before a call
// the model put ahead of it (a read after a write of one file reads what
// was written).
func (e *ToolExecutor) runAhead(ctx context.Context, calls []*preparedCall) {
	var lead []*preparedCall
	for _, p := range calls {
		if p.err != nil {
			continue // refused: nothing runs
		}
		if !p.runsAhead() {
			break
		}
		lead = append(lead, p)
	}
	if len(lead) < 2 {
		return // one call gains nothing from running ahead
	}
	sem := make(chan struct{}, e.maxParallel())
	for _, p := range lead {
		p.ahead = true
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			e.run(ctx, p)
		}()
	}
}

// run runs a prepared call (its hooks around it) and closes done.
func (e *ToolExecutor) run(ctx context.Context, p *preparedCall) {
	defer close(p.done)
	start := time.Now()
	if p.err == nil && ctx.Err() == nil {
		p.res, p.err = e.runHooked(ctx, p.c.ID, p.name, p.entry, p.args)
	} else if p.err == nil {
		p.err = ctx.Err()
	}
	p.dur = time.Since(start)
}

// finish shows a call and its result in call order (running it now unless
// it ran ahead), and makes its message for the model.
func (e *ToolExecutor) finish(ctx context.Context, p *preparedCall) llm.Message {
	h := e.host
	c, name, raw, summary := p.c, p.name, p.raw, p.summary
	if h != nil {
		h.callEvent(c.ID, name, raw, p.recovered)
		prefix := "⚙"
		if p.recovered {
			prefix = "⚙ (recovered from text)"
		}
		h.toolLine(prefix, name, summary)
	}
	if !p.ahead {
		e.run(ctx, p)
	}
	<-p.done
	res, err, dur := p.res, p.err, p.dur
	var content string
	failed := err != nil
	if failed {
		content = "error: " + err.Error()
	} else {
		content = res.Text
	}
	// Handlers cap their own output (and add a paging hint after the
	// marker); this is the safety net for those that do not, with room for
	// those few lines.
	capped := outputcap.Cap([]byte(content), e.maxOutputBytes+resultSlack, false)
	// The marker ends a cut result (before at most a paging hint); the same
	// words inside a file's text do not count.
	truncated := strings.Contains(capped[max(0, len(capped)-resultSlack):], "[output truncated at ")
	wrapped := fmt.Sprintf("[tool_result id=%s tool=%s %s bytes=%d truncated=%t]\n%s\n[end tool_result id=%s]", c.ID, termtext.Flat(name), termtext.Flat(summary), len(capped), truncated, capped, c.ID)
	if h != nil {
		if rc, ok := err.(*repeatedCall); ok {
			h.resultLine(false, rc.forUser(), nil)
			h.resultEvent(c.ID, name, "refused", rc.forUser(), capped, nil, dur)
		} else if failed {
			h.resultLine(false, termtext.FirstLine(err.Error()), nil)
			status := "failed"
			if errors.Is(err, refusal.ErrDenied) {
				status = "refused"
			}
			h.resultEvent(c.ID, name, status, termtext.FirstLine(err.Error()), capped, nil, dur)
		} else {
			// A call that ran, whose program failed (a command's exit 1),
			// is no ✓: it is marked and reported failed, with its notes.
			status := map[bool]string{true: "failed", false: "ok"}[res.Failed]
			h.resultLine(!res.Failed, cmp.Or(res.Summary, termtext.FirstLine(res.Text)), res.Notes)
			h.resultEvent(c.ID, name, status, cmp.Or(res.Summary, termtext.FirstLine(res.Text)), capped, res.Notes, dur)
		}
		h.audit("tool:"+name, summary, err, dur)
		h.recordToolCall(name, raw, capped, failed)
	}
	e.trace().Add(modelcheck.CallRecord{Name: name, Args: raw, Result: capped, Failed: failed})
	return llm.Message{Role: llm.RoleTool, Content: wrapped, ToolCallID: c.ID, ToolName: name}
}

// runHooked runs a call between your pre_tool and post_tool hooks (none:
// the call alone).
func (e *ToolExecutor) runHooked(ctx context.Context, id, name string, entry toolEntry, args map[string]any) (toolResult, error) {
	if e.hooks == nil {
		return safeCall(ctx, entry.run, e.scope(), args)
	}
	args, added, err := e.hooks.Pre(ctx, name, id, entry.schema.Function.Parameters, args)
	if err != nil {
		return toolResult{}, err
	}
	res, err := safeCall(ctx, entry.run, e.scopeFor(name, args), args)
	out, err := e.hooks.Post(ctx, name, id, args, hooks.Outcome(res), err)
	out, err = hooks.WithContext(out, err, added)
	return toolResult(out), err
}

// coerceNative fits a native call's arguments to the schema; a call
// recovered from text was fitted when recovery validated it.
func coerceNative(origin callOrigin, schema, args map[string]any) error {
	if origin != native {
		return nil
	}
	return coerce.Args(schema, args)
}

// repeatedCall is the loop guard's answer: its error text is written to
// the model; the user is told what happened in their terms.
type repeatedCall struct {
	name   string
	before int // identical calls in a row before this one
}

func (r *repeatedCall) Error() string {
	return fmt.Sprintf("you already called %s with these same arguments %d times in a row; the result will not change. Use the result you have, or try something different", r.name, r.before)
}

func (r *repeatedCall) forUser() string {
	return fmt.Sprintf("not run: the same call for the %s time in a row (the model is told to use the result it has)", ordinal(r.before+1))
}

// ordinal writes 3 as 3rd, 11 as 11th, 22 as 22nd.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}

// repeats records the call and returns how many identical calls in a row
// end with it (1: it differs from the one before).
func (e *ToolExecutor) repeats(name string, args map[string]any) int {
	b, _ := json.Marshal(args) // map keys are sorted: canonical
	sig := name + string(b)
	e.history = append(e.history, sig)
	run := 0
	for i := len(e.history) - 1; i >= 0 && e.history[i] == sig; i-- {
		run++
	}
	return run
}

// safeCall runs a handler, turning a panic into an error.
func safeCall(ctx context.Context, h toolFunc, call callScope, args map[string]any) (res toolResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error in tool: %v", r)
		}
	}()
	return h(ctx, call, args)
}

// scope is what a tool call of this turn is given: the turn's cap on a
// result.
func (e *ToolExecutor) scope() callScope {
	if e.turn == nil {
		return callScope{}
	}
	return callScope{maxOut: e.turn.maxOut}
}

// scopeFor is the scope of one call: a command's streams are kept apart
// where a post_tool hook will read them.
func (e *ToolExecutor) scopeFor(name string, args map[string]any) callScope {
	s := e.scope()
	s.streams = e.hooks.ReadsStreams(name, args)
	return s
}

// toolMode is the current model's tool mode.
func (be *backend) toolMode() ToolMode {
	if be.toolsOff || !be.cfg.ToolsEnabled(be.ModelName) {
		return ModeOff
	}
	if c, ok := be.caps[be.ModelName]; ok && c != llm.CapYes {
		if be.cfg.FallbackEnabled() {
			return ModeProse
		}
		return ModeOff
	}
	if _, ok := be.Client.(llm.ToolProber); ok && be.caps[be.ModelName] != llm.CapYes {
		if be.cfg.FallbackEnabled() {
			return ModeProse
		}
		return ModeOff
	}
	return ModeSchema
}

// A turn is built once, when the user's prompt arrives, and passed down:
// which client and model answer (the main model or a route's), in which
// tool mode, with which limits. Nothing below it looks back at the Agent's
// current model, so a route's turn runs with the route model's limits.
type turn struct {
	client    llm.LLMClient
	model     string
	route     string            // the route's name; "" for the main model
	mode      ToolMode          // schema, prose or off
	window    int               // tokens every request must fit (0: the server reports overflow itself)
	maxRounds int               // max_tool_calls_per_turn of this model
	maxOut    int               // the cap on one tool result
	schema    int               // estimated tokens the tool schemas add to a request
	layout    promptLayout      // where the tools go in the prompt (layout.go)
	tools     []anyllm.Tool     // the tools offered this turn (toolsFor)
	block     []anyllm.Tool     // the tools in the prompt's fixed part (non-native layouts)
	announce  string            // new tools, announced at the head of this turn's prompt
	announced []string          // their names (marked told once the prompt is sent)
	trace     *modelcheck.Trace // what each round did; nil unless asked for (harvey model check)
}

// prepare is what one request of the turn sends: the messages with the
// tools where the layout keeps them — for llama3 and mistral the block
// pinned for the session (later tools were announced in a prompt) — and
// the tools field. No tools (prose mode): the messages as they are.
func (t *turn) prepare(msgs []llm.Message, tools []anyllm.Tool) ([]llm.Message, []anyllm.Tool) {
	if t.block != nil && len(tools) > 0 {
		tools = t.block
	}
	return t.layout.apply(msgs, tools)
}

// offers reports whether the turn offered the tool name.
func (t *turn) offers(name string) bool {
	for _, x := range t.tools {
		if x.Function.Name == name {
			return true
		}
	}
	return false
}

// contextLimit is the prompt size that leaves room for a reply.
func (t *turn) contextLimit() int { return t.window - max(512, t.window/8) }

// fitThreshold is the size past which a turn starts by eliding old tool
// results (and then summarising): it must leave room for one full result.
func (t *turn) fitThreshold() int { return t.contextLimit() - turnHeadroom(t.window) }

// fitRound runs before each request inside a turn: old results go first,
// never those of the round the model is about to read.
func (e *ToolExecutor) fitRound(messages []llm.Message, protect int) {
	t := e.turn
	if t == nil || t.window == 0 {
		return
	}
	extra := t.schema
	if e.prose {
		extra = 0
	}
	limit := t.contextLimit()
	if llm.EstimateTokens(messages)+extra <= limit {
		return
	}
	n := elideToolResults(messages, protect, limit/2, extra)
	if llm.EstimateTokens(messages)+extra > limit && len(messages) > 1 {
		// Several large results in this one round: keep the last whole.
		n += elideToolResults(messages, len(messages)-1, limit, extra)
	}
	if n > 0 && e.host != nil {
		e.host.note(fmt.Sprintf("· %d old tool results elided to fit the context", n))
	}
}

const elidedMarker = "[tool result elided to fit the context window: "

// elideToolResults replaces the content of the oldest tool results in
// msgs[:protect] with a one-line note until the estimate is at most target.
// Results of the round in progress (from protect on) are kept. It reports
// how many results it elided.
func elideToolResults(msgs []llm.Message, protect, target int, extra int) int {
	used := llm.EstimateTokens(msgs) + extra
	n := 0
	for i := 0; i < protect && used > target; i++ {
		m := &msgs[i]
		isResult := m.Role == llm.RoleTool || (m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[tool_result "))
		if !isResult || strings.HasPrefix(m.Content, elidedMarker) || len(m.Content) < 200 {
			continue
		}
		note := fmt.Sprintf("%s%d bytes; call the tool again if you need it]", elidedMarker, len(m.Content))
		used -= len(m.Content)/4 - len(note)/4
		m.Content = note
		n++
	}
	return n
}
