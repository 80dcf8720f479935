package harvey

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/fakeopenai"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/ollama"
	"github.com/ollama/ollama/template"
)

// render is what Ollama renders for a recorded request with a template.
func render(t *testing.T, tmplFile string, req map[string]any) string {
	t.Helper()
	tmpl := loadTemplate(t, tmplFile)
	var msgs []llm.Message
	for _, m := range fakeollama.MessagesOf(req) {
		msgs = append(msgs, llm.Message{Role: llm.Role(fmt.Sprint(m["role"])), Content: fmt.Sprint(m["content"])})
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, template.Values{Messages: ollama.ToMessages(msgs)}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Warm start (issue 31): in the REPL, Harvey sends Ollama the head of the
// first request at once (one token, discarded, keep_alive sent); turn 1
// then evaluates only the user's message and the template's framing, for
// llama3.2's and mistral's templates.
func TestWarmStartEvaluatesTheHeadBeforeEnter(t *testing.T) {
	for _, c := range []struct{ model, tmpl string }{{"llama3.2", "llama3.2.gotmpl"}, {"mistral", "mistral.gotmpl"}} {
		t.Run(c.model, func(t *testing.T) {
			f := fakeollama.New(t, c.model+":latest")
			raw, _ := os.ReadFile(filepath.Join("testdata", "templates", c.tmpl))
			f.Template[c.model+":latest"] = string(raw)
			env := newTestEnv(t, f, c.model)
			env.a.Interactive = true
			env.a.warmStart()
			e2e.WaitFor(t, "the warm request", func() bool { return f.WarmCount() == 1 })
			f.Mu.Lock()
			warm := f.Warms[0]
			f.Mu.Unlock()
			if opts := warm["options"].(map[string]any); opts["num_predict"] != float64(1) || warm["keep_alive"] == nil {
				t.Fatalf("warm request options %v keep_alive %v", opts, warm["keep_alive"])
			}
			user := "What does main.go do?"
			f.Script(fakeollama.TextReply(c.model, "It prints."))
			if err := env.a.RunPrompt(t.Context(), user); err != nil {
				t.Fatal(err)
			}
			head, first := render(t, c.tmpl, warm), render(t, c.tmpl, f.ChatRequests()[0])
			common := 0
			for common < len(head) && common < len(first) && head[common] == first[common] {
				common++
			}
			after := len(first) - common
			t.Logf("%s: head %d bytes evaluated before Enter; turn 1 evaluates %d bytes after Enter (the message is %d; %d without warm start, %.0f× more)",
				c.model, common, after, len(user), len(first), float64(len(first))/float64(after))
			if len(first) < 10*after {
				t.Fatalf("warm start saves less than 10× of what turn 1 evaluates after Enter (%d vs %d)", after, len(first))
			}
			// The framing: llama3.2's user and assistant headers are ~100 bytes (~12 tokens).
			if after > len(user)+128 || common < len(head)-80 {
				t.Fatalf("turn 1 evaluates %d bytes after the warm head (%d of %d shared)", after, common, len(head))
			}
		})
	}
}

// A prompt typed while the warm request still runs is not held back; /model
// warms the new model; headless and cloud clients never warm; /status says
// whether the model is loaded.
func TestWarmStartNeverInTheWay(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest")
	f.WarmDelay = time.Minute // a Pi evaluating the head
	env := newTestEnv(t, f, "llama3.2")
	env.a.Interactive = true
	env.a.warmStart()
	e2e.WaitFor(t, "the warm request", func() bool { return f.WarmCount() == 1 })
	f.Script(fakeollama.TextReply("llama3.2", "Right away."))
	if err := env.a.RunPrompt(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-env.a.warm.done:
		t.Fatal("the prompt waited for the warm request")
	default:
	}
	if !strings.Contains(env.out.String(), "Right away.") {
		t.Fatalf("out = %q", env.out.String())
	}
	f.WarmDelay = 0
	var out strings.Builder
	if err := env.a.Dispatch(t.Context(), "/model mistral", &out); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "the new model's warm request", func() bool {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		return len(f.Warms) == 2 && f.Warms[1]["model"] == "mistral:latest"
	})
	out.Reset()
	env.a.Dispatch(t.Context(), "/status", &out)
	if !strings.Contains(out.String(), "model:       loaded (until") {
		t.Fatalf("/status = %s", out.String())
	}
	env.a.Close()

	// Headless: no warm request.
	h := newTestEnv(t, f, "llama3.2")
	h.a.warmStart()
	// A cloud provider (an OpenAI-compatible route client): never.
	fo := fakeopenai.New(t)
	c, err := newAnyLLMClient("openai-compatible", fo.URL(), "m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.a.warm != nil {
		t.Fatal("headless: a warm request was started")
	}
	h.a.Client, h.a.Interactive = c, true
	h.a.warmStart()
	if h.a.warm != nil || f.WarmCount() != 2 || len(fo.Requests) != 0 {
		t.Fatalf("cloud warmed: %d warm requests, %d to the cloud", f.WarmCount(), len(fo.Requests))
	}
}
