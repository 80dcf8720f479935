package harvey

// Model switching: /model, /ollama, and attaching an Ollama model.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/ollama"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

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
			capab = llm.CapUnknown
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
	if r, failed := modelcheck.Failed(args[0]); failed {
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
		if config.SameModel(m, current) {
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
		ModelInfos(context.Context) ([]ollama.ModelInfo, error)
	})
	if !ok {
		return d
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	infos, _ := mi.ModelInfos(ctx)
	for _, m := range infos {
		d[m.Name] = m.Describe()
		if r, ok := modelcheck.Last(m.Name); ok {
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

// ollamaStillRunning says, as the session ends, that the Ollama it started
// goes on (models stay loaded for the next start) and how to stop it.
func (be *backend) ollamaStillRunning(tm *Terminal) {
	if st := be.ollama; st.running() {
		tm.logf("%s", tm.dim(fmt.Sprintf("· Ollama (pid %d), which Harvey started, keeps running so models stay loaded; stop it with: kill %d", st.cmd.Process.Pid, st.cmd.Process.Pid)))
	}
}

// warmStart sends the head of the next request to Ollama in the background
// (see above). A warm request still running for another model is stopped.
// None while servers still start: a head without their tools is not the
// first request's.
func (a *Agent) warmStart() {
	oc, ok := a.Client.(*ollama.Client)
	if !ok || !a.Interactive || a.ModelName == "" || a.mcp.Pending() {
		return
	}
	t := a.mainTurn(&a.toolSet)
	var tools []anyllm.Tool
	if t.mode == ModeSchema {
		tools = t.tools
	}
	msgs, tools := t.prepare(append([]llm.Message(nil), a.History...), tools)
	send := oc.Warmer(msgs, tools)
	a.stopWarm()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.warm = &warming{cancel: cancel, done: done}
	go func() {
		defer close(done)
		defer cancel()
		send(ctx)
	}()
}

func cmdRoute(_ context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		args = []string{"list"}
	}
	rr := a.Routes
	changed := false
	switch args[0] {
	case "list":
		if len(rr.cf.Routes) == 0 {
			fmt.Fprintln(out, "no routes; add one with /route add NAME PROVIDER URL MODEL")
		}
		for _, rt := range rr.cf.Routes {
			state := "enabled"
			if !rt.Enabled {
				state = "disabled"
			}
			fmt.Fprintf(out, "@%-12s %-18s %-32s %-20s %s\n", rt.Name, rt.Provider, rt.URL, rt.Model, state)
		}
		return nil
	case "add":
		if len(args) == 4 {
			return errors.New("give a MODEL for the route: /route add NAME PROVIDER URL MODEL")
		}
		if len(args) != 5 {
			return a.commands.usageError("route")
		}
		name, provider, url := args[1], strings.ToLower(args[2]), args[3]
		if provider != "ollama" && !slices.Contains(Providers, provider) {
			return fmt.Errorf("unknown provider %q (known: ollama, %s)", provider, strings.Join(Providers, ", "))
		}
		if _, existing := rr.find(name); existing != nil {
			return fmt.Errorf("route %q exists; remove it first", name)
		}
		rt := config.Route{Name: name, Provider: provider, URL: url, Model: args[4], Enabled: true}
		rr.cf.Routes = append(rr.cf.Routes, rt)
		fmt.Fprintf(out, "route @%s added\n", name)
		changed = true
	case "remove", "rm":
		if len(args) != 2 {
			return a.commands.usageError("route")
		}
		i, rt := rr.find(args[1])
		if rt == nil {
			return fmt.Errorf("no route %q", args[1])
		}
		rr.cf.Routes = append(rr.cf.Routes[:i], rr.cf.Routes[i+1:]...)
		fmt.Fprintf(out, "route @%s removed\n", args[1])
		changed = true
	case "enable", "disable":
		if len(args) != 2 {
			return a.commands.usageError("route")
		}
		_, rt := rr.find(args[1])
		if rt == nil {
			return fmt.Errorf("no route %q", args[1])
		}
		rt.Enabled = args[0] == "enable"
		fmt.Fprintf(out, "route @%s %sd\n", rt.Name, args[0])
		changed = true
	default:
		return a.commands.usageError("route")
	}
	if changed {
		if err := rr.cf.Save(a.Workspace.Tree, "routes"); err != nil {
			return fmt.Errorf("changed for this session, but not saved: %v", err)
		}
	}
	return nil
}
