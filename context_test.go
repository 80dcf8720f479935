package harvey

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/ollama"
)

// Inside a turn, old tool results are elided before a request would
// overflow num_ctx; the newest results stay whole.
func TestContextWindowElidesOldResults(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	setNumCtx(env, 4096) // a Raspberry Pi setting: results capped at 4 KB
	for _, n := range []string{"a", "b", "c"} {
		e2e.WriteFile(t, env.dir, n+".txt", strings.Repeat(n+" line of text\n", 500)) // 7 KB each
	}
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r1", Name: "read_file", Args: map[string]any{"path": "a.txt"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r2", Name: "read_file", Args: map[string]any{"path": "b.txt"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r3", Name: "read_file", Args: map[string]any{"path": "c.txt"}}),
		fakeollama.TextReply("llama3.2", "Three files read."),
	)
	if err := env.a.RunPrompt(t.Context(), "read a, b and c"); err != nil {
		t.Fatal(err)
	}
	reqs := f.ChatRequests()
	limit := env.a.mainTurn(&env.a.toolSet).contextLimit()
	for i, req := range reqs {
		var msgs []llm.Message
		for _, m := range fakeollama.MessagesOf(req) {
			msgs = append(msgs, llm.Message{Role: llm.Role(fmt.Sprint(m["role"])), Content: fmt.Sprint(m["content"])})
		}
		if used := llm.EstimateTokens(msgs) + env.a.schemaTokens(&env.a.toolSet, ModeSchema); used > limit {
			t.Fatalf("request %d is ~%d tokens, past the limit %d", i, used, limit)
		}
	}
	last := fakeollama.MessagesOf(reqs[3])
	var sawElided, sawC bool
	for _, m := range last {
		c := fmt.Sprint(m["content"])
		sawElided = sawElided || strings.HasPrefix(c, elidedMarker)
		sawC = sawC || strings.Contains(c, "c line of text")
	}
	if !sawElided || !sawC {
		t.Fatalf("last request: elided %v, newest result whole %v", sawElided, sawC)
	}
	if !strings.Contains(env.errOut.String(), "old tool results elided to fit the context") {
		t.Fatalf("stderr = %q", env.errOut.String())
	}
}

// A turn that leaves the conversation near the size where the next turn
// must elide and summarise says so; one well inside the window does not.
func TestContextWarningBeforeSummary(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	setNumCtx(env, 4096)
	f.Script(fakeollama.TextReply("llama3.2", "hi"))
	if err := env.a.RunPrompt(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(env.errOut.String(), "nearly full") || !strings.Contains(env.errOut.String(), "· ctx ~") {
		t.Fatalf("warned on a small conversation: %q", env.errOut.String())
	}
	for _, n := range []string{"a", "b"} {
		e2e.WriteFile(t, env.dir, n+".txt", strings.Repeat(n+" line of text\n", 500))
	}
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r1", Name: "read_file", Args: map[string]any{"path": "a.txt"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r2", Name: "read_file", Args: map[string]any{"path": "b.txt"}}),
		fakeollama.TextReply("llama3.2", "Two files read."),
	)
	if err := env.a.RunPrompt(t.Context(), "read a and b"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(env.errOut.String(), "elided") || !strings.Contains(env.errOut.String(), "the context is nearly full") {
		t.Fatalf("no warning before the summary: %q", env.errOut.String())
	}
}

// Between turns, a conversation that no longer fits is summarised: asked
// first in the REPL, automatically headless — never cut silently by Ollama.
func TestContextWindowSummarizeWhenFull(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	f.AutoSummary = "We talked about a long file."
	env := newTestEnv(t, f, "llama3.2")
	setNumCtx(env, 2048)
	fill := func() {
		for i := 0; i < 6; i++ {
			env.a.AddMessage("user", strings.Repeat("words ", 300))
			env.a.AddMessage("assistant", "ok")
		}
	}
	// Interactive, declined: a warning, and the turn goes on unsummarised.
	fill()
	env.a.Interactive = true
	env.a.In = newLineReader(strings.NewReader("n\n"))
	f.Script(fakeollama.TextReply("llama3.2", "answer one"))
	if err := env.a.RunPrompt(t.Context(), "next"); err != nil {
		t.Fatal(err)
	}
	if f.Summaries != 0 || !strings.Contains(env.errOut.String(), "not summarised; /summarize or /clear") {
		t.Fatalf("declined: %d summaries, stderr %q", f.Summaries, env.errOut.String())
	}
	// Declined once: the next turn does not ask again.
	env.a.In = newLineReader(strings.NewReader("\n"))
	f.Script(fakeollama.TextReply("llama3.2", "answer again"))
	if err := env.a.RunPrompt(t.Context(), "next"); err != nil || f.Summaries != 0 {
		t.Fatalf("asked again after a no: %v, %d summaries", err, f.Summaries)
	}
	// Once it fits again (here after /clear), a full window asks again: yes.
	dispatch(t, env.a, "/clear")
	f.Script(fakeollama.TextReply("llama3.2", "fits"))
	env.a.RunPrompt(t.Context(), "short")
	fill()
	f.Script(fakeollama.TextReply("llama3.2", "answer two"))
	if err := env.a.RunPrompt(t.Context(), "next"); err != nil {
		t.Fatal(err)
	}
	if f.Summaries != 1 || !strings.Contains(env.a.History[1].Content, "We talked about a long file.") {
		t.Fatalf("accepted: %d summaries, history %+v", f.Summaries, env.a.History[:2])
	}
	// Headless: summarised automatically, with a warning.
	env.a.Interactive = false
	fill()
	f.Script(fakeollama.TextReply("llama3.2", "answer three"))
	if err := env.a.RunPrompt(t.Context(), "next"); err != nil {
		t.Fatal(err)
	}
	if f.Summaries != 2 || !strings.Contains(env.errOut.String(), "summarizing it first") {
		t.Fatalf("headless: %d summaries, stderr %q", f.Summaries, env.errOut.String())
	}
	reqs := f.ChatRequests()
	final := fakeollama.MessagesOf(reqs[len(reqs)-1])
	if len(final) != 3 || final[2]["content"] != "next" {
		t.Fatalf("request after the summary = %s", mustJSON(final))
	}
}

// childPIDs lists this process's live children (Linux).
func childPIDs(t *testing.T) []string {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []string
	for _, p := range tasks {
		b, _ := os.ReadFile(p)
		for _, pid := range strings.Fields(string(b)) {
			if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
				out = append(out, pid)
			}
		}
	}
	return out
}

// A long session: 500 tool rounds (50 turns of 10) through the real loop
// and Ollama client, each tool producing 136 KB, alternating read_file and
// run_command. Old results are elided and the history summarised as it
// fills num_ctx, so memory stays bounded; no goroutine or child process is
// left behind.
func TestLongSession(t *testing.T) {
	if testing.Short() {
		t.Skip("long session")
	}
	f := fakeollama.New(t, "llama3.2:latest")
	f.AutoSummary = "Summary: the model read big.txt many times."
	f.KeepLast = true
	env := newTestEnv(t, f, "llama3.2")
	setNumCtx(env, 16384)                                                            // results over 64 KB, capped at a quarter of the window (16 KB)
	e2e.WriteFile(t, env.dir, "big.txt", strings.Repeat("0123456789abcdef\n", 8192)) // 136 KB

	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	goroutines := settleGoroutines()
	children := -1
	var heapAt10 uint64
	rounds := 0
	const turns = 30 // 300 rounds
	for turn := 0; turn < turns; turn++ {
		for r := 0; r < 10; r++ {
			call := fakeollama.Call{ID: fmt.Sprintf("t%dr%d", turn, r), Name: "read_file", Args: map[string]any{"path": "big.txt"}}
			if r%2 == 1 {
				call = fakeollama.Call{ID: call.ID, Name: "run_command", Args: map[string]any{"command": "cat big.txt"}}
			}
			f.Script(fakeollama.ToolReply("llama3.2", call))
		}
		f.Script(fakeollama.TextReply("llama3.2", fmt.Sprintf("turn %d done", turn)))
		if err := env.a.RunPrompt(t.Context(), fmt.Sprintf("read big.txt ten times (turn %d)", turn)); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		rounds += 10
		if turn == 0 {
			// The session's network holder is the process's (it ends with
			// Harvey, not with an Agent), started by the first command if an
			// earlier test has not: count children from here.
			children = len(childPIDs(t))
		}
		last := fakeollama.MessagesOf(f.ChatRequests()[0])
		var msgs []llm.Message
		for _, m := range last {
			msgs = append(msgs, llm.Message{Role: llm.Role(fmt.Sprint(m["role"])), Content: fmt.Sprint(m["content"])})
		}
		if used := llm.EstimateTokens(msgs) + env.a.schemaTokens(&env.a.toolSet, ModeSchema); used > env.a.mainTurn(&env.a.toolSet).contextLimit() {
			t.Fatalf("turn %d: last request ~%d tokens, past %d", turn, used, env.a.mainTurn(&env.a.toolSet).contextLimit())
		}
		if turn == 9 {
			heapAt10 = heap()
		}
	}
	heapAtEnd := heap()
	t.Logf("%d rounds; heap %d KB after 10 turns, %d KB at the end; %d summaries; history %d messages (~%d tokens)",
		rounds, heapAt10>>10, heapAtEnd>>10, f.Summaries, len(env.a.History), llm.EstimateTokens(env.a.History))
	if heapAtEnd > heapAt10+4<<20 {
		t.Fatalf("memory grew from %d KB to %d KB over %d turns", heapAt10>>10, heapAtEnd>>10, turns-10)
	}
	if f.Summaries == 0 {
		t.Fatal("the history was never summarised")
	}
	env.a.Close()
	f.Srv.CloseClientConnections()
	if g := settleGoroutines(); g > goroutines+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after\n%s", goroutines, g, buf[:runtime.Stack(buf, true)])
	}
	if c := childPIDs(t); len(c) > children {
		t.Fatalf("child processes left: %v", c)
	}
}

func TestFitForSummary(t *testing.T) {
	msgs := []llm.Message{{Role: "system", Content: "sys"}}
	for i := 0; i < 50; i++ {
		msgs = append(msgs, llm.Message{Role: "user", Content: strings.Repeat("w", 400)})
	}
	msgs = append(msgs, llm.Message{Role: "user", Content: summarizePrompt})
	got := fitForSummary(append([]llm.Message(nil), msgs...), 1000)
	if got[0].Content != "sys" || got[len(got)-1].Content != summarizePrompt || llm.EstimateTokens(got) > 1000 || len(got) < 3 {
		t.Fatalf("%d messages, ~%d tokens", len(got), llm.EstimateTokens(got))
	}
}

// setNumCtx sets num_ctx as a config change followed by a reconnect would:
// in the config and in the client that sends it.
func setNumCtx(env *testEnv, n int) {
	env.a.Config.NumCtx = n
	if oc, ok := env.a.Client.(*ollama.Client); ok {
		oc.NumCtx = n
	}
}
