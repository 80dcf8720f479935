package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options configure a session (from the command line).
type Options struct {
	Dir         string // workspace (default: current directory)
	Model       string
	OllamaURL   string
	AutoApprove bool
	Interactive bool // stdin is a terminal and no -p/--run
	Stdin       io.Reader
	Stdout      io.Writer
	Stderr      io.Writer
	StdinTTY    bool
	StderrTTY   bool
	Continue    bool // resume the last conversation (agents/sessions/last.json)
}

// Start opens the workspace, loads the config and connects to a backend.
// Harvey starts even when no model is reachable: commands still work.
func Start(ctx context.Context, o Options) (*Agent, error) {
	ws, err := OpenWorkspace(o.Dir)
	if err != nil {
		return nil, err
	}
	cf, cerr := LoadConfig(ws)
	in := NewLineReader(o.Stdin)
	a := NewAgent(ws, cf, in, &termWriter{w: o.Stdout}, &termWriter{w: o.Stderr})
	a.Interactive = o.Interactive
	a.AutoApprove = o.AutoApprove
	if o.StdinTTY {
		// The line editor exists before connecting, so start-up questions
		// (start Ollama? which model?) are asked like every later one.
		a.editor = newLineEditor(a)
		in.prompt = a.editor.readLine
	}
	a.Color = colorAllowed(o.StderrTTY)
	if cerr != nil {
		a.logf("%s", a.colorize("31", "warning: "+cerr.Error()))
	}
	for _, w := range cf.Warnings {
		a.logf("%s", a.colorize("33", "warning: "+w))
	}
	a.confirmWorkspaceConfig()
	a.Tools.SetAllowed(cf.Tools.AllowedTools)
	for _, p := range a.toolProblems {
		a.logf("%s", a.colorize("33", "warning: skipped tool: "+p.Error()))
	}
	if len(a.userTools) > 0 {
		a.logf("user tools from %s/: %s", UserToolsDir, strings.Join(a.userTools, ", "))
	}
	a.warnAgentsNotIgnored()
	if sb := sandboxAvailable(); !sb.enforced() {
		a.logf("%s", a.colorize("33", "warning: "+sb.why))
	}
	repairNewestRecording(ws)
	a.OllamaURL = resolveOllamaURL(o.OllamaURL, cf.OllamaURL)
	model := o.Model
	if model == "" {
		model = cf.Model
	}
	if o.Continue {
		n, saved, err := a.resumeSession()
		if err != nil {
			a.logf("%s", a.colorize("33", "warning: "+err.Error()))
		} else {
			a.logf("%s", a.dim(fmt.Sprintf("· continuing the last conversation (%d messages)", n)))
			if model == "" {
				model = saved
			}
		}
	}
	a.connect(ctx, model)
	if cf.AutoRecord {
		if r, err := StartRecorder(ws, "", a.ModelName, a.maxOut()); err == nil {
			a.Recorder = r
		}
	}
	return a, nil
}

// confirmWorkspaceConfig asks, once per workspace, before using settings
// of a workspace's agents/harvey.yaml that send data somewhere or loosen a
// limit; headless they are ignored with one line.
func (a *Agent) confirmWorkspaceConfig() {
	cf := a.Config
	if len(cf.Gated) == 0 {
		return
	}
	if !a.Interactive {
		a.logf("%s", a.colorize("33", fmt.Sprintf("warning: %s (not written by Harvey, not yet confirmed) sets %s; ignored headless — start harvey in this directory once to confirm", ConfigPath, strings.Join(gatedNames(cf.Gated), ", "))))
		cf.DeclineWorkspace()
		return
	}
	fmt.Fprintf(a.Err, "%s %s was not written by Harvey (it may come from the repository). It:\n", a.colorize("33", "?"), ConfigPath)
	for _, g := range cf.Gated {
		fmt.Fprintf(a.Err, "  - %s: %s\n", g.Key, sanitizeForTerminal(g.Shown))
	}
	ans, err := a.In.ReadLine("Use these settings in this workspace? [y/N] ")
	if err == nil && strings.EqualFold(strings.TrimSpace(ans), "y") {
		if err := cf.AcceptWorkspace(a.Workspace.Root); err != nil {
			a.logf("%s", a.colorize("33", "warning: settings used, but the confirmation was not saved: "+err.Error()))
		}
		return
	}
	cf.DeclineWorkspace()
	a.logf("%s", a.dim("· ignored for this session; you will be asked again next time"))
}

// resolveOllamaURL: --ollama, else OLLAMA_HOST, else config, else default.
func resolveOllamaURL(flag, cfg string) string {
	for _, s := range []string{flag, os.Getenv("OLLAMA_HOST"), cfg} {
		if strings.TrimSpace(s) != "" {
			if u, err := NormalizeOllamaURL(s); err == nil {
				return u
			}
		}
	}
	return DefaultOllamaURL
}

// connect picks the model: the given name > the only installed model > a
// menu (interactive). Headless with several models and none chosen is an
// error at the first prompt, listing them.
func (a *Agent) connect(ctx context.Context, model string) {
	oc, err := NewOllamaClient(a.OllamaURL, model, a.Config.EffectiveNumCtx(model), a.Config.KeepAlive, time.Duration(a.Config.OllamaTimeout))
	if err != nil {
		a.logf("warning: %v", err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	models, err := oc.Models(pctx)
	if err != nil && a.offerOllamaStart(ctx, oc) {
		models, err = oc.Models(ctx)
	}
	if err != nil {
		if a.Interactive {
			a.logf("%s", a.dim("· "+err.Error()))
			a.logf("%s", a.dim("· commands work without a model; /ollama start tries to start it, /help lists commands"))
		}
		a.connectErr = err
		return
	}
	if model == "" {
		switch {
		case len(models) == 1:
			model = models[0]
		case len(models) == 0:
			a.connectErr = errors.New("Ollama has no models installed; pull one with: ollama pull llama3.2")
			if a.Interactive {
				a.logf("%s", a.dim("· "+a.connectErr.Error()))
			}
			return
		case a.Interactive:
			model = a.chooseModel(models)
			if model == "" {
				a.connectErr = errors.New("no model chosen; pick one with /model NAME")
				return
			}
		default:
			a.connectErr = fmt.Errorf("several models are installed (%s); choose one with --model NAME", strings.Join(models, ", "))
			return
		}
	}
	if err := a.UseModel(pctx, model); err != nil {
		a.connectErr = err
		if a.Interactive {
			a.logf("%s", a.colorize("31", err.Error()))
		}
		return
	}
	if a.Interactive {
		a.logf("%s", a.dim(fmt.Sprintf("· %s (tool mode: %s)", a.Client.Name(), a.toolMode())))
	}
}

// offerOllamaStart asks, in an interactive session only, whether to start
// a local Ollama that is not answering, when the ollama binary is there.
func (a *Agent) offerOllamaStart(ctx context.Context, oc *OllamaClient) bool {
	if !a.Interactive || !isLoopbackURL(oc.BaseURL) {
		return false
	}
	if _, err := exec.LookPath("ollama"); err != nil {
		return false
	}
	ans, err := a.In.ReadLine(fmt.Sprintf("Ollama is not answering at %s. Start it now (ollama serve)? [y/N] ", oc.BaseURL))
	if err != nil || !strings.EqualFold(strings.TrimSpace(ans), "y") {
		return false
	}
	if err := startOllama(ctx, oc, a.Err); err != nil {
		a.logf("%s", a.colorize("31", err.Error()))
		return false
	}
	return true
}

// isLoopbackURL reports whether a server URL points at this machine.
func isLoopbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// chooseModel shows a numbered menu.
func (a *Agent) chooseModel(models []string) string {
	fmt.Fprintln(a.Err, "Installed models:")
	for i, m := range models {
		fmt.Fprintf(a.Err, "  %d) %s\n", i+1, m)
	}
	for {
		ans, err := a.In.ReadLine("Choose a model [1]: ")
		if err != nil {
			return ""
		}
		ans = strings.TrimSpace(ans)
		if ans == "" {
			return models[0]
		}
		if n, err := strconv.Atoi(ans); err == nil && n >= 1 && n <= len(models) {
			return models[n-1]
		}
		if m, ok := matchModel(ans, models); ok {
			return m
		}
		fmt.Fprintln(a.Err, "type a number from the list")
	}
}

// warnAgentsNotIgnored warns once when agents/ is not in .gitignore.
func (a *Agent) warnAgentsNotIgnored() {
	if _, err := a.Workspace.root.Lstat(".git"); err != nil {
		return
	}
	data, err := a.Workspace.root.ReadFile(".gitignore")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			l := strings.TrimSpace(line)
			if l == "agents" || l == "agents/" || l == "/agents" || l == "/agents/" || l == "agents/*" || l == "/agents/*" {
				return
			}
		}
	}
	a.logf("%s", a.colorize("33", "warning: agents/ (Harvey's config, history and sessions) is not in .gitignore; add a line \"agents/\" so it is never committed"))
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
	history := append(a.History, Message{Role: "user", Content: prompt})

	var spin *Spinner
	var out io.Writer = a.Out
	var reply strings.Builder
	out = io.MultiWriter(&terminalSafeWriter{w: a.Out}, &reply)
	if a.Interactive && a.Color {
		spin = newSpinner(a.Err, a.estimateDuration())
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
			history = append(history, Message{Role: "assistant", Content: reply.String()})
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
			toolsRan = toolsRan || m.Role == "tool"
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
	a.logf("%s", a.dim(stats.Format()))
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
		ans, err := a.In.ReadLine(fmt.Sprintf("Run `%s`? [y/N] ", sanitizeForTerminal(line)))
		if err != nil || !strings.EqualFold(strings.TrimSpace(ans), "y") {
			continue
		}
		if err := cmdRunLine(ctx, a, line, a.Out); err != nil {
			a.logf("%s", a.colorize("31", err.Error()))
		}
	}
}

// ---- the REPL ----

// Run is the interactive loop. It returns when the user leaves.
func (a *Agent) Run(ctx context.Context, o Options) error {
	ed := a.editor
	if a.Interactive {
		fmt.Fprintf(a.Err, "Harvey %s — workspace %s. /help for commands, Ctrl-D to leave.\n", Version, a.Workspace.Root)
	}
	for {
		var line string
		var err error
		if ed != nil {
			line, err = ed.readLine("harvey> ")
		} else {
			line, err = a.In.ReadLine("")
		}
		if err == io.EOF {
			if a.Interactive {
				fmt.Fprintln(a.Err)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if ed != nil {
			ed.remember(line)
		}
		turnCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		err = a.RunPrompt(turnCtx, line)
		stop()
		if errors.Is(err, ErrExit) {
			return nil
		}
		if err != nil {
			a.logf("%s", a.colorize("31", oneLine(err.Error())))
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r", "")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return sanitizeForTerminal(s)
}

var runSuggestionRE = regexp.MustCompile("`/run ([^`\n]+)`")
