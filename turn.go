package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/events"
	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/lazyre"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/rag"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/spinner"
	"github.com/harvey-agent/harvey/internal/termtext"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// mainTurn is a turn for the main model.
func (be *backend) mainTurn(ts *toolSet) *turn {
	t := &turn{client: be.Client, model: be.ModelName, mode: be.toolMode(), window: be.window(be.Client),
		maxRounds: be.cfg.MaxToolCalls(be.ModelName)}
	t.maxOut = capFor(be.cfg.MaxOutputBytes(), t.window)
	t.tools, _, t.catalog = ts.toolPlan(t.model, t.window)
	t.schema = schemaTokensOf(t.mode, t.tools)
	if t.mode == ModeSchema {
		t.layout = be.layouts[be.ModelName]
		if t.layout != layoutNative {
			t.block, t.announce, t.announced = be.pinToolBlock(t.model, t.layout, t.tools)
		}
	}
	return t
}

// routeTurn is a turn for the route name: its own client, model, tool mode
// and limits. The caller closes t.client.
func (be *backend) routeTurn(ctx context.Context, ts *toolSet, name string) (*turn, error) {
	_, rt := be.Routes.find(name)
	if rt == nil {
		return nil, fmt.Errorf("no route @%s; see /route list", name)
	}
	if !rt.Enabled {
		return nil, fmt.Errorf("route @%s is disabled; /route enable %s", rt.Name, rt.Name)
	}
	c, err := be.Routes.client(rt, time.Duration(be.cfg.OllamaTimeout), be.cfg.EffectiveNumCtx(rt.Model))
	if err != nil {
		return nil, err
	}
	t := &turn{client: c, model: rt.Model, route: rt.Name, window: be.window(c), maxRounds: be.cfg.MaxToolCalls(rt.Model)}
	switch {
	case be.toolsOff || !be.cfg.ToolsEnabled(rt.Model):
		t.mode = ModeOff
	default:
		t.mode = ModeSchema // servers that cannot say: tools unless configured off
		if p, ok := c.(llm.ToolProber); ok {
			t.mode = ModeProse
			if cp, err := p.ToolSupport(ctx, rt.Model); err == nil && cp == llm.CapYes {
				t.mode = ModeSchema
			}
		}
	}
	t.maxOut = capFor(be.cfg.MaxOutputBytes(), t.window)
	t.tools, _, t.catalog = ts.toolPlan(t.model, t.window)
	t.schema = schemaTokensOf(t.mode, t.tools)
	return t, nil
}

// newTurn builds the turn for a prompt ("@route rest" goes to the route)
// and returns the prompt to send.
func (a *Agent) newTurn(ctx context.Context, prompt string) (*turn, string, error) {
	name, rest, ok := splitMention(prompt)
	if !ok {
		a.connectLate(ctx)
		if a.Client == nil {
			if a.connectErr != nil {
				return nil, "", a.connectErr
			}
			return nil, "", a.errNoBackend()
		}
		return a.mainTurn(&a.toolSet), prompt, nil
	}
	t, err := a.routeTurn(ctx, &a.toolSet, name)
	if err != nil {
		return nil, "", err
	}
	if rest == "" {
		t.client.Close()
		return nil, "", errors.New("usage: @ROUTE PROMPT")
	}
	return t, rest, nil
}

// schemaTokens estimates what the tool schemas add to every request of
// the main model.
func (be *backend) schemaTokens(ts *toolSet, mode ToolMode) int {
	return schemaTokensOf(mode, ts.toolsFor(be.ModelName, be.window(be.Client)))
}

// RunPrompt runs one turn: a slash command, !command, @route prompt, or a
// prompt for the model. The answer goes to Out.
func (a *Agent) RunPrompt(ctx context.Context, line string) error {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil
	}
	if strings.HasPrefix(line, "/") || strings.HasPrefix(line, "!") {
		var out io.Writer = a.Out
		var rec strings.Builder
		if a.Recorder != nil {
			out = io.MultiWriter(a.Out, &rec)
		}
		err := a.Dispatch(ctx, line, out)
		if a.Recorder != nil && !strings.HasPrefix(line, "/record") {
			note := rec.String()
			if err != nil {
				note += "error: " + err.Error()
			}
			a.Recorder.Note(line, note)
		}
		a.saveSession(a.ModelName)
		return err
	}
	err := a.chatTurn(ctx, line)
	a.saveSession(a.ModelName)
	return err
}

// chatTurn sends a prompt to the model (or a route), with tools when the
// model supports them.
func (a *Agent) chatTurn(ctx context.Context, prompt string) error {
	a.mcpReady(ctx, true)
	a.mcp.Refresh(ctx) // between turns only
	t, prompt, err := a.newTurn(ctx, prompt)
	if err != nil {
		return err
	}
	if t.route != "" {
		defer t.client.Close()
	}
	return a.runTurn(ctx, t, prompt)
}

// runTurn sends prompt in the turn t and keeps what happened.
func (a *Agent) runTurn(ctx context.Context, t *turn, prompt string) error {
	a.gate.hooks.SetConversation(len(a.History), hooks.TranscriptOf(a.History))
	added, err := a.gate.hooks.Prompt(ctx, prompt)
	if err != nil {
		return err
	}
	a.Recorder.User(prompt)
	if err := a.fitContext(ctx, t); err != nil {
		return err
	}
	if block := rag.Retrieved(ctx, ragEnv(a), func(s string) { a.logf("%s", a.colorize("33", s)) }, prompt); block != "" {
		// Into the user's message, never the system prompt: the prefix the
		// server evaluated stays reusable.
		prompt = block + "\n\n" + prompt
	}
	if added != "" {
		prompt = added + "\n\n" + prompt // your hooks' context, in the same place
	}
	if done := a.gate.untoldTasks(t.maxOut); done != "" {
		prompt = done + "\n\n" + prompt // what async calls returned since the model last looked
	}
	if news := a.gate.jobs.Untold(t.maxOut); news != "" {
		prompt = news + "\n\n" + prompt // the jobs you started, and those that ended, since
	}
	if len(a.carry) > 0 {
		prompt = strings.Join(a.carry, "\n\n") + "\n\n" + prompt // your /delegate answers
		a.carry = nil
	}
	if t.announce != "" {
		prompt = t.announce + "\n\n" + prompt
		a.markAnnounced(t.model, t.announced)
	}
	err = a.answer(ctx, t, append(a.History, llm.Message{Role: llm.RoleUser, Content: prompt}))
	return goOnForStopHooks(ctx, a, t, err)
}

// unanswered reports whether the conversation ends without the model's
// answer: a prompt or tool results the model never replied to (its call
// failed for good after the tools ran, or Harvey stopped).
func (cv *conversation) unanswered() bool {
	if len(cv.History) == 0 {
		return false
	}
	last := cv.History[len(cv.History)-1]
	return last.Role == llm.RoleTool || last.Role == llm.RoleUser && !strings.HasPrefix(last.Content, pinnedPrefix) && !strings.HasPrefix(last.Content, "[context: ")
}

// connectLate connects, in the turn of a prompt that needs a model, where
// there is none yet: the first such prompt waits for a server that may be
// starting (see Options.WaitForServer), every later one tries once, so a
// server started after Harvey is used with no command.
func (be *backend) connectLate(ctx context.Context) {
	if r := be.reconnect; r != nil && be.Client == nil {
		be.connectErr = nil
		r(ctx)
	}
}

// retryTurn sends the conversation as it is to the model again: the turn
// whose model call failed goes on from where it stopped, with the tool
// results it has (no tool runs again).
func (a *Agent) retryTurn(ctx context.Context) error {
	if !a.unanswered() {
		return errors.New("nothing to retry: the last turn has its answer (send a prompt)")
	}
	a.connectLate(ctx)
	if a.Client == nil {
		if a.connectErr != nil {
			return a.connectErr
		}
		return a.errNoBackend()
	}
	t := a.mainTurn(&a.toolSet)
	if err := a.fitContext(ctx, t); err != nil {
		return err
	}
	return a.answer(ctx, t, a.History)
}

// answer runs the model (and its tools) over history and keeps what
// happened, the tool results of a failed call included.
func (a *Agent) answer(ctx context.Context, t *turn, history []llm.Message) error {
	client, mode := t.client, t.mode
	var spin *spinner.Spinner
	var out io.Writer = a.Out
	var reply strings.Builder
	shown := io.Writer(a.Out)
	wrap := &termtext.WordWrap{W: a.Out, Width: a.termWidth}
	if a.outTTY && a.termWidth() > 0 {
		// Prose broken between words at the terminal's width, not by the
		// terminal inside one (stdout a terminal: never into a file).
		shown = wrap
	}
	out = io.MultiWriter(&terminalSafeWriter{w: shown}, &reply)
	if a.Interactive && a.Color {
		spin = spinner.New(a.Err, a.estimateDuration(), a.termWidth)
		out = &spinner.Writer{W: out, Spin: spin}
		defer spin.Stop()
	}
	var (
		stats llm.ChatStats
		err   error
	)
	if mode == ModeOff {
		var st llm.ChatStats
		rr := secrets.NewReplyRedactor(out) // redacted as whole lines, as with tools
		st, _, err = sayingWaits(llm.PolicyOf(a.Config.Retry), &a.Terminal, spin).Chat(ctx, rr, func(ctx context.Context, w io.Writer) (llm.ChatStats, []anyllm.ToolCall, error) {
			s, err := client.Chat(ctx, history, w)
			return s, nil, err
		}, nil)
		rr.Flush()
		stats = st
		if err == nil {
			history = append(history, llm.Message{Role: llm.RoleAssistant, Content: reply.String()})
		}
	} else {
		ex := a.newToolExecutor(t)
		ex.retry = sayingWaits(llm.PolicyOf(a.Config.Retry), &a.Terminal, spin)
		ex.onRound = func() {
			if spin != nil {
				spin.Stop()
			}
			wrap.Reset()
		}
		history, stats, err = ex.RunToolLoop(ctx, history, out)
	}
	spin.Stop()
	if reply.Len() > 0 && !strings.HasSuffix(reply.String(), "\n") {
		fmt.Fprintln(a.Out)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			a.History = history
			a.Recorder.Assistant(reply.String()+" [cancelled]", "")
			return errors.New("cancelled")
		}
		// Keep what happened (tool results) so the model can continue.
		a.History = history
		a.Recorder.Assistant(reply.String(), "error: "+err.Error())
		return err
	}
	if strings.TrimSpace(reply.String()) == "" {
		toolsRan := false
		for _, m := range history[len(a.History):] {
			toolsRan = toolsRan || m.Role == llm.RoleTool
		}
		if !toolsRan {
			// Never a silent empty turn; the prompt is not kept, so it
			// can simply be sent again.
			a.Recorder.Assistant("", "error: empty reply")
			return errors.New("the model returned an empty reply; try again, rephrase, or /clear if the conversation is long")
		}
		a.logf("%s", a.dim("(the model gave no answer after the tool calls)"))
	}
	a.History = history
	a.recordStats(stats)
	a.events.TurnUsage(events.TurnFigures{PromptTokens: stats.PromptTokens, ReplyTokens: stats.ReplyTokens, Elapsed: stats.Elapsed,
		PromptEval: stats.PromptEval, Generation: stats.Generation, TokensPerSec: stats.TokensPerSec})
	used := llm.EstimateTokens(a.History) + t.schema
	a.logf("%s", a.dim(stats.Format()+" · ctx "+a.contextFill(used, t.window)))
	if t.window > 0 && used*10 >= t.fitThreshold()*9 {
		// Before the fill forces it: say what will happen and what to do.
		a.logf("%s", a.colorize("33", "· the context is nearly full: the next turn elides old tool results, then summarises the conversation; /summarize or /clear now, or raise num_ctx"))
	}
	a.Recorder.Assistant(reply.String(), stats.Format())
	if mode == ModeProse {
		offerRunSuggestions(ctx, a, reply.String())
	}
	return nil
}

// sayingWaits is a retry policy that says each wait on the terminal (the
// spinner stopped first).
func sayingWaits(p llm.RetryPolicy, tm *Terminal, spin *spinner.Spinner) llm.RetryPolicy {
	p.Notify = func(s string) {
		spin.Stop()
		tm.logf("%s", tm.colorize("33", "· "+s))
	}
	return p
}

// terminalSafeWriter makes model text harmless for the terminal.
type terminalSafeWriter struct{ w io.Writer }

func (t *terminalSafeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termtext.Sanitize(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// offerRunSuggestions offers backtick-wrapped `/run CMD` suggestions from a
// prose-mode reply to the user.
func offerRunSuggestions(ctx context.Context, a *Agent, reply string) {
	for _, m := range runSuggestionRE().FindAllStringSubmatch(reply, 3) {
		line := strings.TrimSpace(m[1])
		if !a.Interactive {
			a.logf("%s", a.dim("· suggested: /run "+termtext.Sanitize(line)))
			continue
		}
		ans, err := a.In.Ask(fmt.Sprintf("Run `%s`? [y/N] ", termtext.Sanitize(line)))
		if err != nil || !termtext.IsYes(ans) {
			continue
		}
		if err := cmdRunLine(ctx, a, line, a.Out); err != nil {
			a.logf("%s", a.colorize("31", err.Error()))
		}
	}
}

var runSuggestionRE = lazyre.New("`/run ([^`\n]+)`")

// newToolExecutor builds the executor for a turn.
func (a *Agent) newToolExecutor(t *turn) *ToolExecutor {
	return &ToolExecutor{
		registry:       a.Tools,
		client:         t.client,
		maxIterations:  t.maxRounds,
		maxOutputBytes: t.maxOut,
		turn:           t,
		host:           newTurnHost(a),
		prose:          t.mode == ModeProse,
		hooks:          a.gate.hooks,
		parallel:       a.Config.Tools.MaxParallel,
	}
}

// proseToolPrompt describes the tools for models without schema tool calling.
func (be *backend) proseToolPrompt(ts *toolSet) string {
	var sb strings.Builder
	sb.WriteString("To use a tool, reply with only a JSON object: {\"name\": \"TOOL\", \"arguments\": {...}}. The result comes back in the next message. Tools:\n")
	for _, t := range ts.toolsFor(be.ModelName, be.window(be.Client)) {
		f := t.Function
		props := coerce.Props(f.Parameters)
		req := map[string]bool{}
		if r, ok := f.Parameters["required"].([]string); ok {
			for _, x := range r {
				req[x] = true
			}
		}
		var ps, opt []string
		order := coerce.PropOrder(f.Parameters)
		if order == nil {
			order = slices.Sorted(maps.Keys(props))
		}
		for _, k := range order {
			if req[k] {
				ps = append(ps, k)
			} else {
				opt = append(opt, k+"?")
			}
		}
		ps = append(ps, opt...)
		fmt.Fprintf(&sb, "- %s(%s): %s\n", f.Name, strings.Join(ps, ", "), f.Description)
	}
	return strings.TrimSpace(sb.String())
}

// goOnForStopHooks runs your stop hooks after a reply that ended well: while
// one blocks, its reason goes to the model as your message and the model
// goes on (at most hooks.MaxStopRounds times).
func goOnForStopHooks(ctx context.Context, a *Agent, t *turn, err error) error {
	r := a.gate.hooks
	for round := 0; err == nil && r.Has(config.HookStop); round++ {
		r.SetConversation(len(a.History), hooks.TranscriptOf(a.History))
		reason, goOn := r.Stop(ctx, lastReply(a.History), round > 0)
		if !goOn {
			return nil
		}
		if round == hooks.MaxStopRounds {
			a.logf("%s", a.colorize("33", fmt.Sprintf("⚑ your stop hooks asked the model to go on %d times: the turn ends here", hooks.MaxStopRounds)))
			return nil
		}
		err = a.answer(ctx, t, append(a.History, llm.Message{Role: llm.RoleUser, Content: "[your stop hook: " + reason + "]"}))
	}
	return err
}

// lastReply is the text of the conversation's last assistant message.
func lastReply(history []llm.Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == llm.RoleAssistant {
			return history[i].Content
		}
	}
	return ""
}
