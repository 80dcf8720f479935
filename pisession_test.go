package harvey

// A Raspberry Pi user's session (issue 31), a feature that spans warm.go,
// layout.go and context.go: a 40-turn session in a 4,096-token window that
// overflows, rendered with llama3.2's real template, counted as Ollama's
// cache would evaluate it, and priced at Pi-like rates.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// Pi-like rates: prompt evaluation and generation of a 3B model on a CPU.
const (
	piPromptToken = 90 * time.Millisecond
	piGenToken    = 200 * time.Millisecond
)

// piTokens estimates tokens from rendered bytes (the project's estimate).
func piTokens(bytes int) int { return (bytes + 3) / 4 }

// shared is the length of the common prefix of a and b.
func shared(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestPiSessionEvaluatesLittleAfterEnter(t *testing.T) {
	raw, _ := os.ReadFile(filepath.Join("testdata", "templates", "llama3.2.gotmpl"))
	f := fakeollama.New(t, "llama3.2:latest")
	f.Template["llama3.2:latest"] = string(raw)
	f.AutoSummary = "We read big.go turn after turn; each function returns its number. Nothing is left to do."
	env := newTestEnv(t, nil, "")
	env.a.Config.NumCtx = 4096
	env.a.OllamaURL = f.URL()
	if err := env.a.UseModel(t.Context(), "llama3.2"); err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	for i := 0; i < 45; i++ {
		fmt.Fprintf(&body, "func f%02d() int { return %d } // function number %d of big.go\n", i, i, i)
	}
	e2e.WriteFile(t, env.dir, "big.go", "package big\n\n"+body.String())
	env.a.Interactive = true
	env.a.warmStart()
	e2e.WaitFor(t, "the warm request", func() bool { return f.WarmCount() == 1 })
	env.a.Interactive = false // headless from here: a full window is summarised without asking
	for turn := 1; turn <= 40; turn++ {
		f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: fmt.Sprintf("c%d", turn), Name: "read_file", Args: map[string]any{"path": "big.go"}}),
			fakeollama.TextReply("llama3.2", fmt.Sprintf("In turn %d: f%02d returns %d.", turn, turn, turn)))
		if err := env.a.RunPrompt(t.Context(), fmt.Sprintf("Turn %d: what does f%02d in big.go return?", turn, turn)); err != nil {
			t.Fatal(err)
		}
	}
	f.Mu.Lock()
	reqs := append([]map[string]any{f.Warms[0]}, f.Requests...)
	summaries := f.Summaries
	f.Mu.Unlock()
	prompts := make([]string, len(reqs))
	for i, r := range reqs {
		prompts[i] = render(t, "llama3.2.gotmpl", r)
	}
	head := shared(prompts[0], prompts[1]) // what the warm request and turn 1 share
	evaluated, ideal, headAgain, overflows := 0, len(prompts[0]), 0, 0
	for i := 1; i < len(prompts); i++ {
		common := shared(prompts[i-1], prompts[i])
		evaluated += len(prompts[i]) - common
		ideal += max(0, len(prompts[i])-len(prompts[i-1]))
		if common < head {
			headAgain++
		}
		if len(prompts[i]) < len(prompts[i-1]) {
			overflows++ // old results elided, or the conversation summarised
		}
	}
	ratio := float64(evaluated+len(prompts[0])) / float64(ideal)
	t.Logf("40 turns in a 4,096-token window: it overflowed %d times (%d summaries); evaluated %d tokens against an append-only ideal of %d (%.2f×); the head (%d tokens) evaluated again %d times after the warm start",
		overflows, summaries, piTokens(evaluated+len(prompts[0])), piTokens(ideal), ratio, piTokens(head), headAgain)
	// Time to the first token after Enter, at Pi rates: the tokens a turn's
	// first request evaluates (and, after a summary, the summary request's
	// evaluation and generation before it).
	lastUser := func(r map[string]any) string {
		m := fakeollama.MessagesOf(r)
		return fmt.Sprint(m[len(m)-1]["content"])
	}
	ttft := map[string]time.Duration{}
	for i := 1; i < len(prompts); i++ {
		if !strings.HasPrefix(lastUser(reqs[i]), "Turn ") {
			continue
		}
		d := time.Duration(piTokens(len(prompts[i])-shared(prompts[i-1], prompts[i]))) * piPromptToken
		label := ""
		switch {
		case strings.HasPrefix(lastUser(reqs[i]), "Turn 1:"):
			label = "turn 1"
		case strings.HasPrefix(lastUser(reqs[i]), "Turn 5:"):
			label = "turn 5"
		case strings.HasPrefix(lastUser(reqs[i-1]), "Summarize this conversation") && ttft["the first turn after a summary"] == 0:
			label = "the first turn after a summary"
			d += time.Duration(piTokens(len(prompts[i-1])-shared(prompts[i-2], prompts[i-1])))*piPromptToken + time.Duration(piTokens(len(f.AutoSummary)))*piGenToken
		}
		if label != "" {
			ttft[label] = d
		}
	}
	cold := time.Duration(piTokens(len(prompts[1]))) * piPromptToken
	t.Logf("time to the first token after Enter at Pi rates (90 ms a prompt token, 200 ms a generated one): turn 1 %.1f s with warm start (%.1f s without: %.0f× sooner), turn 5 %.1f s, the first turn after a summary %.1f s (the summary written first)",
		ttft["turn 1"].Seconds(), cold.Seconds(), cold.Seconds()/ttft["turn 1"].Seconds(), ttft["turn 5"].Seconds(), ttft["the first turn after a summary"].Seconds())
	if cold < 10*ttft["turn 1"] {
		t.Errorf("turn 1's first token comes only %.1f× sooner with warm start (goal: 10×)", cold.Seconds()/ttft["turn 1"].Seconds())
	}
	if overflows < 2 || summaries < 1 {
		t.Fatalf("the window overflowed %d times (%d summaries); the session must overflow at least twice and be summarised", overflows, summaries)
	}
	if headAgain > 0 {
		t.Errorf("the system prompt and tool block were evaluated again %d times after the warm start", headAgain)
	}
	if ratio > 1.5 {
		t.Errorf("evaluated %.2f× the append-only ideal (goal: within 1.5×)", ratio)
	}
}
