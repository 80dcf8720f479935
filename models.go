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
	"time"
)

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
			_, models, err := a.ollamaModels(ctx)
			if err != nil {
				return err
			}
			listModels(out, models, "")
			return nil
		}
		models, err := a.Client.Models(ctx)
		if err != nil {
			return err
		}
		listModels(out, models, a.ModelName)
		return nil
	}
	if err := a.UseModel(ctx, args[0]); err != nil {
		return err
	}
	fmt.Fprintf(out, "using %s (tool mode: %s)\n", a.ModelName, a.toolMode())
	return nil
}

func listModels(out io.Writer, models []string, current string) {
	if len(models) == 0 {
		fmt.Fprintln(out, "no models installed; try: ollama pull llama3.2")
		return
	}
	for _, m := range models {
		mark := " "
		if sameModel(m, current) {
			mark = "*"
		}
		fmt.Fprintf(out, "%s %s\n", mark, m)
	}
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
		listModels(out, models, a.ModelName)
	case "use":
		if len(args) != 2 {
			return a.usageError("ollama")
		}
		return cmdModel(ctx, a, args[1:], out)
	case "start":
		return startOllama(ctx, oc, out)
	case "stop":
		return errors.New("Harvey does not stop an Ollama it did not start; stop it with your service manager (e.g. systemctl stop ollama) or Ctrl-C in its terminal")
	default:
		return a.usageError("ollama")
	}
	return nil
}

// startOllama runs `ollama serve` detached and waits up to 5 s for it.
func startOllama(ctx context.Context, oc *OllamaClient, out io.Writer) error {
	if _, err := oc.Reachable(ctx); err == nil {
		fmt.Fprintln(out, "Ollama is already running")
		return nil
	}
	bin, err := exec.LookPath("ollama")
	if err != nil {
		return errors.New("the ollama binary is not on PATH; install Ollama first")
	}
	cmd := exec.Command(bin, "serve")
	// Serve where Harvey will look (ollama reads its address from OLLAMA_HOST).
	cmd.Env = filterCommandEnvironment(os.Environ())
	if u, err := url.Parse(oc.BaseURL); err == nil && u.Host != "" {
		cmd.Env = append(cmd.Env, "OLLAMA_HOST="+u.Host)
	}
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("ollama serve: %v", err)
	}
	go cmd.Wait()
	for i := 0; i < 10; i++ {
		time.Sleep(500 * time.Millisecond)
		if _, err := oc.Reachable(ctx); err == nil {
			fmt.Fprintln(out, "Ollama started")
			return nil
		}
	}
	return errors.New("started `ollama serve`, but it did not answer within 5 s")
}

// ollamaModels is the Ollama client and the models it has installed.
func (a *Agent) ollamaModels(ctx context.Context) (*OllamaClient, []string, error) {
	oc, err := a.ollamaClient()
	if err != nil {
		return nil, nil, err
	}
	models, err := oc.Models(ctx)
	return oc, models, err
}
