package harvey

// Model switching: /model, /ollama, and attaching an Ollama model.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// backend is the model side of the session: the client of the current
// model and what the session learnt about each model it used. Client is
// nil until a backend is connected (connectErr says why not). The maps
// are made in newAgent; they are written by the REPL's goroutine only.
type backend struct {
	Client     LLMClient
	ModelName  string
	OllamaURL  string
	Routes     *RouteRegistry // @route prompts (routing.go)
	cfg        *ConfigFile    // the session's config (the same as Agent.Config)
	connectErr error          // why no backend is attached
	ollama     *startedOllama // an ollama serve this session started; nil otherwise
	caps       map[string]Capability
	layouts    map[string]promptLayout // per model: where its tools go in the prompt
	modelCtx   map[string]int          // each model's trained context length (/api/show)
	// toolBlocks is, per model, the tools written into the fixed part of
	// the prompt at the session's first request with a llama3 or mistral
	// layout; tools that arrive later (a lazy server, list_changed) are
	// announced in the prompt of the turn they arrive in, so the rendered
	// prefix only grows (layout.go: pinToolBlock).
	toolBlocks  map[string]*pinnedTools
	warm        *warming // the warm request in flight (warm.go), nil when none
	statHistory []ChatStats
	warnedCtx   bool // the window warning was shown
	toolsOff    bool // /tools off
}

// errNoBackend says how to get a model.
func errNoBackend(a *Agent) error {
	url := a.OllamaURL
	if url == "" {
		url = DefaultOllamaURL
	}
	return fmt.Errorf("no model is reachable (Ollama at %s): start Ollama with `ollama serve` and `ollama pull llama3.2`, or use --ollama URL / --model NAME", url)
}

// UseModel switches to an Ollama model, probing its tool support.
func (a *Agent) UseModel(ctx context.Context, name string) error {
	oc, models, err := a.ollamaModels(ctx)
	if err != nil {
		return err
	}
	m, ok := matchModel(name, models)
	if !ok {
		if len(models) == 0 {
			return fmt.Errorf("model %q is not installed (no models installed); pull it with: ollama pull %s", name, name)
		}
		return fmt.Errorf("model %q is not installed (installed: %s); pull it with: ollama pull %s", name, strings.Join(models, ", "), name)
	}
	c, err := newOllamaClient(oc.BaseURL, m, a.Config.EffectiveNumCtx(m), a.Config.KeepAlive, time.Duration(a.Config.OllamaTimeout))
	if err != nil {
		return err
	}
	a.Client = c
	a.ModelName = m
	if _, known := a.caps[m]; !known {
		capab, ctxLen, err := c.Capability(ctx, m)
		if err != nil {
			capab = CapUnknown
		}
		a.caps[m] = capab
		a.modelCtx[m] = ctxLen
		a.layouts[m] = layoutForTemplate(c.PromptTemplate(m))
	}
	if n := a.modelCtx[m]; n > 0 && n < c.NumCtx {
		// Asking for more than the model was trained on buys nothing.
		a.logf("%s", a.dim(fmt.Sprintf("· num_ctx %d is more than %s's %d-token context; using %d", c.NumCtx, m, n, n)))
		c.NumCtx = n
	}
	a.refreshSystemPrompt()
	return nil
}

func cmdModel(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		if a.Client == nil {
			oc, models, err := a.ollamaModels(ctx)
			if err != nil {
				return err
			}
			listModels(out, models, "", modelDetails(ctx, oc))
			return nil
		}
		models, err := a.Client.Models(ctx)
		if err != nil {
			return err
		}
		listModels(out, models, a.ModelName, modelDetails(ctx, a.Client))
		return nil
	}
	if args[0] == "check" {
		return cmdModelCheck(ctx, a, args[1:], out)
	}
	if r, failed := failedCheck(args[0]); failed {
		fmt.Fprintf(out, "note: %s's last check (%s): %s\n", args[0], r.CheckedAt.Format("2006-01-02"), r.Verdict)
	}
	if err := a.UseModel(ctx, args[0]); err != nil {
		return err
	}
	fmt.Fprintf(out, "using %s (tool mode: %s)\n", a.ModelName, a.toolMode())
	a.warmStart() // load the new model and evaluate its prompt head while you type
	return nil
}

func listModels(out io.Writer, models []string, current string, details map[string]string) {
	if len(models) == 0 {
		fmt.Fprintln(out, noModelsHint)
		return
	}
	modelTable(out, models, details, func(_ int, m string) string {
		if sameModel(m, current) {
			return "* "
		}
		return "  "
	})
}

// modelTable writes one line per model: a label, the name padded to the
// longest, and its details.
func modelTable(out io.Writer, models []string, details map[string]string, label func(i int, m string) string) {
	width := 0
	for _, m := range models {
		width = max(width, len(m))
	}
	for i, m := range models {
		fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("%s%-*s  %s", label(i, m), width, m, details[m]), " "))
	}
}

// noModelsHint names the small models that call tools well here and the
// one command that gets one.
const noModelsHint = "no models installed. Small models that call tools well: llama3.2 (3B, 2.0 GB; runs on a Raspberry Pi 5) and mistral (7B, 4.1 GB). Get one with: ollama pull llama3.2"

// modelDetails describes each installed model (size, parameters, tool
// calling) when the backend can say; an empty map otherwise.
func modelDetails(ctx context.Context, c any) map[string]string {
	d := map[string]string{}
	mi, ok := c.(interface {
		ModelInfos(context.Context) ([]modelInfo, error)
	})
	if !ok {
		return d
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	infos, _ := mi.ModelInfos(ctx)
	for _, m := range infos {
		d[m.Name] = m.describe()
		if r, ok := lastCheck(m.Name); ok {
			d[m.Name] += " · checked: " + r.Verdict
		}
	}
	return d
}

func cmdOllama(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		args = []string{"status"}
	}
	oc, err := a.ollamaClient()
	if err != nil {
		return err
	}
	switch args[0] {
	case "status":
		v, err := oc.Reachable(ctx)
		if err != nil {
			fmt.Fprintf(out, "Ollama at %s: not reachable\n", oc.BaseURL)
			return err
		}
		fmt.Fprintf(out, "Ollama %s at %s\n", v, oc.BaseURL)
	case "list":
		models, err := oc.Models(ctx)
		if err != nil {
			return err
		}
		listModels(out, models, a.ModelName, modelDetails(ctx, oc))
	case "use":
		if len(args) != 2 {
			return a.commands.usageError("ollama")
		}
		return cmdModel(ctx, a, args[1:], out)
	case "start":
		st, err := startOllama(ctx, oc, out)
		if st != nil {
			a.ollama = st
		}
		return err
	case "stop":
		return a.stopOllama(out)
	default:
		return a.commands.usageError("ollama")
	}
	return nil
}

// startedOllama is an `ollama serve` this session started.
type startedOllama struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
}

func (s *startedOllama) running() bool {
	if s == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// startOllama runs `ollama serve` detached (its own session: it outlives
// Harvey unless stopped) and waits up to 5 s for it to answer.
func startOllama(ctx context.Context, oc *OllamaClient, out io.Writer) (*startedOllama, error) {
	if _, err := oc.Reachable(ctx); err == nil {
		fmt.Fprintln(out, "Ollama is already running")
		return nil, nil
	}
	bin, err := exec.LookPath("ollama")
	if err != nil {
		return nil, errors.New("the ollama binary is not on PATH; install Ollama first")
	}
	cmd := exec.Command(bin, "serve")
	// Serve where Harvey will look (ollama reads its address from OLLAMA_HOST).
	cmd.Env = filterCommandEnvironment(os.Environ())
	if u, err := url.Parse(oc.BaseURL); err == nil && u.Host != "" {
		cmd.Env = append(cmd.Env, "OLLAMA_HOST="+u.Host)
	}
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("ollama serve: %v", err)
	}
	st := &startedOllama{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(st.done) }()
	for i := 0; i < 10; i++ {
		time.Sleep(500 * time.Millisecond)
		if _, err := oc.Reachable(ctx); err == nil {
			fmt.Fprintf(out, "Ollama started (pid %d)\n", cmd.Process.Pid)
			return st, nil
		}
	}
	return st, errors.New("started `ollama serve`, but it did not answer within 5 s")
}

// stopOllama stops the Ollama this session started.
func (be *backend) stopOllama(out io.Writer) error {
	st := be.ollama
	if !st.running() {
		return errors.New("Harvey does not stop an Ollama it did not start; stop it with your service manager (e.g. systemctl stop ollama) or Ctrl-C in its terminal")
	}
	_ = killProcessGroupSignal(st.cmd, syscall.SIGTERM)
	select {
	case <-st.done:
	case <-time.After(5 * time.Second):
		_ = killProcessGroup(st.cmd)
		<-st.done
	}
	fmt.Fprintf(out, "stopped the Ollama Harvey started (pid %d)\n", st.cmd.Process.Pid)
	be.ollama = nil
	return nil
}

// ollamaStillRunning says, as the session ends, that the Ollama it started
// goes on (models stay loaded for the next start) and how to stop it.
func (a *Agent) ollamaStillRunning() {
	if st := a.ollama; st.running() {
		a.logf("%s", a.dim(fmt.Sprintf("· Ollama (pid %d), which Harvey started, keeps running so models stay loaded; stop it with: kill %d", st.cmd.Process.Pid, st.cmd.Process.Pid)))
	}
}

// ollamaModels is the Ollama client and the models it has installed.
func (be *backend) ollamaModels(ctx context.Context) (*OllamaClient, []string, error) {
	oc, err := be.ollamaClient()
	if err != nil {
		return nil, nil, err
	}
	models, err := oc.Models(ctx)
	return oc, models, err
}
