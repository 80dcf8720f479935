package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/ollama"
	"github.com/harvey-agent/harvey/internal/rag"
	"github.com/harvey-agent/harvey/internal/recorder"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
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
	Continue    bool // resume the last conversation (agents/sessions/last.jsonl)
	NoMCP       bool // start no MCP server (harvey model check)
	// WaitForServer: a server that refuses the first connection is tried
	// again within the retry budget when the first prompt needs it (the
	// CLI: a script, or a Pi that boots both, may start Ollama and Harvey
	// together; in the REPL the wait is a turn's, and Ctrl-C stops it).
	WaitForServer bool
}

// Start opens the workspace, loads the config and connects to a backend.
// Harvey starts even when no model is reachable: commands still work.
func Start(ctx context.Context, o Options) (*Agent, error) {
	recovered := recoverBeforeStart(o.Dir, o.Stderr)
	ws, err := openWorkspace(o.Dir)
	if err != nil {
		return nil, err
	}
	cf, cerr := configfile.Load(ws.Tree)
	if errors.Is(cerr, configfile.ErrUserConfig) {
		ws.Close()
		return nil, cerr
	}
	in := newLineReader(o.Stdin)
	in.show = o.Stderr // a question asked with no line editor is shown
	a := newAgent(ws, cf, in, &termtext.Writer{W: o.Stdout}, &termtext.Writer{W: o.Stderr})
	for _, l := range recovered {
		a.gate.log.Record("undone", l, audit.Denied, 0)
	}
	a.Interactive = o.Interactive
	a.approvals.auto = o.AutoApprove
	if o.StdinTTY {
		// The line editor exists before connecting, so start-up questions
		// (start Ollama? which model?) are asked like every later one.
		ed := newLineEditor(a.Workspace, a.commands, sessionModelNames(a))
		a.editor = ed
		in.prompt = ed.ReadLine
		in.answer = ed.ReadAnswer
	}
	a.Color = colorAllowed(o.StderrTTY)
	a.tty = firstTTY(o.Stdout, o.Stderr)
	a.outTTY = a.tty != nil && firstTTY(o.Stdout) == a.tty
	a.settleWorkspace(cerr)
	recorder.Tidy(ws.Tree, cf.KeepRecordings)
	a.OllamaURL = resolveOllamaURL(o.OllamaURL, cf.OllamaURL)
	a.gate.embedFor = rag.WorkspaceEmbedder(cf.RAG, a.OllamaURL, newEmbedder)
	a.gate.hooks = hooks.New(cf.Hooks, hookHost{a.gate, &a.Terminal}, ws.Root, Version) // after the workspace's were confirmed (or left out)
	model := o.Model
	if model == "" {
		model = cf.Model
	}
	if o.Continue {
		model = a.continueSession(model)
	}
	a.connect(ctx, model, connectStart)
	if a.Client == nil {
		// A server that comes up later is used by the next prompt: each
		// prompt without a model tries once more, quietly.
		a.reconnect = func(ctx context.Context) { a.connect(ctx, model, connectQuiet) }
	}
	if o.WaitForServer && a.Client == nil && errors.Is(a.connectErr, syscall.ECONNREFUSED) && serverMayStart(a.OllamaURL) {
		// Installed here, or on another machine: it may be starting, so
		// the first prompt waits for it (on screen; Ctrl-C stops it).
		a.reconnect = func(ctx context.Context) {
			a.connect(ctx, model, connectWait)
			a.reconnect = func(ctx context.Context) { a.connect(ctx, model, connectQuiet) }
		}
		if a.Interactive {
			a.logf("%s", a.dim("· your first prompt waits for it to answer (retry: in your config; Ctrl-C stops the wait)"))
		}
	}
	if !o.NoMCP {
		a.startMCP(ctx, true)
	}
	a.mcpReady(ctx, false)
	a.gate.hooks.SessionStart(ctx, map[bool]string{true: "resume", false: "startup"}[o.Continue])
	a.warmStart()                                                    // REPL and Ollama only: the prompt's head is evaluated while you type
	a.indexing = startIndexing(&a.Terminal, a.Workspace, a.indexing) // REPL only: the index is brought up to date while you type
	if cf.AutoRecord {
		if r, err := recorder.Start(ws.Tree, "", a.ModelName, a.maxOut()); err == nil {
			a.Recorder = r
		}
	}
	return a, nil
}

// recoverBeforeStart makes the check after a command that Harvey did not
// live to make (the journal, internal/guard), before anything opens
// agents/, reads the workspace's config or runs, and says what it undid.
func recoverBeforeStart(dir string, stderr io.Writer) []string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	said := guard.Recover(abs)
	for _, l := range said {
		fmt.Fprintln(stderr, l)
	}
	return said
}

// serverMayStart reports whether a server that refused may still come: it
// is on another machine (booting), or Ollama is installed here (a service
// starting). Harvey waits only then, in the REPL and headless; with
// neither, a new user learns at once what to install.
func serverMayStart(url string) bool {
	return !secrets.IsLoopbackURL(url) || ollamaInstalled()
}

// ollamaInstalled reports whether Ollama is installed on this machine: its
// program on PATH, its service (systemd, as its installer leaves it) or
// its macOS app.
func ollamaInstalled() bool {
	if _, err := exec.LookPath("ollama"); err == nil {
		return true
	}
	for _, p := range []string{"/etc/systemd/system/ollama.service", "/usr/lib/systemd/system/ollama.service", "/lib/systemd/system/ollama.service", "/Applications/Ollama.app"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// connectMode is how connect meets a server that does not answer.
type connectMode int

const (
	connectStart connectMode = iota // at start: offer to start Ollama (REPL), say why not and what to do
	connectWait                     // the first prompt after a refused start: wait within the retry budget
	connectQuiet                    // a later prompt: one quick try, nothing said unless it connects
)

// waitForServer tries a server that refused the first connection again
// within the retry budget (retry: in your config), saying so in
// one line: a script that starts Ollama and Harvey together, or a Pi that
// boots both, gets its turn. A server still absent fails with err.
func waitForServer(ctx context.Context, tm *Terminal, p llm.RetryPolicy, oc *ollama.Client, err error) ([]string, error) {
	var total time.Duration
	for n := 1; n <= p.Attempts; n++ {
		total += p.Wait(n, 0)
	}
	if total == 0 {
		return nil, err
	}
	stop := ""
	if tm.Interactive {
		stop = "; Ctrl-C to stop"
	}
	tm.logf("%s", tm.dim(fmt.Sprintf("· Ollama at %s is not answering yet (connection refused): trying again for up to %s%s", oc.BaseURL, llm.RoundWait(total), stop)))
	for n := 1; n <= p.Attempts; n++ {
		if llm.SleepCtx(ctx, p.Wait(n, 0)) != nil {
			return nil, err
		}
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		models, e := oc.Models(tctx)
		cancel()
		if e == nil {
			return models, nil
		}
		if !errors.Is(e, syscall.ECONNREFUSED) {
			return nil, e
		}
	}
	return nil, fmt.Errorf("%w (still refused after %s)", err, llm.RoundWait(total))
}

// firstTTY is the first of ws that is a terminal (for its width), or nil.
func firstTTY(ws ...io.Writer) *os.File {
	for _, w := range ws {
		if f, ok := w.(*os.File); ok && termtext.IsTTY(f) {
			return f
		}
	}
	return nil
}

// settleWorkspace says what start-up found in the workspace (the config's
// problems, the user tools, an agents/ git would commit, a sandbox that
// cannot be enforced) and asks about what a repository may have brought
// (its config, its tools).
func (a *Agent) settleWorkspace(configErr error) {
	if configErr != nil {
		a.logf("%s", a.colorize("31", "warning: "+configErr.Error()))
	}
	for _, w := range a.Config.Warnings {
		a.logf("%s", a.colorize("33", "warning: "+w))
	}
	a.confirmWorkspaceConfig(a.Config, a.Workspace)
	a.confirmUserTools(&a.Terminal, a.Workspace)
	a.settleSkills(&a.Terminal, a.gate)
	a.Tools.SetAllowed(a.Config.Tools.AllowedTools)
	for _, p := range a.toolProblems {
		a.logf("%s", a.colorize("33", "warning: skipped tool: "+p.Error()))
	}
	if len(a.ownTools) > 0 {
		a.logf("your tools from %s/: %s", OwnToolsLabel, strings.Join(a.ownTools, ", "))
	}
	if len(a.userTools) > 0 {
		a.logf("user tools from %s/: %s", UserToolsDir, strings.Join(a.userTools, ", "))
	}
	a.warnAgentsNotIgnored(a.Workspace)
	if m := sandbox.Available().Mode(); m != sandbox.ModeFull && m != sandbox.ModeSeatbelt {
		a.logf("%s", a.colorize("33", sandboxpolicy.Line(a.Config.Sandbox)))
	}
	for _, p := range a.Config.Sandbox.Ports {
		if err := runner.PublishPort(p, a.Config.Sandbox.Hosts); err != nil {
			a.logf("%s", a.colorize("33", fmt.Sprintf("warning: sandbox.ports: %d: %v", p, err)))
		} else {
			a.logf("%s", a.dim(fmt.Sprintf("· the session's port %d is published on 127.0.0.1:%d (sandbox.ports)", p, p)))
		}
	}
}

// continueSession picks up the last conversation (--continue) and returns
// the model to use: model, or the one that conversation used.
func (a *Agent) continueSession(model string) string {
	n, saved, err := a.resumeSession()
	if err != nil {
		a.logf("%s", a.colorize("33", "warning: "+err.Error()))
		return model
	}
	a.logf("%s", a.dim("· continuing the last conversation ("+termtext.Plural(n, "message")+")"+a.lastExchange()))
	if a.unanswered() {
		a.logf("%s", a.colorize("33", "· its last turn has no answer yet (the model's call failed); /retry asks the model again — the tools that ran are not run again"))
	}
	if model == "" {
		return saved
	}
	return model
}

// confirmWorkspaceConfig asks, once per workspace, before using settings
// of a workspace's agents/harvey.yaml that send data somewhere or loosen a
// limit; headless they are ignored with one line.
func (tm *Terminal) confirmWorkspaceConfig(cf *configfile.File, ws *Workspace) {
	if len(cf.Gated) == 0 {
		return
	}
	var files []string
	for _, g := range cf.Gated {
		if !slices.Contains(files, g.Source()) {
			files = append(files, g.Source())
		}
	}
	if !tm.Interactive {
		tm.logf("%s", tm.colorize("33", fmt.Sprintf("warning: %s (not written by Harvey, not yet confirmed) %s; ignored headless — start harvey in this directory once to confirm", strings.Join(files, ", "), termtext.Sanitize(configfile.GatedSummary(cf.Gated)))))
		cf.DeclineWorkspace()
		return
	}
	for _, f := range files {
		fmt.Fprintf(tm.Err, "%s %s was not written by Harvey (it may come from the repository). It:\n", tm.colorize("33", "?"), f)
		for _, g := range cf.Gated {
			if g.Source() == f {
				fmt.Fprintf(tm.Err, "  - %s: %s\n", g.Key, termtext.Sanitize(g.Shown))
			}
		}
	}
	ans, err := tm.In.Ask("Use these settings in this workspace? [y/N] ")
	if err == nil && termtext.IsYes(ans) {
		if err := cf.AcceptWorkspace(ws.Root); err != nil {
			tm.logf("%s", tm.colorize("33", "warning: settings used, but the confirmation was not saved: "+err.Error()))
		}
		return
	}
	cf.DeclineWorkspace()
	tm.logf("%s", tm.dim("· ignored for this session; you will be asked again next time"))
}

// resolveOllamaURL: --ollama, else OLLAMA_HOST, else config, else default.
func resolveOllamaURL(flag, cfg string) string {
	for _, s := range []string{flag, os.Getenv("OLLAMA_HOST"), cfg} {
		if strings.TrimSpace(s) != "" {
			if u, err := ollama.NormalizeURL(s); err == nil {
				return u
			}
		}
	}
	return config.DefaultOllamaURL
}

// connect picks the model: the given name > the only installed model > a
// menu (interactive). Headless with several models and none chosen is an
// error at the first prompt, listing them.
func (a *Agent) connect(ctx context.Context, model string, mode connectMode) {
	oc, err := newOllamaClient(a.OllamaURL, model, a.Config.EffectiveNumCtx(model), a.Config.KeepAlive, time.Duration(a.Config.OllamaTimeout))
	if err != nil {
		a.logf("warning: %v", err)
		return
	}
	models, err := serverModels(ctx, &a.Terminal, &a.backend, llm.PolicyOf(a.Config.Retry), oc, mode)
	if err != nil {
		a.connectErr = notInstalled(err, a.OllamaURL)
		if a.Interactive && mode == connectStart { // after a wait, the turn says why it failed
			a.logf("%s", a.dim("· "+a.connectErr.Error()))
			hint := "· commands work without a model; /ollama start tries to start it, /help lists commands"
			if !ollamaInstalled() {
				hint = "· commands work without a model; /help lists commands"
			}
			a.logf("%s", a.dim(hint))
		}
		return
	}
	if mode == connectQuiet && a.Interactive {
		a.logf("%s", a.dim("· Ollama at "+oc.BaseURL+" answers now"))
	}
	if model == "" {
		if model, err = pickModel(ctx, a, oc, models); err != nil {
			a.connectErr = err
			return
		}
	}
	// A fresh deadline: the question above may have taken the user a while.
	uctx, ucancel := context.WithTimeout(ctx, 30*time.Second)
	defer ucancel()
	if err := a.UseModel(uctx, model); err != nil {
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

// serverModels asks the server for its models as mode says: at start,
// offering to start Ollama when it refuses; the first prompt after that,
// waiting within the retry budget; later prompts, once.
func serverModels(ctx context.Context, tm *Terminal, be *backend, retry llm.RetryPolicy, oc *ollama.Client, mode connectMode) ([]string, error) {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	models, err := oc.Models(pctx)
	switch {
	case err == nil:
	case mode == connectWait && errors.Is(err, syscall.ECONNREFUSED):
		models, err = waitForServer(ctx, tm, retry, oc, err)
	case mode == connectStart && be.offerOllamaStart(ctx, tm, oc):
		models, err = oc.Models(ctx)
	}
	return models, err
}

// notInstalled is a refused connection to this machine's Ollama where
// there is none to wait for: the error says what to install.
func notInstalled(err error, url string) error {
	if errors.Is(err, syscall.ECONNREFUSED) && secrets.IsLoopbackURL(url) && !ollamaInstalled() {
		return ollama.RefusedError{Msg: fmt.Sprintf("cannot reach Ollama at %s, and Ollama is not installed here: install it (https://ollama.com/download), then run `ollama pull llama3.2`; or point Harvey at another server with --ollama URL", url)}
	}
	return err
}

// pickModel chooses the model when none was named: the only one
// installed (said, when its check failed), or your pick from the menu in
// the REPL (saved in your config); headless with several, an error.
func pickModel(ctx context.Context, a *Agent, oc *ollama.Client, models []string) (string, error) {
	switch {
	case len(models) == 1:
		if r, failed := modelcheck.Failed(models[0]); failed {
			// The only model, but not silently: say what its check found.
			a.logf("%s", a.colorize("33", fmt.Sprintf("warning: %s is the only model installed; its last check (harvey model check, %s): %s", models[0], r.CheckedAt.Format("2006-01-02"), r.Verdict)))
		}
		return models[0], nil
	case len(models) == 0:
		err := errors.New("Ollama has " + noModelsHint)
		if a.Interactive {
			a.logf("%s", a.dim("· "+err.Error()))
		}
		return "", err
	case a.Interactive:
		model := a.chooseModel(models, modelDetails(ctx, oc))
		if model == "" {
			return "", errors.New("no model chosen; pick one with /model NAME")
		}
		if p, err := configfile.SaveUserModel(model); err == nil {
			a.logf("%s", a.dim("· "+model+" saved as your model in "+p))
		}
		return model, nil
	}
	return "", fmt.Errorf("several models are installed (%s); choose one with --model NAME", strings.Join(models, ", "))
}

// offerOllamaStart asks, in an interactive session only, whether to start
// a local Ollama that is not answering, when the ollama binary is there.
func (be *backend) offerOllamaStart(ctx context.Context, tm *Terminal, oc *ollama.Client) bool {
	if !tm.Interactive || !secrets.IsLoopbackURL(oc.BaseURL) {
		return false
	}
	if _, err := exec.LookPath("ollama"); err != nil {
		return false
	}
	ans, err := tm.In.Ask(fmt.Sprintf("Ollama is not answering at %s. Start it now (ollama serve)? [y/N] ", oc.BaseURL))
	if err != nil || !termtext.IsYes(ans) {
		return false
	}
	st, err := startOllama(ctx, oc, tm.Err)
	if st != nil {
		be.ollama = st
	}
	if err != nil {
		tm.logf("%s", tm.colorize("31", err.Error()))
		return false
	}
	return true
}

// chooseModel shows a numbered menu.
func (tm *Terminal) chooseModel(models []string, details map[string]string) string {
	fmt.Fprintln(tm.Err, "Installed models:")
	modelTable(tm.Err, models, details, func(i int, _ string) string { return fmt.Sprintf("  %d) ", i+1) })
	// Enter takes the first model whose last check did not fail (a model
	// that failed is chosen only by name or number).
	def := 0
	for i, m := range models {
		if _, failed := modelcheck.Failed(m); !failed {
			def = i
			break
		}
	}
	for {
		ans, err := tm.In.Ask(fmt.Sprintf("Choose a model [%d]: ", def+1))
		if err != nil {
			return ""
		}
		ans = strings.TrimSpace(ans)
		if ans == "" {
			if _, failed := modelcheck.Failed(models[def]); failed {
				fmt.Fprintln(tm.Err, "every model here failed its last check; type a number to choose one anyway")
				continue
			}
			return models[def]
		}
		if n, err := strconv.Atoi(ans); err == nil && n >= 1 && n <= len(models) {
			return models[n-1]
		}
		if m, ok := matchModel(ans, models); ok {
			return m
		}
		fmt.Fprintln(tm.Err, "type a number from the list")
	}
}

// warnAgentsNotIgnored warns, once per workspace, when agents/ is not in
// .gitignore.
// ignoresItself reports whether agents/ holds a .gitignore that ignores
// everything in it (Harvey writes one when it makes agents/).
func ignoresItself(ws *Workspace) bool {
	data, err := ws.OSRoot().ReadFile(AgentsDir + "/.gitignore")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == "*" {
			return true
		}
	}
	return false
}

func (tm *Terminal) warnAgentsNotIgnored(ws *Workspace) {
	if _, err := ws.OSRoot().Lstat(".git"); err != nil {
		return
	}
	// Ignored the way git decides it: .gitignore and .git/info/exclude,
	// with git's own pattern rules (wspath.IgnoreSet).
	var ign wspath.IgnoreSet
	for _, f := range []string{".gitignore", ".git/info/exclude"} {
		if data, err := ws.OSRoot().ReadFile(f); err == nil {
			ign.Add(".", data)
		}
	}
	if ign.Ignored(AgentsDir, true) || ignoresItself(ws) {
		return
	}
	// Once per workspace, not at every start: the mark is kept in your
	// data directory (never in the workspace).
	mark := ""
	if data := datadir.Path(); data != "" {
		mark = filepath.Join(data, "notices", "agents-not-ignored-"+datadir.Key(ws.Root))
		if _, err := os.Stat(mark); err == nil {
			return
		}
	}
	tm.logf("%s", tm.colorize("33", "warning: agents/ (Harvey's config, history and sessions) is not in .gitignore; add a line \"agents/\" so it is never committed (said once for this workspace)"))
	if mark != "" && os.MkdirAll(filepath.Dir(mark), 0o700) == nil {
		os.WriteFile(mark, nil, 0o600)
	}
}
