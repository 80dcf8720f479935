package harvey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

// A turn is built once, when the user's prompt arrives, and passed down:
// which client and model answer (the main model or a route's), in which
// tool mode, with which limits. Nothing below it looks back at the Agent's
// current model, so a route's turn runs with the route model's limits.
type turn struct {
	client    LLMClient
	model     string
	route     string        // the route's name; "" for the main model
	mode      ToolMode      // schema, prose or off
	window    int           // tokens every request must fit (0: the server reports overflow itself)
	maxRounds int           // max_tool_calls_per_turn of this model
	maxOut    int           // the cap on one tool result
	schema    int           // estimated tokens the tool schemas add to a request
	layout    promptLayout  // where the tools go in the prompt (layout.go)
	tools     []anyllm.Tool // the tools offered this turn (toolsFor)
	block     []anyllm.Tool // the tools in the prompt's fixed part (non-native layouts)
	announce  string        // new tools, announced at the head of this turn's prompt
	announced []string      // their names (marked told once the prompt is sent)
	trace     *turnTrace    // what each round did; nil unless asked for (harvey model check)
}

// prepare is what one request of the turn sends: the messages with the
// tools where the layout keeps them — for llama3 and mistral the block
// pinned for the session (later tools were announced in a prompt) — and
// the tools field. No tools (prose mode): the messages as they are.
func (t *turn) prepare(msgs []Message, tools []anyllm.Tool) ([]Message, []anyllm.Tool) {
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

// turnKey carries the turn in the context its tool handlers get.
type turnKey struct{}

func withTurn(ctx context.Context, t *turn) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

// resultCap is the cap on one tool result or command output for the turn
// in ctx (a route's model has its own window), or for the main model.
func (g *Gate) resultCap(ctx context.Context) int {
	if t, ok := ctx.Value(turnKey{}).(*turn); ok && t != nil {
		return t.maxOut
	}
	return g.maxOut()
}

// maxOut is the cap on one tool result or command output for the main
// model: max_output_bytes, and for a model whose server cuts prompts to a
// fixed window (Ollama) no more than that window allows, so one result
// cannot push the system prompt and tools out of it.
func (be *backend) maxOut() int {
	return capFor(be.cfg.MaxOutputBytes(), be.window(be.Client))
}

func capFor(configured, window int) int {
	if window > 0 {
		return min(configured, contextResultCap(window))
	}
	return configured
}

// window is the fixed context window of client (0 when its server reports
// overflow as an error instead of cutting the prompt).
func (be *backend) window(c LLMClient) int {
	if w, ok := c.(WindowedClient); ok {
		return w.ContextWindow()
	}
	return 0
}

// numCtx is the context window shown to the user: the client's, or the
// configured num_ctx when no windowed client is attached.
func (be *backend) numCtx() int {
	if n := be.window(be.Client); n > 0 {
		return n
	}
	n := be.cfg.EffectiveNumCtx(be.ModelName)
	if m := be.modelCtx[be.ModelName]; m > 0 && m < n {
		return m
	}
	return n
}

// mainTurn is a turn for the main model.
func (a *Agent) mainTurn() *turn {
	t := &turn{client: a.Client, model: a.ModelName, mode: a.toolMode(), window: a.window(a.Client),
		maxRounds: a.Config.MaxToolCalls(a.ModelName)}
	t.maxOut = capFor(a.Config.MaxOutputBytes(), t.window)
	t.tools = a.toolsFor(t.model, t.window)
	t.schema = schemaTokensOf(t.mode, t.tools)
	if t.mode == ModeSchema {
		t.layout = a.layouts[a.ModelName]
		if t.layout != layoutNative {
			t.block, t.announce, t.announced = a.pinToolBlock(t.model, t.layout, t.tools)
		}
	}
	return t
}

// routeTurn is a turn for the route name: its own client, model, tool mode
// and limits. The caller closes t.client.
func (a *Agent) routeTurn(ctx context.Context, name string) (*turn, error) {
	_, rt := a.Routes.find(name)
	if rt == nil {
		return nil, fmt.Errorf("no route @%s; see /route list", name)
	}
	if !rt.Enabled {
		return nil, fmt.Errorf("route @%s is disabled; /route enable %s", rt.Name, rt.Name)
	}
	c, err := a.Routes.client(rt, time.Duration(a.Config.OllamaTimeout), a.Config.EffectiveNumCtx(rt.Model))
	if err != nil {
		return nil, err
	}
	t := &turn{client: c, model: rt.Model, route: rt.Name, window: a.window(c), maxRounds: a.Config.MaxToolCalls(rt.Model)}
	switch {
	case a.toolsOff || !a.Config.ToolsEnabled(rt.Model):
		t.mode = ModeOff
	default:
		t.mode = ModeSchema // servers that cannot say: tools unless configured off
		if p, ok := c.(ToolProber); ok {
			t.mode = ModeProse
			if cp, err := p.ToolSupport(ctx, rt.Model); err == nil && cp == CapYes {
				t.mode = ModeSchema
			}
		}
	}
	t.maxOut = capFor(a.Config.MaxOutputBytes(), t.window)
	t.tools = a.toolsFor(t.model, t.window)
	t.schema = schemaTokensOf(t.mode, t.tools)
	return t, nil
}

// newTurn builds the turn for a prompt ("@route rest" goes to the route)
// and returns the prompt to send.
func (a *Agent) newTurn(ctx context.Context, prompt string) (*turn, string, error) {
	name, rest, ok := splitMention(prompt)
	if !ok {
		if a.Client == nil {
			if a.connectErr != nil {
				return nil, "", a.connectErr
			}
			return nil, "", errNoBackend(a)
		}
		return a.mainTurn(), prompt, nil
	}
	t, err := a.routeTurn(ctx, name)
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
func (a *Agent) schemaTokens(mode ToolMode) int {
	return schemaTokensOf(mode, a.toolsFor(a.ModelName, a.window(a.Client)))
}

func schemaTokensOf(mode ToolMode, tools []anyllm.Tool) int {
	if mode != ModeSchema {
		return 0
	}
	b, _ := json.Marshal(tools)
	return len(b) / 4
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
		a.saveSession()
		return err
	}
	err := a.chatTurn(ctx, line)
	a.saveSession()
	return err
}

// chatTurn sends a prompt to the model (or a route), with tools when the
// model supports them.
func (a *Agent) chatTurn(ctx context.Context, prompt string) error {
	a.mcp.refresh(ctx) // between turns only
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
	client, mode := t.client, t.mode
	a.Recorder.User(prompt)
	if err := a.fitContext(ctx, t); err != nil {
		return err
	}
	if t.announce != "" {
		prompt = t.announce + "\n\n" + prompt
		a.markAnnounced(t.model, t.announced)
	}
	history := append(a.History, Message{Role: RoleUser, Content: prompt})

	var spin *Spinner
	var out io.Writer = a.Out
	var reply strings.Builder
	out = io.MultiWriter(&terminalSafeWriter{w: a.Out}, &reply)
	if a.Interactive && a.Color {
		spin = newSpinner(a.Err, a.estimateDuration(), a.termWidth)
		out = &spinnerWriter{w: out, spin: spin}
		defer spin.Stop()
	}
	var (
		stats ChatStats
		err   error
	)
	if mode == ModeOff {
		var st ChatStats
		st, err = client.Chat(ctx, history, out)
		stats = st
		if err == nil {
			history = append(history, Message{Role: RoleAssistant, Content: reply.String()})
		}
	} else {
		ex := a.newToolExecutor(t)
		ex.onRound = func() {
			if spin != nil {
				spin.Stop()
			}
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
			toolsRan = toolsRan || m.Role == RoleTool
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
	used := estimateTokens(a.History) + t.schema
	a.logf("%s", a.dim(stats.Format()+" · ctx "+a.contextFill(used, t.window)))
	if t.window > 0 && used*10 >= t.fitThreshold()*9 {
		// Before the fill forces it: say what will happen and what to do.
		a.logf("%s", a.colorize("33", "· the context is nearly full: the next turn elides old tool results, then summarises the conversation; /summarize or /clear now, or raise num_ctx"))
	}
	a.Recorder.Assistant(reply.String(), stats.Format())
	if mode == ModeProse {
		a.offerRunSuggestions(ctx, reply.String())
	}
	return nil
}

// terminalSafeWriter makes model text harmless for the terminal.
type terminalSafeWriter struct{ w io.Writer }

func (t *terminalSafeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, sanitizeForTerminal(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// offerRunSuggestions offers backtick-wrapped `/run CMD` suggestions from a
// prose-mode reply to the user.
func (a *Agent) offerRunSuggestions(ctx context.Context, reply string) {
	for _, m := range runSuggestionRE.FindAllStringSubmatch(reply, 3) {
		line := strings.TrimSpace(m[1])
		if !a.Interactive {
			a.logf("%s", a.dim("· suggested: /run "+sanitizeForTerminal(line)))
			continue
		}
		ans, err := a.In.Ask(fmt.Sprintf("Run `%s`? [y/N] ", sanitizeForTerminal(line)))
		if err != nil || !strings.EqualFold(strings.TrimSpace(ans), "y") {
			continue
		}
		if err := cmdRunLine(ctx, a, line, a.Out); err != nil {
			a.logf("%s", a.colorize("31", err.Error()))
		}
	}
}

var runSuggestionRE = regexp.MustCompile("`/run ([^`\n]+)`")

// contextFill shows used tokens (the conversation and what the tools add
// to a request) against the window, e.g. "~3.1k of 8k tokens (38%)".
func (be *backend) contextFill(used, window int) string {
	n := window
	if n == 0 {
		n = be.numCtx()
	}
	if n <= 0 {
		return fmt.Sprintf("~%s tokens", kilo(used))
	}
	return fmt.Sprintf("~%s of %s tokens (%d%%)", kilo(used), kilo(n), used*100/n)
}

// kilo writes a token count as 950, 3.1k or 131k.
func kilo(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	}
	return fmt.Sprintf("%dk", (n+500)/1000)
}
