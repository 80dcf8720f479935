package modelcheck

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/llm"
)

// report is a check whose tasks passed as pass says (by id), each called
// natively unless it is an answer task.
func report(model string, pass map[string]bool) Report {
	r := Report{Model: model}
	for _, t := range Battery("") {
		how := "native"
		if t.Kind == KindAnswer {
			how = "none"
		}
		r.Tasks = append(r.Tasks, TaskReport{ID: t.ID, Title: t.Title, Passed: pass[t.ID], How: how})
	}
	return r
}

// The verdict: every task passed is good; reads but not actions is
// reading; no call at all is prose; the recommendation picks the best
// and names what to avoid.
func TestJudge(t *testing.T) {
	all := map[string]bool{}
	reads := map[string]bool{}
	for _, tk := range Battery("") {
		all[tk.ID] = true
		reads[tk.ID] = tk.Kind != KindAct
	}
	good, reading := report("good", all), report("reader", reads)
	prose := report("prose", nil)
	for i := range prose.Tasks {
		prose.Tasks[i].How = "none"
	}
	for _, c := range []struct {
		r     *Report
		grade string
	}{{&good, GradeGood}, {&reading, GradeReading}, {&prose, GradeProse}} {
		c.r.Judge()
		if c.r.Grade != c.grade {
			t.Errorf("%s: %s (%s), want %s", c.r.Model, c.r.Grade, c.r.Verdict, c.grade)
		}
	}
	if rec := Recommend([]Report{prose, reading, good}); !strings.Contains(rec, "pick good") || !strings.Contains(rec, "prose") {
		t.Errorf("recommendation: %q", rec)
	}
}

// A task is judged by the trace, never by the answer's words: the read
// task passes when read_file returned the token's line, not when the
// model only said it.
func TestTaskJudgedByTrace(t *testing.T) {
	var read Task
	for _, tk := range Battery("tok123") {
		if tk.ID == "read" {
			read = tk
		}
	}
	said := &Trace{}
	said.Round(llm.ChatStats{}, nil, 0)
	if ok, _ := read.Check(t.TempDir(), said); ok {
		t.Error("passed without a call")
	}
	var tr Trace
	tr.Round(llm.ChatStats{}, nil, 0)
	for name, body := range read.Files {
		tr.Add(CallRecord{Name: "read_file", Args: `{"path":"` + name + `"}`, Result: body})
	}
	if ok, note := read.Check(t.TempDir(), &tr); !ok {
		t.Errorf("a read that returned the file failed: %s", note)
	}
	if !expectsChange("a.go")("/ws", Effect{Tool: "edit_file", Change: true, Target: "/ws/a.go"}) ||
		expectsChange("a.go")("/ws", Effect{Tool: "edit_file", Change: true, Target: "/ws/b.go"}) ||
		expectsChange("a.go")("/ws", Effect{Tool: "edit_file", Change: true, Target: "a.go", ByUser: true}) {
		t.Error("expectsChange")
	}
}
