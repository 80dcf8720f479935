package harvey

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// More than one call at a time (issue 63): a reply's four calls to a read
// tool that takes a second each run at once (each one's run overlaps
// another's), their results in call order; with tools.max_parallel 1 none
// overlaps. (How much faster it is: BenchmarkParallelReads, a same-run
// ratio in bench/run.sh.)
func TestParallelReadsKeepCallOrder(t *testing.T) {
	e2e.RequireSandbox(t)
	for _, par := range []int{0, 1} {
		f := fakeollama.New(t, "llama3.2:latest")
		env := newTestEnv(t, f, "llama3.2")
		env.a.Config.Tools.MaxParallel = par
		writeTool(t, env, "slow", "---\nparameters:\n  n: {type: string, required: true}\ncommand: [sh, -c, 'echo from $(date +%s%N); sleep 1; echo to $(date +%s%N); echo slow-$1', sh, \"{{n}}\"]\neffect: read\n---\nA slow read.\n")
		var calls []fakeollama.Call
		for i := 1; i <= 4; i++ {
			calls = append(calls, fakeollama.Call{ID: fmt.Sprint("c", i), Name: "slow", Args: map[string]any{"n": fmt.Sprint(i)}})
		}
		f.Script(fakeollama.ToolReply("llama3.2", calls...), fakeollama.TextReply("llama3.2", "ok"))
		if err := env.a.RunPrompt(t.Context(), "go"); err != nil {
			t.Fatal(err)
		}
		m := fakeollama.MessagesOf(f.ChatRequests()[1])
		var order []string
		var spans [][2]int64
		for _, msg := range m[len(m)-4:] {
			c := msg["content"].(string)
			for i := 1; i <= 4; i++ {
				if strings.Contains(c, fmt.Sprintf("id=c%d ", i)) && strings.Contains(c, fmt.Sprintf("slow-%d", i)) {
					order = append(order, fmt.Sprint(i))
				}
			}
			var from, to int64
			fmt.Sscanf(c[strings.Index(c, "from "):], "from %d\nto %d", &from, &to)
			spans = append(spans, [2]int64{from, to})
		}
		if strings.Join(order, "") != "1234" {
			t.Errorf("max_parallel %d: results out of call order: %v", par, order)
		}
		overlaps := 0
		for i := range spans {
			for j := i + 1; j < len(spans); j++ {
				if spans[i][0] < spans[j][1] && spans[j][0] < spans[i][1] {
					overlaps++
				}
			}
		}
		if (overlaps > 0) != (par == 0) {
			t.Errorf("max_parallel %d: %d of the runs overlap: %v", par, overlaps, spans)
		}
	}
}

// A write and a read of one file in one reply never interleave: the read
// after the write reads what was written, and the read before it what was
// there — whatever runs ahead.
func TestParallelReadAfterWriteSeesIt(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	env.a.approvals.auto = true
	e2e.WriteFile(t, env.dir, "a.txt", "old\n")
	e2e.WriteFile(t, env.dir, "b.txt", "b\n")
	f.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "r0", Name: "read_file", Args: map[string]any{"path": "b.txt"}},
		fakeollama.Call{ID: "r1", Name: "read_file", Args: map[string]any{"path": "a.txt"}},
		fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "a.txt", "content": "new\n"}},
		fakeollama.Call{ID: "r2", Name: "read_file", Args: map[string]any{"path": "a.txt"}},
	), fakeollama.TextReply("llama3.2", "ok"))
	if err := env.a.RunPrompt(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	res := fakeollama.ToolResults(f.ChatRequests())
	if !strings.Contains(res["r1"], "old") || !strings.Contains(res["r2"], "new") || strings.Contains(res["r2"], "old") {
		t.Errorf("before the write %q, after it %q", res["r1"], res["r2"])
	}
}
