package harvey

// harvey model check: will this model drive Harvey on this machine? A fixed
// battery of short tasks runs against each model in a throw-away workspace
// (made under the temporary directory, removed afterwards, also after
// Ctrl-C), through the same turn, tool loop, recovery and gate as a real
// session. Each task is judged by what happened — the files in the
// workspace, the calls made and their results — never by the words of the
// answer. The figures are the server's own counters.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// checkTaskTimeout bounds one task (a Pi answers a turn in tens of
// seconds; a model stuck in a loop is stopped by the round limit first).
var checkTaskTimeout = 4 * time.Minute

// checkTask is one task of the battery.
type checkTask struct {
	id, title string
	files     map[string]string // written into the workspace before the task
	prompt    string
	kind      taskKind
	// check judges the task by the workspace and the turn's trace.
	check func(ws string, tr *turnTrace) (bool, string)
}

type taskKind int

const (
	kindAnswer taskKind = iota // no tool should run
	kindRead                   // reading: read, search, list
	kindAct                    // changes and commands: edit, run, several calls
)

// checkBattery is the tasks, with a fresh token so no answer can be
// remembered from an earlier run.
func checkBattery(token string) []checkTask {
	return []checkTask{
		{id: "answer", title: "answer without tools", kind: kindAnswer,
			prompt: "What is the capital of France? Answer in one word. Do not use any tool.",
			check:  checkNoTools},
		{id: "read", title: "read a named file", kind: kindRead,
			files:  map[string]string{"notes.txt": "The launch code is " + token + ".\n"},
			prompt: "Read the file notes.txt and tell me the launch code written in it.",
			check:  resultHas("read_file", token)},
		{id: "search", title: "find a definition (search)", kind: kindRead,
			files: map[string]string{
				"src/billing/invoice.go": "package billing\n\n// computeTotal adds the items up.\nfunc computeTotal(items []int) int {\n\tt := 0\n\tfor _, i := range items {\n\t\tt += i\n\t}\n\treturn t\n}\n",
				"src/main.go":            "package main\n\nfunc main() {}\n",
				"README.md":              "# shop\n",
			},
			prompt: "In which file is the function computeTotal defined? Search the project for it.",
			check:  resultHas("search_files", "invoice.go")},
		{id: "list", title: "list a directory", kind: kindRead,
			files:  map[string]string{"docs/alpha.md": "a\n", "docs/beta.md": "b\n", "docs/gamma.md": "c\n"},
			prompt: "List the files in the docs directory.",
			check:  resultHas("list_files", "alpha.md", "beta.md", "gamma.md")},
		{id: "edit", title: "edit one line", kind: kindAct,
			files:  map[string]string{"config.ini": "name = demo\nport = 8080\ndebug = false\n"},
			prompt: "In the file config.ini, change the port from 8080 to 9090. Change nothing else.",
			check:  checkEditedPort},
		{id: "run", title: "run a command", kind: kindAct,
			prompt: "Run the shell command `echo check-" + token + "` and tell me what it printed.",
			check:  resultHas("run_command", "check-"+token)},
		{id: "two", title: "two calls in one reply", kind: kindAct,
			files:  map[string]string{"a.txt": "alpha " + token + "\n", "b.txt": "beta " + token + "\n"},
			prompt: "Read both files a.txt and b.txt at once (two read_file calls in one reply) and tell me what each contains.",
			check:  checkBothRead(token)},
		{id: "syntax", title: "only asked about syntax", kind: kindAnswer,
			files:  map[string]string{"main.go": "package main\n"},
			prompt: "Do not use any tools and do not read anything. Just explain in one or two sentences what a call to the read_file tool for main.go would look like.",
			check:  checkOnlyDescribed},
		{id: "types", title: "numeric arguments (offset, limit)", kind: kindRead,
			files:  map[string]string{"data.txt": numberedLines(12)},
			prompt: "Read only lines 4 to 6 of data.txt, using read_file's offset and limit arguments.",
			check:  checkLines4to6},
	}
}

// checkBothRead passes when one reply read both files (their lines hold
// token).
func checkBothRead(token string) func(string, *turnTrace) (bool, string) {
	return func(_ string, tr *turnTrace) (bool, string) {
		for _, r := range tr.rounds {
			got := map[string]bool{}
			for _, c := range r.calls {
				for _, w := range []string{"alpha", "beta"} {
					if c.name == "read_file" && !c.failed && strings.Contains(c.result, w+" "+token) {
						got[w] = true
					}
				}
			}
			if got["alpha"] && got["beta"] {
				return true, ""
			}
		}
		if reads := countCalls(tr, "read_file"); reads >= 2 {
			return false, "one call per reply"
		}
		return false, "did not read both files" + failedCalls(tr)
	}
}

// checkOnlyDescribed passes when no call ran or was written as text.
func checkOnlyDescribed(_ string, tr *turnTrace) (bool, string) {
	if n := len(tr.allCalls()); n > 0 {
		return false, "ran a call it was only asked to describe"
	}
	for _, r := range tr.rounds {
		if len(r.unread) > 0 {
			return false, "wrote a call it was only asked to describe"
		}
	}
	return true, ""
}

// checkLines4to6 passes when read_file read exactly lines 4 to 6.
func checkLines4to6(_ string, tr *turnTrace) (bool, string) {
	calls := tr.allCalls()
	for i, c := range calls {
		if c.name == "read_file" && !c.failed && strings.Contains(c.result, "row 4 ") && strings.Contains(c.result, "row 6 ") && !strings.Contains(c.result, "row 9 ") {
			if i > 0 && calls[i-1].failed {
				return true, "after an error result"
			}
			return true, ""
		}
	}
	return false, "no read of exactly those lines" + failedCalls(tr)
}

// checkNoTools passes when no tool ran.
func checkNoTools(_ string, tr *turnTrace) (bool, string) {
	if n := len(tr.allCalls()); n > 0 {
		return false, fmt.Sprintf("called %s for a plain question", plural(n, "tool"))
	}
	return true, ""
}

// checkEditedPort passes when config.ini holds the new port and nothing else changed.
func checkEditedPort(ws string, tr *turnTrace) (bool, string) {
	b, err := os.ReadFile(filepath.Join(ws, "config.ini"))
	if err != nil || string(b) != "name = demo\nport = 9090\ndebug = false\n" {
		return false, "config.ini is not as asked" + failedCalls(tr)
	}
	if !succeeded(tr, "edit_file") {
		return true, "rewrote the file instead of edit_file"
	}
	return true, ""
}

func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "row %d of the data\n", i)
	}
	return b.String()
}

// resultHas passes when a call to tool succeeded with every want in its
// result.
func resultHas(tool string, want ...string) func(string, *turnTrace) (bool, string) {
	return func(_ string, tr *turnTrace) (bool, string) {
		for _, c := range tr.allCalls() {
			if c.name != tool || c.failed {
				continue
			}
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(c.result, w)
			}
			if ok {
				return true, ""
			}
		}
		if countCalls(tr, tool) == 0 {
			return false, "no " + tool + " call" + failedCalls(tr)
		}
		return false, tool + " did not return what was asked" + failedCalls(tr)
	}
}

func succeeded(tr *turnTrace, tool string) bool {
	for _, c := range tr.allCalls() {
		if c.name == tool && !c.failed {
			return true
		}
	}
	return false
}

func countCalls(tr *turnTrace, tool string) int {
	n := 0
	for _, c := range tr.allCalls() {
		if c.name == tool {
			n++
		}
	}
	return n
}

// failedCalls names the first failed call's error, for the table's note.
func failedCalls(tr *turnTrace) string {
	for _, r := range tr.rounds {
		if len(r.unread) > 0 {
			return "; a printed call could not be read"
		}
		for _, c := range r.calls {
			if c.failed {
				return "; " + c.name + ": " + truncateRunes(firstLine(strings.TrimPrefix(c.result, "error: ")), 60)
			}
		}
	}
	return ""
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// taskReport is one row of the table.
type taskReport struct {
	ID      string  `json:"id"`
	Title   string  `json:"title"`
	Passed  bool    `json:"passed"`
	How     string  `json:"how"` // "native", "text: FORMAT", "prose: FORMAT", "none"
	Rounds  int     `json:"rounds"`
	Seconds float64 `json:"seconds"`
	Note    string  `json:"note,omitempty"`
}

// modelReport is one model's check.
type modelReport struct {
	Model         string       `json:"model"`
	Server        string       `json:"server"` // "ollama" or the route's provider
	OllamaVersion string       `json:"ollama_version,omitempty"`
	CheckedAt     time.Time    `json:"checked_at"`
	Tasks         []taskReport `json:"tasks"`
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

func (r *modelReport) passed(kinds ...taskKind) (int, int) {
	n, of := 0, 0
	for _, t := range r.Tasks {
		k := taskKindOf(t.ID)
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

func taskKindOf(id string) taskKind {
	for _, t := range checkBattery("") {
		if t.id == id {
			return t.kind
		}
	}
	return kindAnswer
}

// Grades, from best to worst: what the menu shows and what a model that
// failed means (never chosen silently).
const (
	gradeGood       = "good"
	gradeReading    = "reading"
	gradeUnreliable = "unreliable"
	gradeProse      = "prose"
)

// slowGeneration is the generation rate under which a turn feels slow
// (a 150-token answer takes 30 s).
const slowGeneration = 5.0

// judge sets the grade and the one-line verdict.
func (r *modelReport) judge() {
	if r.Error != "" {
		r.Grade, r.Verdict = gradeUnreliable, "not checked: "+r.Error
		return
	}
	called := false
	for _, t := range r.Tasks {
		called = called || t.How != "none"
	}
	all, of := r.passed()
	reads, readsOf := r.passed(kindRead)
	acts, actsOf := r.passed(kindAct)
	quiet, quietOf := r.passed(kindAnswer)
	switch {
	case !called:
		r.Grade, r.Verdict = gradeProse, "does not call tools: prose mode (questions and answers; you run the commands)"
	case all == of:
		r.Grade, r.Verdict = gradeGood, "good for everyday use"
	case reads == readsOf && acts < actsOf:
		r.Grade, r.Verdict = gradeReading, "works for reading, unreliable for edits and commands"
	default:
		r.Grade, r.Verdict = gradeUnreliable, fmt.Sprintf("unreliable: %d of %d tasks passed", all, of)
	}
	if called && quiet < quietOf {
		r.Verdict += "; calls tools when it should only answer"
	}
	if r.Counters && r.GenTokensPerSec > 0 && r.GenTokensPerSec < slowGeneration && r.Grade != gradeProse {
		r.Verdict += fmt.Sprintf("; slow on this machine (%.1f tokens/s: a short answer takes %.0f s)", r.GenTokensPerSec, 150/r.GenTokensPerSec)
	}
}

// checkOptions is what to check and where.
type checkOptions struct {
	models    []string // "" entries are not allowed; "@NAME" is a route
	ollamaURL string
	progress  io.Writer // a line per task as it finishes (nil: quiet)
}

// runModelCheck checks each model in its own throw-away workspace.
func runModelCheck(ctx context.Context, o checkOptions) ([]modelReport, error) {
	var reports []modelReport
	for _, m := range o.models {
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
		r := checkModel(ctx, m, o)
		r.judge()
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
		if r.Error == "" {
			saveCheck(r)
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// checkModel runs the battery against one model.
func checkModel(ctx context.Context, name string, o checkOptions) modelReport {
	r := modelReport{Model: name, Server: "ollama", CheckedAt: time.Now().UTC()}
	dir, err := os.MkdirTemp("", "harvey-check-*")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	route, isRoute := strings.CutPrefix(name, "@")
	model := name
	if isRoute {
		model = ""
	} else {
		route = ""
	}
	var sink strings.Builder
	a, err := Start(ctx, Options{Dir: dir, Model: model, OllamaURL: o.ollamaURL, AutoApprove: true, NoMCP: true,
		Stdin: strings.NewReader(""), Stdout: &sink, Stderr: &sink})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer a.Workspace.Close()
	defer a.Close()
	if !identify(ctx, a, &r, route, isRoute) {
		return r
	}
	token := randomToken()
	var rt checkRates
	for _, task := range checkBattery(token) {
		if ctx.Err() != nil {
			break
		}
		tr, elapsed, terr := runCheckTask(ctx, a, dir, task, route)
		if tr == nil {
			r.Error = firstLine(terr.Error())
			r.Counters = !rt.missing
			return r
		}
		if r.Layout == "" {
			r.Layout, r.ContextWindow, r.ToolMode = tr.layout, tr.window, tr.mode
			if tr.mode == string(ModeProse) {
				r.Layout = "tools described in the system prompt"
			}
		}
		pass, note := task.check(dir, tr.turnTrace)
		if terr != nil && ctx.Err() == nil {
			pass, note = false, firstLine(terr.Error())
		}
		row := taskReport{ID: task.id, Title: task.title, Passed: pass, How: howCalled(tr), Rounds: len(tr.rounds), Seconds: elapsed.Seconds(), Note: note}
		r.Tasks = append(r.Tasks, row)
		rt.add(tr.turnTrace)
		if o.progress != nil {
			fmt.Fprintf(o.progress, "  %-34s %s\n", r.Model+" · "+task.title, passWord(pass))
		}
	}
	rt.report(&r)
	return r
}

// identify names what answers the check in r: the route's server and
// model, or the model connected and its Ollama version. False: nothing
// answers (r.Error says why).
func identify(ctx context.Context, a *Agent, r *modelReport, route string, isRoute bool) bool {
	if isRoute {
		_, rt := a.Routes.find(route)
		if rt == nil {
			r.Error = "no route @" + route + " (harvey.yaml routes:, /route add)"
			return false
		}
		r.Server, r.Model = rt.Provider, "@"+route+" ("+rt.Model+")"
		return true
	}
	if a.Client == nil {
		r.Error = firstLine(fmt.Sprint(cmpErr(a.connectErr, a.errNoBackend())))
		return false
	}
	r.Model = a.ModelName
	if oc, ok := a.Client.(*OllamaClient); ok {
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r.OllamaVersion, _ = oc.Reachable(vctx)
		cancel()
	}
	return true
}

// checkRates adds up the server's own counters over the battery.
type checkRates struct {
	firsts            []time.Duration // each task's time to its first token
	promptTok, genTok int
	promptDur, genDur time.Duration
	missing           bool // a round without the counters
}

func (c *checkRates) add(tr *turnTrace) {
	for i, rd := range tr.rounds {
		if i == 0 && rd.stats.FirstToken > 0 {
			c.firsts = append(c.firsts, rd.stats.FirstToken)
		}
		if rd.stats.Generation == 0 {
			c.missing = true
			continue
		}
		c.promptTok += rd.stats.PromptTokens
		c.promptDur += rd.stats.PromptEval
		c.genTok += rd.stats.ReplyTokens
		c.genDur += rd.stats.Generation
	}
}

// report puts the rates in r: tokens per second where every round had
// the counters, and the median time to the first token.
func (c *checkRates) report(r *modelReport) {
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

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func passWord(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// checkTrace is a task's trace with what the turn chose.
type checkTrace struct {
	*turnTrace
	layout, mode string
	window       int
}

// runCheckTask writes the task's files and runs its prompt as a fresh
// conversation. A nil trace means the turn could not start at all.
func runCheckTask(ctx context.Context, a *Agent, dir string, task checkTask, route string) (*checkTrace, time.Duration, error) {
	for p, content := range task.files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, 0, err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return nil, 0, err
		}
	}
	a.ClearHistory()
	prompt := task.prompt
	if route != "" {
		prompt = "@" + route + " " + prompt
	}
	tctx, cancel := context.WithTimeout(ctx, checkTaskTimeout)
	defer cancel()
	t, p, err := a.newTurn(tctx, prompt)
	if err != nil {
		return nil, 0, err
	}
	if t.route != "" {
		defer t.client.Close()
	}
	t.trace = &turnTrace{}
	start := time.Now()
	err = a.runTurn(tctx, t, p)
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s", checkTaskTimeout)
	}
	return &checkTrace{turnTrace: t.trace, layout: t.layout.String(), mode: string(t.mode), window: t.window}, time.Since(start), err
}

// howCalled is how the task's calls came: the protocol's field, printed
// (and in which format), or none.
func howCalled(tr *checkTrace) string {
	var hows []string
	for _, r := range tr.rounds {
		if r.how != "" && !slices.Contains(hows, r.how) {
			hows = append(hows, r.how)
		}
	}
	if len(hows) == 0 {
		return "none"
	}
	return strings.Join(hows, ", ")
}

func randomToken() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ---- saved results ----

// checksDir is where results are kept: DATA/model-checks.
func checksDir() string {
	if d := userDataDir(); d != "" {
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

func saveCheck(r modelReport) {
	d := checksDir()
	if d == "" || strings.HasPrefix(r.Model, "@") {
		return
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	os.WriteFile(filepath.Join(d, checkFileName(r.Model, r.OllamaVersion)), b, 0o600)
}

// lastCheck is the newest saved check of model (any Ollama version).
func lastCheck(model string) (modelReport, bool) {
	d := checksDir()
	if d == "" {
		return modelReport{}, false
	}
	prefix := strings.TrimSuffix(checkFileName(model, "x"), "x.json")
	entries, _ := os.ReadDir(d)
	var best modelReport
	found := false
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, e.Name()))
		var r modelReport
		if err != nil || json.Unmarshal(b, &r) != nil || r.Model != model {
			continue
		}
		if !found || r.CheckedAt.After(best.CheckedAt) {
			best, found = r, true
		}
	}
	return best, found
}

// failedCheck reports whether model's last check says it cannot drive
// Harvey (prose only or unreliable): such a model is never chosen silently.
func failedCheck(model string) (modelReport, bool) {
	r, ok := lastCheck(model)
	return r, ok && (r.Grade == gradeProse || r.Grade == gradeUnreliable)
}

// ---- the report ----

// writeCheckReport prints each model's table and verdict, then which to
// pick for what.
func writeCheckReport(out io.Writer, reports []modelReport) {
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
			fmt.Fprintf(out, "  %-34s %-6s %-24s %6d %8.1f  %s\n", t.Title, passWord(t.Passed), truncateRunes(t.How, 24), t.Rounds, t.Seconds, t.Note)
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
	if pick := recommend(reports); pick != "" {
		fmt.Fprintf(out, "\n%s\n", pick)
	}
}

// recommend says, for several models, which to pick for what.
func recommend(reports []modelReport) string {
	var ok []modelReport
	var avoid []string
	for _, r := range reports {
		switch {
		case r.Error != "":
		case r.Grade == gradeGood || r.Grade == gradeReading:
			ok = append(ok, r)
		default:
			avoid = append(avoid, r.Model+" ("+r.Grade+")")
		}
	}
	if len(reports) < 2 {
		return ""
	}
	score := func(r modelReport) int { n, _ := r.passed(); return n }
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
			if r.GenTokensPerSec > fastest.GenTokensPerSec && r.Grade == gradeReading || r.GenTokensPerSec > fastest.GenTokensPerSec*1.5 {
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

// ---- harvey model check / /model check ----

const modelCheckUsage = "usage: harvey model check [NAME... | @ROUTE | --all] [--json] [--ollama URL]"

// modelCommand is `harvey model check`.
func modelCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "harvey: "+modelCheckUsage)
		return 2
	}
	var names []string
	var all, asJSON bool
	url := ""
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--all":
			all = true
		case a == "--json":
			asJSON = true
		case a == "--ollama" && i+1 < len(args):
			i++
			url = args[i]
		case strings.HasPrefix(a, "-"):
			fmt.Fprintf(stderr, "harvey: unknown flag %s (%s)\n", a, modelCheckUsage)
			return 2
		default:
			names = append(names, a)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ucf, _, _ := loadUserConfig()
	url = resolveOllamaURL(url, ucf.OllamaURL)
	names, err := checkTargets(ctx, url, names, all, ucf.Model)
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "checking %s: %d short tasks each, in a throw-away workspace (Ctrl-C stops)\n", strings.Join(names, ", "), len(checkBattery("")))
	reports, err := runModelCheck(ctx, checkOptions{models: names, ollamaURL: url, progress: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "harvey: model check stopped: %v (the throw-away workspace was removed)\n", err)
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(reports)
	} else {
		writeCheckReport(stdout, reports)
	}
	for _, r := range reports {
		if r.Error != "" {
			return 1
		}
	}
	return 0
}

// checkTargets resolves what to check: the names given, every installed
// model (--all), or the current one (the user's configured model, or the
// only one installed).
func checkTargets(ctx context.Context, url string, names []string, all bool, current string) ([]string, error) {
	if len(names) > 0 && !all {
		return names, nil
	}
	if current != "" && !all {
		return []string{current}, nil
	}
	oc, err := newOllamaClient(url, "", 0, "", 0)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	models, err := oc.Models(lctx)
	switch {
	case err != nil:
		return nil, err
	case len(models) == 0:
		return nil, errors.New("Ollama has " + noModelsHint)
	case all:
		return append(names, models...), nil
	case len(models) == 1:
		return models, nil
	}
	return nil, fmt.Errorf("several models are installed (%s): name one, or check them all with --all", strings.Join(models, ", "))
}

// cmdModelCheck is /model check [NAME... | --all] in the REPL: the same
// check, on the session's Ollama, without touching the conversation.
func cmdModelCheck(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	var names []string
	all := false
	for _, x := range args {
		if x == "--all" {
			all = true
		} else {
			names = append(names, x)
		}
	}
	names, err := checkTargets(ctx, a.OllamaURL, names, all, a.ModelName)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Err, "checking %s: %d short tasks each, in a throw-away workspace (Ctrl-C stops)\n", strings.Join(names, ", "), len(checkBattery("")))
	reports, err := runModelCheck(ctx, checkOptions{models: names, ollamaURL: a.OllamaURL, progress: a.Err})
	if err != nil {
		return fmt.Errorf("model check stopped: %v", err)
	}
	writeCheckReport(out, reports)
	return nil
}
