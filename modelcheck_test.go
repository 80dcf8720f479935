// Feature: harvey model check — the run (modelcheck.go), the battery
// (modelcheck_tasks.go) and the report and saved verdicts
// (modelcheck_report.go), against fake servers with scripted models.
package harvey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/fakeopenai"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/ollama"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

func TestModelCheckVerdicts(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	// The sandbox's own directories are the process's, made once on first
	// use: made before TMPDIR moves, so run alone this test does not find
	// them among what the check would leave.
	sandbox.Available()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// What the fake reports in every done line (doneLine).
	promptRate, genRate := 57/0.310233, 11/0.862104
	for _, c := range []struct {
		style   fakeollama.CheckStyle
		model   string
		grade   string
		verdict string
		how     string
	}{
		{fakeollama.CheckNative, "llama3.2:latest", modelcheck.GradeGood, "good for everyday use", "native"},
		{fakeollama.CheckText, "llama3.2:1b", modelcheck.GradeGood, "good for everyday use", "prose: JSON"},
		{fakeollama.CheckNever, "tinyllama:latest", modelcheck.GradeProse, "does not call tools", "none"},
		{fakeollama.CheckWrongType, "smollm2:latest", modelcheck.GradeUnreliable, "unreliable: 3 of 9 tasks passed", "native"},
		{fakeollama.CheckSlow, "mistral:latest", modelcheck.GradeGood, "slow on this machine (2.0 tokens/s", "native"},
	} {
		t.Run(c.model, func(t *testing.T) {
			f := fakeollama.CheckModel(t, c.style, c.model)
			reports, err := runModelCheck(t.Context(), checkOptions{models: []string{c.model}, ollamaURL: f.URL()})
			if err != nil || len(reports) != 1 {
				t.Fatal(err, reports)
			}
			r := reports[0]
			var sb strings.Builder
			modelcheck.WriteReport(&sb, reports)
			t.Log("\n" + sb.String())
			if r.Grade != c.grade || !strings.Contains(r.Verdict, c.verdict) {
				t.Fatalf("grade %s, verdict %q", r.Grade, r.Verdict)
			}
			if got := r.Tasks[1].How; got != c.how {
				t.Fatalf("read_file came %q, want %q", got, c.how)
			}
			if r.OllamaVersion != "0.15.4" || len(r.Tasks) != 9 {
				t.Fatalf("version %q, %d tasks", r.OllamaVersion, len(r.Tasks))
			}
			// The figures are the fake's own counters.
			wantGen := genRate
			if c.style == fakeollama.CheckSlow {
				wantGen = float64(fakeollama.SlowEvalCount) / (float64(fakeollama.SlowEvalNS) / 1e9)
			}
			if !r.Counters || !near(r.PromptTokensPerSec, promptRate) || !near(r.GenTokensPerSec, wantGen) {
				t.Fatalf("prompt %.2f tok/s (want %.2f), generation %.2f (want %.2f)", r.PromptTokensPerSec, promptRate, r.GenTokensPerSec, wantGen)
			}
			if c.style == fakeollama.CheckSlow && r.FirstTokenSeconds < 0.15 || r.FirstTokenSeconds <= 0 {
				t.Fatalf("first token %.3f s", r.FirstTokenSeconds)
			}
			if r.ContextWindow <= 0 || r.Layout == "" {
				t.Fatalf("window %d, layout %q", r.ContextWindow, r.Layout)
			}
			// The saved result is what /model and the menu show.
			saved, ok := modelcheck.Last(r.Model)
			if !ok || saved.Verdict != r.Verdict {
				t.Fatalf("saved %v %q", ok, saved.Verdict)
			}
			if d := modelDetails(t.Context(), mustOllamaClient(t, f.URL())); !strings.Contains(d[c.model], "checked: "+r.Verdict) {
				t.Fatalf("details %q", d[c.model])
			}
			e2e.NothingLeftIn(t, tmp)
		})
	}
}

func near(a, b float64) bool { return a > b*0.999 && a < b*1.001 }

func mustOllamaClient(t *testing.T, url string) *ollama.Client {
	c, err := newOllamaClient(url, "", 0, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Per task, what happened decides: the native model passes each task; the
// wrong-type model passes the question, the syntax question and the
// numeric task (coercion brings "4" back), and fails the rest with the
// error its calls got.
func TestModelCheckTableRows(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	f := fakeollama.CheckModel(t, fakeollama.CheckWrongType, "smollm2:latest")
	reports, _ := runModelCheck(t.Context(), checkOptions{models: []string{"smollm2:latest"}, ollamaURL: f.URL()})
	if len(reports) != 1 || len(reports[0].Tasks) != 9 {
		t.Fatalf("%+v", reports)
	}
	got := map[string]bool{}
	for _, row := range reports[0].Tasks {
		got[row.ID] = row.Passed
		if !row.Passed && row.ID != "two" && !strings.Contains(row.Note, "argument") {
			t.Errorf("%s: note %q does not say what went wrong", row.ID, row.Note)
		}
	}
	want := map[string]bool{"answer": true, "syntax": true, "types": true}
	for id, pass := range got {
		if pass != want[id] {
			t.Errorf("%s passed %v", id, pass)
		}
	}
}

// Several models: the report says which to pick for what, and a model
// that failed is never Enter's default in the menu.
func TestModelCheckRecommendsAndMenuSkipsFailed(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	f := fakeollama.New(t, "tinyllama:latest", "llama3.2:latest")
	f.Caps["tinyllama:latest"] = []string{"completion"}
	never, native := fakeollama.CheckReplies(fakeollama.CheckNever), fakeollama.CheckReplies(fakeollama.CheckNative)
	f.Respond = func(req map[string]any) fakeollama.Reply {
		if req["model"] == "tinyllama:latest" {
			return never(req)
		}
		return native(req)
	}
	reports, err := runModelCheck(t.Context(), checkOptions{models: []string{"tinyllama:latest", "llama3.2:latest"}, ollamaURL: f.URL()})
	if err != nil {
		t.Fatal(err)
	}
	pick := modelcheck.Recommend(reports)
	if !strings.Contains(pick, "pick llama3.2:latest for everyday work (9 of 9 tasks)") || !strings.Contains(pick, "avoid for tool work: tinyllama:latest (prose)") {
		t.Fatalf("recommendation %q", pick)
	}
	env := newTestEnv(t, nil, "")
	env.a.In = newLineReader(strings.NewReader("\n"))
	got := env.a.chooseModel([]string{"tinyllama:latest", "llama3.2:latest"}, map[string]string{})
	if got != "llama3.2:latest" {
		t.Fatalf("Enter chose %q: %q", got, env.errOut.String())
	}
}

// An OpenAI-compatible route: the check runs through it and says plainly
// that the server gives no timings.
func TestModelCheckRoute(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	srv := fakeopenai.New(t)
	for range 9 {
		srv.Script(fakeopenai.Text("Paris."))
	}
	cfg := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "harvey")
	os.MkdirAll(cfg, 0o700)
	old, _ := os.ReadFile(filepath.Join(cfg, "harvey.yaml"))
	t.Cleanup(func() { os.WriteFile(filepath.Join(cfg, "harvey.yaml"), old, 0o600) })
	os.WriteFile(filepath.Join(cfg, "harvey.yaml"), []byte("routes:\n  - name: box\n    provider: llamacpp\n    url: "+srv.URL()+"\n    model: qwen\n    enabled: true\n"), 0o600)
	reports, err := runModelCheck(t.Context(), checkOptions{models: []string{"@box"}, ollamaURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	modelcheck.WriteReport(&sb, reports)
	if len(reports[0].Tasks) != 9 || reports[0].Tasks[0].Rounds != 1 || reports[0].Counters || !strings.Contains(sb.String(), "the server does not report its prompt and generation timings") || !strings.Contains(sb.String(), "@box (qwen)") {
		t.Fatalf("report:\n%s", sb.String())
	}
}

// /model check in the REPL: the same check, the conversation untouched;
// the only model installed, when its check failed, is used but not
// silently.
func TestModelCheckInTheSession(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	f := fakeollama.CheckModel(t, fakeollama.CheckNever, "tinyllama:latest")
	env := newTestEnv(t, f, "tinyllama:latest")
	before := len(env.a.History)
	out, err := dispatch(t, env.a, "/model check")
	if err != nil || !strings.Contains(out, "verdict: does not call tools") || len(env.a.History) != before {
		t.Fatalf("%v\n%s\nhistory %d → %d", err, out, before, len(env.a.History))
	}
	var errb strings.Builder
	a, err := Start(t.Context(), Options{Dir: t.TempDir(), OllamaURL: f.URL(), Stdin: strings.NewReader(""), Stdout: &errb, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Workspace.Close()
	defer a.Close()
	if a.ModelName != "tinyllama:latest" || !strings.Contains(errb.String(), "tinyllama:latest is the only model installed; its last check") {
		t.Fatalf("model %q, stderr %q", a.ModelName, errb.String())
	}
}

// What a check covers: names as given, --all every installed model, and
// with neither the configured model or the only one installed.
func TestModelCheckTargets(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest")
	for _, c := range []struct {
		names   []string
		all     bool
		current string
		want    string
	}{
		{[]string{"qwen"}, false, "", "qwen"},
		{nil, true, "", "llama3.2:latest,mistral:latest"},
		{nil, false, "mistral", "mistral"},
		{nil, false, "", "error: several models are installed"},
	} {
		got, err := checkTargets(t.Context(), f.URL(), c.names, c.all, c.current)
		s := strings.Join(got, ",")
		if err != nil {
			s = "error: " + err.Error()
		}
		if !strings.HasPrefix(s, c.want) {
			t.Errorf("%v %v %q: %q", c.names, c.all, c.current, s)
		}
	}
}
