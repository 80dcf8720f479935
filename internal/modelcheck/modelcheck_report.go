package modelcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/datadir"
)

// What a model check found, and what it says: the report per model, its
// verdict, the table and the recommendation, and the saved results /model
// and the menu show.

// TaskReport is one row of the table.
type TaskReport struct {
	ID      string  `json:"id"`
	Title   string  `json:"title"`
	Passed  bool    `json:"passed"`
	How     string  `json:"how"` // "native", "text: FORMAT", "prose: FORMAT", "none"
	Rounds  int     `json:"rounds"`
	Seconds float64 `json:"seconds"`
	Note    string  `json:"note,omitempty"`
	Refused int     `json:"refused,omitempty"` // calls refused: not the one the task asks for
}

// Report is one model's check.
type Report struct {
	Model         string       `json:"model"`
	Server        string       `json:"server"` // "ollama" or the route's provider
	OllamaVersion string       `json:"ollama_version,omitempty"`
	CheckedAt     time.Time    `json:"checked_at"`
	Tasks         []TaskReport `json:"tasks"`
	// The server's counters; zero when it does not report them.
	PromptTokensPerSec float64 `json:"prompt_tokens_per_sec"`
	GenTokensPerSec    float64 `json:"generation_tokens_per_sec"`
	Counters           bool    `json:"server_counters"`
	FirstTokenSeconds  float64 `json:"first_token_seconds"` // median over the tasks
	ContextWindow      int     `json:"context_window"`
	Layout             string  `json:"prompt_layout"`
	ToolMode           string  `json:"tool_mode"`
	Grade              string  `json:"grade"` // good, reading, unreliable, prose, slow-good...
	Verdict            string  `json:"verdict"`
	Error              string  `json:"error,omitempty"`
}

func (r *Report) Passed(kinds ...Kind) (int, int) {
	n, of := 0, 0
	for _, t := range r.Tasks {
		k := KindOf(t.ID)
		if len(kinds) > 0 && !slices.Contains(kinds, k) {
			continue
		}
		of++
		if t.Passed {
			n++
		}
	}
	return n, of
}

func KindOf(id string) Kind {
	for _, t := range Battery("") {
		if t.ID == id {
			return t.Kind
		}
	}
	return KindAnswer
}

// Grades, from best to worst: what the menu shows and what a model that
// failed means (never chosen silently).
const (
	GradeGood       = "good"
	GradeReading    = "reading"
	GradeUnreliable = "unreliable"
	GradeProse      = "prose"
)

// slowGeneration is the generation rate under which a turn feels slow
// (a 150-token answer takes 30 s).
const slowGeneration = 5.0

// Judge sets the grade and the one-line verdict.
func (r *Report) Judge() {
	if r.Error != "" {
		r.Grade, r.Verdict = GradeUnreliable, "not checked: "+r.Error
		return
	}
	called := false
	for _, t := range r.Tasks {
		called = called || t.How != "none"
	}
	all, of := r.Passed()
	reads, readsOf := r.Passed(KindRead)
	acts, actsOf := r.Passed(KindAct)
	quiet, quietOf := r.Passed(KindAnswer)
	switch {
	case !called:
		r.Grade, r.Verdict = GradeProse, "does not call tools: prose mode (questions and answers; you run the commands)"
	case all == of:
		r.Grade, r.Verdict = GradeGood, "good for everyday use"
	case reads == readsOf && acts < actsOf:
		r.Grade, r.Verdict = GradeReading, "works for reading, unreliable for edits and commands"
	default:
		r.Grade, r.Verdict = GradeUnreliable, fmt.Sprintf("unreliable: %d of %d tasks passed", all, of)
	}
	if called && quiet < quietOf {
		r.Verdict += "; calls tools when it should only answer"
	}
	if r.Counters && r.GenTokensPerSec > 0 && r.GenTokensPerSec < slowGeneration && r.Grade != GradeProse {
		r.Verdict += fmt.Sprintf("; slow on this machine (%.1f tokens/s: a short answer takes %.0f s)", r.GenTokensPerSec, 150/r.GenTokensPerSec)
	}
}

func PassWord(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// Dir is where results are kept: DATA/model-checks.
func Dir() string {
	if d := datadir.Path(); d != "" {
		return filepath.Join(d, "model-checks")
	}
	return ""
}

// checkFileName is one file per model and Ollama version.
func checkFileName(model, version string) string {
	safe := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '/' || r == ':' || r == '\\' || r == '@' || r == ' ' || r < 32 {
				return '_'
			}
			return r
		}, s)
	}
	if version == "" {
		version = "unknown"
	}
	return safe(model) + "@ollama-" + safe(version) + ".json"
}

func Save(r Report) {
	d := Dir()
	if d == "" || strings.HasPrefix(r.Model, "@") {
		return
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	os.WriteFile(filepath.Join(d, checkFileName(r.Model, r.OllamaVersion)), b, 0o600)
}

// Last is the newest saved check of model (any Ollama version).
func Last(model string) (Report, bool) {
	d := Dir()
	if d == "" {
		return Report{}, false
	}
	prefix := strings.TrimSuffix(checkFileName(model, "x"), "x.json")
	entries, _ := os.ReadDir(d)
	var best Report
	found := false
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, e.Name()))
		var r Report
		if err != nil || json.Unmarshal(b, &r) != nil || r.Model != model {
			continue
		}
		if !found || r.CheckedAt.After(best.CheckedAt) {
			best, found = r, true
		}
	}
	return best, found
}

// Failed reports whether model's last check says it cannot drive
// Harvey (prose only or unreliable): such a model is never chosen silently.
func Failed(model string) (Report, bool) {
	r, ok := Last(model)
	return r, ok && (r.Grade == GradeProse || r.Grade == GradeUnreliable)
}

// WriteReport prints each model's table and verdict, then which to
// pick for what.
func WriteReport(out io.Writer, reports []Report) {
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(out)
		}
		head := r.Model
		if r.OllamaVersion != "" {
			head += " · Ollama " + r.OllamaVersion
		} else if r.Server != "ollama" {
			head += " · " + r.Server
		}
		fmt.Fprintln(out, head)
		if r.Error != "" {
			fmt.Fprintf(out, "  not checked: %s\n", r.Error)
			continue
		}
		fmt.Fprintf(out, "  %-34s %-6s %-24s %6s %8s  %s\n", "task", "result", "how the call came", "rounds", "seconds", "note")
		for _, t := range r.Tasks {
			fmt.Fprintf(out, "  %-34s %-6s %-24s %6d %8.1f  %s\n", t.Title, PassWord(t.Passed), TruncateRunes(t.How, 24), t.Rounds, t.Seconds, t.Note)
		}
		if r.Counters {
			fmt.Fprintf(out, "  prompt evaluation %.0f tokens/s · generation %.1f tokens/s · first token %.1f s (median of a turn)\n", r.PromptTokensPerSec, r.GenTokensPerSec, r.FirstTokenSeconds)
		} else {
			fmt.Fprintf(out, "  first token %.1f s (median of a turn) · tokens/s: the server does not report its prompt and generation timings (Ollama does), so they are not shown\n", r.FirstTokenSeconds)
		}
		window := "as the server decides"
		if r.ContextWindow > 0 {
			window = fmt.Sprintf("%d tokens", r.ContextWindow)
		}
		fmt.Fprintf(out, "  context window %s · prompt layout %s · tool mode %s\n", window, r.Layout, r.ToolMode)
		fmt.Fprintf(out, "  verdict: %s\n", r.Verdict)
	}
	if pick := Recommend(reports); pick != "" {
		fmt.Fprintf(out, "\n%s\n", pick)
	}
}

// Recommend says, for several models, which to pick for what.
func Recommend(reports []Report) string {
	var ok []Report
	var avoid []string
	for _, r := range reports {
		switch {
		case r.Error != "":
		case r.Grade == GradeGood || r.Grade == GradeReading:
			ok = append(ok, r)
		default:
			avoid = append(avoid, r.Model+" ("+r.Grade+")")
		}
	}
	if len(reports) < 2 {
		return ""
	}
	score := func(r Report) int { n, _ := r.Passed(); return n }
	sort.SliceStable(ok, func(i, j int) bool {
		if score(ok[i]) != score(ok[j]) {
			return score(ok[i]) > score(ok[j])
		}
		return ok[i].GenTokensPerSec > ok[j].GenTokensPerSec
	})
	var parts []string
	if len(ok) > 0 {
		best := ok[0]
		parts = append(parts, fmt.Sprintf("pick %s for everyday work (%d of %d tasks)", best.Model, score(best), len(best.Tasks)))
		fastest := best
		for _, r := range ok[1:] {
			if r.GenTokensPerSec > fastest.GenTokensPerSec && r.Grade == GradeReading || r.GenTokensPerSec > fastest.GenTokensPerSec*1.5 {
				fastest = r
			}
		}
		if fastest.Model != best.Model {
			parts = append(parts, fmt.Sprintf("%s for quick reading and questions (%.1f tokens/s)", fastest.Model, fastest.GenTokensPerSec))
		}
	} else {
		parts = append(parts, "none of these models drives Harvey's tools reliably: try llama3.2 or qwen2.5 (ollama pull llama3.2)")
	}
	if len(avoid) > 0 {
		parts = append(parts, "avoid for tool work: "+strings.Join(avoid, ", "))
	}
	return strings.Join(parts, "; ")
}

// Rates adds up the server's own counters over the battery.
type Rates struct {
	firsts            []time.Duration // each task's time to its first token
	promptTok, genTok int
	promptDur, genDur time.Duration
	missing           bool // a round without the counters
}

// Counters reports whether every round so far had the server's counters.
func (c *Rates) Counters() bool { return !c.missing }

// Add counts a task's rounds.
func (c *Rates) Add(tr *Trace) {
	for i, rd := range tr.Rounds {
		if i == 0 && rd.Stats.FirstToken > 0 {
			c.firsts = append(c.firsts, rd.Stats.FirstToken)
		}
		if rd.Stats.Generation == 0 {
			c.missing = true
			continue
		}
		c.promptTok += rd.Stats.PromptTokens
		c.promptDur += rd.Stats.PromptEval
		c.genTok += rd.Stats.ReplyTokens
		c.genDur += rd.Stats.Generation
	}
}

// report puts the rates in r: tokens per second where every round had
// the counters, and the median time to the first token.
func (c *Rates) Fill(r *Report) {
	r.Counters = !c.missing && c.genDur > 0
	if r.Counters {
		r.GenTokensPerSec = float64(c.genTok) / c.genDur.Seconds()
		if c.promptDur > 0 {
			r.PromptTokensPerSec = float64(c.promptTok) / c.promptDur.Seconds()
		}
	}
	if len(c.firsts) > 0 {
		slices.Sort(c.firsts)
		r.FirstTokenSeconds = c.firsts[len(c.firsts)/2].Seconds()
	}
}
