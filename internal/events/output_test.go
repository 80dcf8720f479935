package events

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// stream-json: one event a line, numbered from 1, each with the schema's
// version; the model's text, a call, its approval and result, the usage and
// the end, in order; secrets redacted wherever they appear.
func TestStreamEvents(t *testing.T) {
	var out strings.Builder
	s := New(&out, ModeStreamJSON)
	s.Sandbox = "full"
	token := "ghp_" + strings.Repeat("a1B2", 9)
	s.TurnStart("fix it " + token)
	fmt.Fprint(Writer{S: s}, "Looking. ")
	s.ToolCall("c1", "run_command", `{"command":"echo `+token+`"}`, true)
	s.Approval("run_command", "echo "+token, true, "you")
	s.ToolResult("c1", "run_command", "ok", "ok", "exit 0", token, []string{"note " + token}, time.Second)
	s.TurnUsage(TurnFigures{PromptTokens: 10, ReplyTokens: 2})
	s.End(0)
	if strings.Contains(out.String(), token) {
		t.Fatalf("a token left:\n%s", out.String())
	}
	var types []string
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for n := 1; sc.Scan(); n++ {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d is not JSON: %v", n, err)
		}
		if ev["v"] != float64(SchemaVersion) || ev["seq"] != float64(n) {
			t.Fatalf("line %d: %v", n, ev)
		}
		types = append(types, ev["type"].(string))
	}
	want := "turn_start assistant_text tool_call approved tool_result assistant_message usage end"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// json: nothing until the end, then one object with the answer, the calls
// and the exit reason; a nil Sink records nothing and does not fail.
func TestResultObject(t *testing.T) {
	var out strings.Builder
	s := New(&out, ModeJSON)
	s.TurnStart("hi")
	fmt.Fprint(Writer{S: s}, "the answer")
	s.ToolCall("c1", "read_file", "not json", false)
	s.ToolResult("c1", "read_file", "ok", "ok", "1 line", "x", nil, 0)
	if out.Len() != 0 {
		t.Fatalf("json wrote before the end: %q", out.String())
	}
	s.End(3)
	var obj struct {
		Answer    string        `json:"answer"`
		ToolCalls []*callRecord `json:"tool_calls"`
		Reason    string        `json:"exit_reason"`
	}
	if err := json.Unmarshal([]byte(out.String()), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Answer != "the answer" || len(obj.ToolCalls) != 1 || obj.ToolCalls[0].Status != "ok" || obj.Reason != "not_approved" {
		t.Fatalf("%+v", obj)
	}
	var none *Sink
	none.TurnStart("x")
	none.Emit("x", nil)
	none.End(0)
	if ValidMode("xml") == nil || ValidMode(ModeStreamJSON) != nil {
		t.Fatal("ValidMode")
	}
}

// A hook's Emit comes from outside the tool loop, while the model's text
// streams: every event still gets its own sequence number (.ci/run runs
// this under -race).
func TestEmitBesideTheStream(t *testing.T) {
	var out safeBuilder
	s := New(&out, ModeStreamJSON)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				s.Emit("hook", map[string]any{"hook": "h"})
			}
		})
	}
	for range 200 {
		fmt.Fprint(Writer{S: s}, "x")
	}
	wg.Wait()
	seen := map[float64]bool{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		n := ev["seq"].(float64)
		if seen[n] {
			t.Fatalf("sequence number %v twice", n)
		}
		seen[n] = true
	}
	if len(seen) != 400 {
		t.Fatalf("%d events, want 400", len(seen))
	}
}

// safeBuilder is a strings.Builder the test reads after the writers end.
type safeBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *safeBuilder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *safeBuilder) String() string { return w.b.String() }
