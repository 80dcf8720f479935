package harvey

// One call of a model's reply, from its arguments to its result message:
// prepared (read, checked, coerced, the loop guard), run (ahead of the
// reply's order when it only reads), finished in call order (shown, its
// class named, capped, audited, recorded).

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/toolclass"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

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
	if e.turn != nil && e.turn.catalog.Len() > 0 {
		entry, ok = e.turn.searchEntry(p.name, entry, ok)
	}
	p.entry = entry
	offered := !ok || e.turn == nil || e.turn.tools == nil || e.turn.offers(p.name)
	switch {
	case ok && !offered:
		// Registered, but not for this model (your models: settings).
		p.err = toolclass.Mark(toolclass.Refused, fmt.Errorf("tool %q is not offered to this model (your models: settings; see /mcp); use one of: %s", p.name, strings.Join(e.offeredNames(), ", ")))
	case !ok:
		p.err = toolclass.Mark(toolclass.InvalidArgs, fmt.Errorf("unknown tool %q; available tools: %s", p.name, strings.Join(e.offeredNames(), ", ")))
	case argErr != nil:
		p.err = toolclass.Mark(toolclass.InvalidArgs, argErr)
	default:
		// Coerced once: a recovered call was coerced when it was read.
		if cerr := coerceNative(origin, entry.schema.Function.Parameters, p.args); cerr != nil {
			p.err = toolclass.Mark(toolclass.InvalidArgs, cerr)
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
		if toolclass.Retryable(p.err) && p.entry.effect == EffectRead && ctx.Err() == nil {
			// It changes nothing, and what failed may pass: once more.
			first := p.err
			if p.res, p.err = e.runHooked(ctx, p.c.ID, p.name, p.entry, p.args); p.err == nil {
				p.res.Notes = append(p.res.Notes, "retried once after: "+termtext.FirstLine(first.Error()))
			}
		}
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
	class := toolclass.Of(err, res.Failed, res.Class)
	if _, ok := err.(*repeatedCall); ok {
		class = toolclass.Refused
	}
	wrapped := fmt.Sprintf("[tool_result id=%s tool=%s %s class=%s bytes=%d truncated=%t]\n%s\n[end tool_result id=%s]", c.ID, termtext.Flat(name), termtext.Flat(summary), class, len(capped), truncated, capped, c.ID)
	if h != nil {
		if rc, ok := err.(*repeatedCall); ok {
			h.resultLine(false, rc.forUser(), nil)
			h.resultEvent(c.ID, name, "refused", class, rc.forUser(), capped, nil, dur)
		} else if failed {
			h.resultLine(false, termtext.FirstLine(err.Error()), nil)
			status := "failed"
			if errors.Is(err, refusal.ErrDenied) {
				status = "refused"
			}
			h.resultEvent(c.ID, name, status, class, termtext.FirstLine(err.Error()), capped, nil, dur)
		} else {
			// A call that ran, whose program failed (a command's exit 1),
			// is no ✓: it is marked and reported failed, with its notes.
			status := map[bool]string{true: "failed", false: "ok"}[res.Failed]
			h.resultLine(!res.Failed, cmp.Or(res.Summary, termtext.FirstLine(res.Text)), res.Notes)
			h.resultEvent(c.ID, name, status, class, cmp.Or(res.Summary, termtext.FirstLine(res.Text)), capped, res.Notes, dur)
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
