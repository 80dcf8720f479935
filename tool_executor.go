package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/textcalls"
	"github.com/harvey-agent/harvey/internal/toolsearch"
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
	resultEvent(id, name, status, class, summary, output string, notes []string, d time.Duration)
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
		return e.turn.withFound()
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
	route     string              // the route's name; "" for the main model
	mode      ToolMode            // schema, prose or off
	window    int                 // tokens every request must fit (0: the server reports overflow itself)
	maxRounds int                 // max_tool_calls_per_turn of this model
	maxOut    int                 // the cap on one tool result
	schema    int                 // estimated tokens the tool schemas add to a request
	layout    promptLayout        // where the tools go in the prompt (layout.go)
	tools     []anyllm.Tool       // the tools offered this turn (toolsFor)
	catalog   *toolsearch.Catalog // what the budget left out (nil: nothing)
	block     []anyllm.Tool       // the tools in the prompt's fixed part (non-native layouts)
	announce  string              // new tools, announced at the head of this turn's prompt
	announced []string            // their names (marked told once the prompt is sent)
	trace     *modelcheck.Trace   // what each round did; nil unless asked for (harvey model check)
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

// offers reports whether the turn offered the tool name, or left it out
// only for the budget (callable by name; tool_search finds it).
func (t *turn) offers(name string) bool {
	for _, x := range t.tools {
		if x.Function.Name == name {
			return true
		}
	}
	return t.catalog.Has(name)
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
