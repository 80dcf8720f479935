// Feature: the speed benchmarks bench/run.sh reports (a tool round, search,
// listing, a large edit), each beside a peer measured in the same run; spans
// tool_executor.go, gate.go, search.go, internal/wsfile and internal/editmatch.
package harvey

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/wsfile"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// Benchmarks (bench/run.sh runs them and prints the table in BENCHMARKS.md).
// Each is paired with a peer measured in the same run, so the numbers read
// as ratios on a noisy machine.

// scriptedClient is a benchmark-only LLMClient that asks for one read_file
// call and then answers, without any I/O: what is left is Harvey's own work.
type scriptedClient struct{ turn int }

func (c *scriptedClient) Name() string                             { return "bench" }
func (c *scriptedClient) Close() error                             { return nil }
func (c *scriptedClient) Models(context.Context) ([]string, error) { return nil, nil }
func (c *scriptedClient) Chat(ctx context.Context, m []llm.Message, w io.Writer) (llm.ChatStats, error) {
	return llm.ChatStats{}, nil
}
func (c *scriptedClient) ChatWithTools(_ context.Context, _ []llm.Message, _ []anyllm.Tool, w io.Writer) (llm.ChatStats, []anyllm.ToolCall, error) {
	c.turn++
	if c.turn%2 == 1 {
		return llm.ChatStats{}, []anyllm.ToolCall{{ID: "call_bench", Type: "function", Function: anyllm.FunctionCall{Name: "read_file", Arguments: `{"path": "main.go"}`}}}, nil
	}
	io.WriteString(w, "done")
	return llm.ChatStats{}, nil, nil
}

func benchAgent(b *testing.B) *Agent {
	b.Helper()
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.Repeat("package main // a small file\n", 40)), 0o644)
	ws, err := openWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	cf, _ := configfile.Load(ws.Tree)
	return newAgent(ws, cf, newLineReader(strings.NewReader("")), io.Discard, io.Discard)
}

// BenchmarkToolRound is one loop round: parse the call, check the path,
// run read_file on a 1 KB file, build the delimited result message, and
// take the model's answer.
func BenchmarkToolRound(b *testing.B) {
	a := benchAgent(b)
	a.Client = &scriptedClient{}
	ex := a.newToolExecutor(a.mainTurn(&a.toolSet))
	base := []llm.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "read main.go"}}
	b.ReportAllocs()
	for b.Loop() {
		ex.history = nil
		if _, _, err := ex.RunToolLoop(b.Context(), append([]llm.Message(nil), base...), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolRoundPeerReadFile is the floor for the same round: reading
// the file with os.ReadFile and nothing else.
func BenchmarkToolRoundPeerReadFile(b *testing.B) {
	a := benchAgent(b)
	p := filepath.Join(a.Workspace.Root, "main.go")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

// goSrc is a copy-free view of Go's source tree as a workspace: Harvey only
// reads it, but opening a workspace creates agents/, so bench/run.sh copies
// the tree and sets HARVEY_BENCH_TREE. Skipped when unset.
func goSrc(b *testing.B) *Workspace {
	dir := os.Getenv("HARVEY_BENCH_TREE")
	if dir == "" {
		b.Skip("set HARVEY_BENCH_TREE to a copy of $(go env GOROOT)/src (bench/run.sh does)")
	}
	ws, err := openWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	return ws
}

func BenchmarkSearchLiteral(b *testing.B) {
	ws := goSrc(b)
	for b.Loop() {
		searchWorkspace(context.Background(), ws, "func NewReplacer", ".", 0)
	}
}

func BenchmarkSearchRegexp(b *testing.B) {
	ws := goSrc(b)
	for b.Loop() {
		searchWorkspace(context.Background(), ws, `func \(\w+ \*Reader\) Read\w*\(`, ".", 0)
	}
}

func BenchmarkListFiles(b *testing.B) {
	ws := goSrc(b)
	var n int
	for b.Loop() {
		out, _, _ := wsfile.List(ws.Tree, "net/http", 0)
		n = len(out)
	}
	b.ReportMetric(float64(n), "bytes")
}

// TestPromptSize guards the prompt budget: the system prompt plus every
// tool schema must stay under 1,500 estimated tokens, so a Raspberry Pi's
// 4096-token context keeps room for work.
func TestPromptSize(t *testing.T) {
	env := newTestEnv(t, nil, "")
	schemas, _ := json.Marshal(env.a.Tools.GetToolSchemas())
	sys := env.a.SystemPrompt
	tokens := (len(schemas) + len(sys)) / 4
	t.Logf("system prompt %d bytes, tool schemas %d bytes, ~%d tokens", len(sys), len(schemas), tokens)
	if tokens > 1500 {
		t.Fatalf("system prompt and tools are ~%d tokens, over the 1,500 budget", tokens)
	}
}

// yesReader answers every approval with "y".
type yesReader struct{}

func (yesReader) Read(p []byte) (int, error) {
	n := 0
	for n+1 < len(p) {
		p[n], p[n+1] = 'y', '\n'
		n += 2
	}
	return n, nil
}

// BenchmarkEditLargeFile is one approved edit_file of one line in a 4 MB
// file, the diff preview shown: what it allocates should be a few times
// the file (the old and new text), not tens of times. Peer: reading the
// file once with os.ReadFile.
func BenchmarkEditLargeFile(b *testing.B) {
	a := benchAgent(b)
	a.In = newLineReader(yesReader{})
	a.Interactive = true
	var sb strings.Builder
	for i := 0; sb.Len() < wsfile.MaxEditBytes-100; i++ {
		fmt.Fprintf(&sb, "\tx%06d := compute(%d) // a line of a large generated file\n", i, i)
	}
	p := filepath.Join(a.Workspace.Root, "big.go")
	os.WriteFile(p, []byte(sb.String()), 0o644)
	ctx := b.Context()
	pairs := [2][2]string{{"x050000 := compute(50000)", "x050000 := compute(50001)"}, {"x050000 := compute(50001)", "x050000 := compute(50000)"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pr := pairs[i%2]
		i++
		if _, err := a.gate.editChecked(ctx, "edit_file", "big.go", pr[0], pr[1], false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sb.Len()), "file-bytes")
}

func BenchmarkEditLargeFilePeerReadFile(b *testing.B) {
	a := benchAgent(b)
	p := filepath.Join(a.Workspace.Root, "big.go")
	os.WriteFile(p, bytes.Repeat([]byte("\tx000000 := compute(0) // a line of a large generated file\n"), wsfile.MaxEditBytes/60), 0o644)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallelReads1 and 4 are one reply with one, and with four,
// calls to a read tool that takes 100 ms (issue 63): run ahead together,
// the four take about as long as the one (bench/run.sh prints the ratio).
func BenchmarkParallelReads1(b *testing.B) { benchParallelReads(b, 1) }
func BenchmarkParallelReads4(b *testing.B) { benchParallelReads(b, 4) }

func benchParallelReads(b *testing.B, n int) {
	a := benchAgent(b)
	a.Tools.registerFunc("slow_read", "A read that takes 100 ms.", map[string]any{"type": "object", "properties": map[string]any{}},
		func(ctx context.Context, _ callScope, _ map[string]any) (toolResult, error) {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			return toolResult{Text: "read"}, nil
		}, EffectRead, "bench")
	ex := a.newToolExecutor(a.mainTurn(&a.toolSet))
	ex.turn.tools = nil // every registered tool is offered
	var calls []anyllm.ToolCall
	for i := range n {
		calls = append(calls, anyllm.ToolCall{ID: fmt.Sprint("c", i), Type: "function", Function: anyllm.FunctionCall{Name: "slow_read", Arguments: "{}"}})
	}
	for b.Loop() {
		ex.history = nil
		if _, err := ex.ExecuteToolCalls(b.Context(), calls); err != nil {
			b.Fatal(err)
		}
	}
}
