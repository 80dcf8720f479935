package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/ollama"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// The backend: the current model's client and what the session learnt
// of each model, the context window and the result cap that follow from
// it, and an ollama serve Harvey started.

// backend is the model side of the session: the client of the current
// model and what the session learnt about each model it used. Client is
// nil until a backend is connected (connectErr says why not). The maps
// are made in newAgent; they are written by the REPL's goroutine only.
type backend struct {
	Client     llm.LLMClient
	ModelName  string
	OllamaURL  string
	Routes     *RouteRegistry   // @route prompts (config.go)
	cfg        *configfile.File // the session's config (the same as Agent.Config)
	connectErr error            // why no backend is attached
	// reconnect, when set, connects again waiting for a server that
	// refused at start (headless: the first prompt that needs the model
	// waits for it; slash commands never do).
	reconnect func(context.Context)
	ollama    *startedOllama // an ollama serve this session started; nil otherwise
	caps      map[string]llm.Capability
	layouts   map[string]promptLayout // per model: where its tools go in the prompt
	modelCtx  map[string]int          // each model's trained context length (/api/show)
	// toolBlocks is, per model, the tools written into the fixed part of
	// the prompt at the session's first request with a llama3 or mistral
	// layout; tools that arrive later (a lazy server, list_changed) are
	// announced in the prompt of the turn they arrive in, so the rendered
	// prefix only grows (layout.go: pinToolBlock).
	toolBlocks  map[string]*pinnedTools
	warm        *warming // the warm request in flight (warm.go), nil when none
	statHistory []llm.ChatStats
	warnedCtx   bool // the window warning was shown
	toolsOff    bool // /tools off
}

// errNoBackend says how to get a model.
func (be *backend) errNoBackend() error {
	url := be.OllamaURL
	if url == "" {
		url = config.DefaultOllamaURL
	}
	return fmt.Errorf("no model is reachable (Ollama at %s): start Ollama with `ollama serve` and `ollama pull llama3.2`, or use --ollama URL / --model NAME", url)
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
func startOllama(ctx context.Context, oc *ollama.Client, out io.Writer) (*startedOllama, error) {
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
	cmd.Env = secrets.Environ(os.Environ())
	if u, err := url.Parse(oc.BaseURL); err == nil && u.Host != "" {
		cmd.Env = append(cmd.Env, "OLLAMA_HOST="+u.Host)
	}
	if err := runner.StartKept(cmd); err != nil {
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
	_ = runner.KillProcessGroupSignal(st.cmd, syscall.SIGTERM)
	select {
	case <-st.done:
	case <-time.After(5 * time.Second):
		_ = runner.KillProcessGroup(st.cmd)
		<-st.done
	}
	fmt.Fprintf(out, "stopped the Ollama Harvey started (pid %d)\n", st.cmd.Process.Pid)
	be.ollama = nil
	return nil
}

// ollamaModels is the Ollama client and the models it has installed.
func (be *backend) ollamaModels(ctx context.Context) (*ollama.Client, []string, error) {
	oc, err := be.ollamaClient()
	if err != nil {
		return nil, nil, err
	}
	models, err := oc.Models(ctx)
	return oc, models, err
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
func (be *backend) window(c llm.LLMClient) int {
	if w, ok := c.(llm.WindowedClient); ok {
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

// contextFill shows used tokens (the conversation and what the tools add
// to a request) against the window, e.g. "~3.1k of 8k tokens (38%)".
func (be *backend) contextFill(used, window int) string {
	n := window
	if n == 0 {
		n = be.numCtx()
	}
	if n <= 0 {
		return fmt.Sprintf("~%s tokens", termtext.Kilo(used))
	}
	return fmt.Sprintf("~%s of %s tokens (%d%%)", termtext.Kilo(used), termtext.Kilo(n), used*100/n)
}

// recordStats keeps a rolling window of the last 5 turns.
func (be *backend) recordStats(s llm.ChatStats) {
	be.statHistory = append(be.statHistory, s)
	if len(be.statHistory) > 5 {
		be.statHistory = be.statHistory[len(be.statHistory)-5:]
	}
}

// estimateDuration averages reply time over the window (0 = no estimate).
func (be *backend) estimateDuration() time.Duration {
	var total time.Duration
	n := 0
	for _, s := range be.statHistory {
		if s.ReplyTokens > 0 && s.TokensPerSec > 0 {
			total += time.Duration(float64(s.ReplyTokens) / s.TokensPerSec * float64(time.Second))
			n++
		} else if s.Elapsed > 0 {
			total += s.Elapsed
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return total / time.Duration(n)
}

// contextResultCap is the largest tool result for a window of numCtx
// tokens: a quarter of it, at about four bytes per token (8 KB for the
// default 8192, 4 KB for a Pi's 4096; read_file pages past it).
func contextResultCap(numCtx int) int { return max(2048, numCtx) }

// turnHeadroom is what a turn must find free: one full tool result.
func turnHeadroom(numCtx int) int { return contextResultCap(numCtx) / 4 }
