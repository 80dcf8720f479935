package modelcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/textcalls"
)

func task(t *testing.T, id string) Task {
	t.Helper()
	for _, tk := range Battery("tok9") {
		if tk.ID == id {
			return tk
		}
	}
	t.Fatalf("no task %s", id)
	return Task{}
}

// trace is one round with calls (name, result, failed "!" prefix).
func trace(calls ...[2]string) *Trace {
	tr := &Trace{}
	tr.Round(llm.ChatStats{}, nil, 0)
	for _, c := range calls {
		failed := strings.HasPrefix(c[1], "!")
		tr.Add(CallRecord{Name: c[0], Result: strings.TrimPrefix(c[1], "!"), Failed: failed})
	}
	return tr
}

// Each task's check, passing and failing as a model's turn would make it.
func TestBatteryChecks(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		id   string
		tr   *Trace
		ok   bool
		note string
	}{
		{"answer", trace(), true, ""},
		{"answer", trace([2]string{"read_file", "x"}), false, "called 1 tool"},
		{"two", trace([2]string{"read_file", "alpha tok9"}, [2]string{"read_file", "beta tok9"}), true, ""},
		{"two", trace([2]string{"read_file", "!no such file"}), false, "did not read both files; read_file: no such file"},
		{"syntax", trace(), true, ""},
		{"syntax", trace([2]string{"read_file", "package main"}), false, "ran a call"},
		{"types", trace([2]string{"read_file", "!bad offset"}, [2]string{"read_file", "row 4 \nrow 5 \nrow 6 \n"}), true, "after an error result"},
		{"types", trace([2]string{"read_file", numberedLines(12)}), false, "no read of exactly those lines"},
		{"list", trace([2]string{"list_files", "alpha.md beta.md gamma.md"}), true, ""},
		{"list", trace([2]string{"list_files", "alpha.md"}), false, "did not return what was asked"},
		{"search", trace(), false, "no search_files call"},
		{"edit", trace([2]string{"edit_file", "ok"}), false, "config.ini is not as asked"},
	} {
		ok, note := task(t, c.id).Check(ws, c.tr)
		if ok != c.ok || !strings.Contains(note, c.note) {
			t.Errorf("%s: %v %q, want %v %q", c.id, ok, note, c.ok, c.note)
		}
	}
	two := &Trace{}
	for _, w := range []string{"alpha", "beta"} {
		two.Round(llm.ChatStats{}, nil, 0)
		two.Add(CallRecord{Name: "read_file", Result: w + " tok9"})
	}
	if ok, note := task(t, "two").Check(ws, two); ok || note != "one call per reply" {
		t.Errorf("two replies: %v %q", ok, note)
	}
	os.WriteFile(filepath.Join(ws, "config.ini"), []byte("name = demo\nport = 9090\ndebug = false\n"), 0o644)
	if ok, note := task(t, "edit").Check(ws, trace([2]string{"write_file", "ok"})); !ok || !strings.Contains(note, "instead of edit_file") {
		t.Errorf("edit by a rewrite: %v %q", ok, note)
	}
	printed := trace()
	printed.Recovered(textcalls.Result{Format: "json", Unread: []string{`{"name": "read_file"`}}, false)
	printed.AskedModel()
	if ok, note := task(t, "syntax").Check(ws, printed); ok || !strings.Contains(note, "wrote a call") || printed.Rounds[0].How != "text: json" || !printed.Rounds[0].Asked {
		t.Errorf("a printed call: %v %q %+v", ok, note, printed.Rounds[0])
	}
	if got := TruncateRunes("héllo wörld", 5); got != "héllo…" {
		t.Errorf("TruncateRunes: %q", got)
	}
}

// A check's results are kept per model and Ollama version; the newest is
// what /model and the menu show, and one that failed is never chosen
// silently. The report prints each model's table and the pick.
func TestReportsKeptAndPrinted(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	old := Report{Model: "llama3.2:latest", OllamaVersion: "0.12", CheckedAt: time.Now().Add(-time.Hour), Grade: GradeGood}
	newer := Report{Model: "llama3.2:latest", OllamaVersion: "0.13", CheckedAt: time.Now(), Grade: GradeProse}
	Save(old)
	Save(newer)
	Save(Report{Model: "@route", Grade: GradeGood})
	if r, ok := Last("llama3.2:latest"); !ok || r.OllamaVersion != "0.13" {
		t.Fatalf("Last: %+v %v", r, ok)
	}
	if _, failed := Failed("llama3.2:latest"); !failed {
		t.Error("a prose model is not marked")
	}
	if _, ok := Last("@route"); ok {
		t.Error("a route's check was kept")
	}
	all := map[string]bool{}
	for _, tk := range Battery("") {
		all[tk.ID] = true
	}
	a, b := report("fast", all), report("broken", nil)
	a.OllamaVersion, a.Counters, a.GenTokensPerSec, a.ContextWindow = "0.13", true, 3, 8192
	a.Tasks[0].How = "text: json"
	b.Error = "model not found"
	a.Judge()
	b.Judge()
	var sb strings.Builder
	WriteReport(&sb, []Report{a, b, {Model: "@box", Server: "llamacpp", Tasks: a.Tasks}})
	out := sb.String()
	for _, want := range []string{"fast · Ollama 0.13", "slow on this machine", "context window 8192 tokens", "not checked: model not found", "@box · llamacpp", "does not report", "pick fast"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if PassWord(true) != "pass" || PassWord(false) != "FAIL" {
		t.Error("PassWord")
	}
	var rates Rates
	tr := &Trace{}
	tr.Round(llm.ChatStats{FirstToken: time.Second, PromptTokens: 100, PromptEval: time.Second, ReplyTokens: 20, Generation: 2 * time.Second}, nil, 0)
	rates.Add(tr)
	var r Report
	rates.Fill(&r)
	if !rates.Counters() || r.GenTokensPerSec != 10 || r.PromptTokensPerSec != 100 || r.FirstTokenSeconds != 1 {
		t.Errorf("rates: %+v", r)
	}
}
