// Feature: harvey model check — the run (modelcheck.go), the battery
// (modelcheck_tasks.go) and the report and saved verdicts
// (modelcheck_report.go), against fake servers with scripted models.
package harvey

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/fakeopenai"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// checkModelStyle is how a scripted model answers the battery.
type checkModelStyle int

const (
	styleNative    checkModelStyle = iota // (a) calls in the protocol's field
	styleText                             // (b) prints its calls as JSON text (llama3.2 without tool support)
	styleNever                            // (c) never calls a tool
	styleWrongType                        // (d) calls natively, with arguments of the wrong type
	styleSlow                             // (e) calls natively, slowly (its counters say 2 tokens/s)
	styleHostile                          // (f) calls natively what the task asks, and more: a command and a write of its own
)

// The counters a slow model's done line reports: 20 tokens in 10 s.
const slowEvalCount, slowEvalNS = 20, int64(10e9)

// scriptedCheckModel answers like a model of that style would: it reads
// the task from the last user message, the way a model does, and calls
// what the task asks for.
func scriptedCheckModel(style checkModelStyle) func(req map[string]any) fakeollama.Reply {
	return func(req map[string]any) fakeollama.Reply {
		model, _ := req["model"].(string)
		msgs := fakeollama.MessagesOf(req)
		last := msgs[len(msgs)-1]
		content, _ := last["content"].(string)
		done := func(lines ...string) fakeollama.Reply {
			d := fakeollama.DoneLine(model)
			if style == styleSlow {
				var m map[string]any
				json.Unmarshal([]byte(d), &m)
				m["eval_count"], m["eval_duration"] = slowEvalCount, slowEvalNS
				b, _ := json.Marshal(m)
				d = string(b)
			}
			rep := fakeollama.Reply{Lines: append(lines, d)}
			if style == styleSlow {
				rep.First = 150 * time.Millisecond
			}
			return rep
		}
		text := func(s string) fakeollama.Reply { return done(fakeollama.ContentLine(model, s)) }
		if last["role"] == "tool" || strings.HasPrefix(content, "[tool_result") || strings.HasPrefix(content, "Harvey did not run") {
			return text("Done.")
		}
		type call struct {
			name string
			args map[string]any
		}
		var calls []call
		switch {
		case strings.Contains(content, "capital of France"):
			return text("Paris.")
		case strings.Contains(content, "what a call to the read_file tool"):
			return text("It would be a JSON object such as `{\"name\": \"read_file\", \"arguments\": {\"path\": \"main.go\"}}`, sent in the tool-call field.")
		case strings.Contains(content, "notes.txt"):
			calls = []call{{"read_file", map[string]any{"path": "notes.txt"}}}
		case strings.Contains(content, "computeTotal"):
			calls = []call{{"search_files", map[string]any{"pattern": "func computeTotal"}}}
		case strings.Contains(content, "docs directory"):
			calls = []call{{"list_files", map[string]any{"path": "docs"}}}
		case strings.Contains(content, "config.ini"):
			calls = []call{{"edit_file", map[string]any{"path": "config.ini", "old_text": "port = 8080", "new_text": "port = 9090"}}}
		case strings.Contains(content, "shell command"):
			cmd := regexp.MustCompile("`([^`]+)`").FindStringSubmatch(content)[1]
			calls = []call{{"run_command", map[string]any{"command": cmd}}}
		case strings.Contains(content, "a.txt and b.txt"):
			calls = []call{{"read_file", map[string]any{"path": "a.txt"}}, {"read_file", map[string]any{"path": "b.txt"}}}
		case strings.Contains(content, "lines 4 to 6"):
			calls = []call{{"read_file", map[string]any{"path": "data.txt", "offset": 4, "limit": 3}}}
		default:
			return text("I am not sure what you mean.")
		}
		switch style {
		case styleHostile:
			if len(calls) > 0 {
				calls = append(calls, call{"run_command", map[string]any{"command": "echo hostile > pwned.txt"}},
					call{"write_file", map[string]any{"path": "pwned2.txt", "content": "x"}})
			}
		case styleNever:
			return text("I can't access files or run commands, but you can do it yourself.")
		case styleWrongType:
			for i, c := range calls {
				if c.name == "read_file" && c.args["offset"] != nil {
					// Numbers as strings: coercion brings these back.
					calls[i].args = map[string]any{"path": "data.txt", "offset": "4", "limit": "3"}
					continue
				}
				for k, v := range c.args {
					if s, ok := v.(string); ok {
						c.args[k] = []any{s} // a list where a string is wanted
					}
				}
			}
		case styleText:
			var lines []string
			for _, c := range calls {
				lines = append(lines, mustJSON(map[string]any{"name": c.name, "parameters": c.args}))
			}
			return text(strings.Join(lines, "\n"))
		}
		var lines []string
		for i, c := range calls {
			lines = append(lines, fakeollama.CallLine(model, fmt.Sprintf("call_%d", i), c.name, c.args))
		}
		return done(lines...)
	}
}

// One fake Ollama per model (a scripted model decides by its style).
func checkFake(t *testing.T, style checkModelStyle, model string) *fakeollama.Server {
	f := fakeollama.New(t, model)
	if style == styleText || style == styleNever {
		f.Caps[model] = []string{"completion"} // no tool support: prose mode
	}
	f.Respond = scriptedCheckModel(style)
	return f
}

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
		style   checkModelStyle
		model   string
		grade   string
		verdict string
		how     string
	}{
		{styleNative, "llama3.2:latest", modelcheck.GradeGood, "good for everyday use", "native"},
		{styleText, "llama3.2:1b", modelcheck.GradeGood, "good for everyday use", "prose: JSON"},
		{styleNever, "tinyllama:latest", modelcheck.GradeProse, "does not call tools", "none"},
		{styleWrongType, "smollm2:latest", modelcheck.GradeUnreliable, "unreliable: 3 of 9 tasks passed", "native"},
		{styleSlow, "mistral:latest", modelcheck.GradeGood, "slow on this machine (2.0 tokens/s", "native"},
	} {
		t.Run(c.model, func(t *testing.T) {
			f := checkFake(t, c.style, c.model)
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
			if c.style == styleSlow {
				wantGen = float64(slowEvalCount) / (float64(slowEvalNS) / 1e9)
			}
			if !r.Counters || !near(r.PromptTokensPerSec, promptRate) || !near(r.GenTokensPerSec, wantGen) {
				t.Fatalf("prompt %.2f tok/s (want %.2f), generation %.2f (want %.2f)", r.PromptTokensPerSec, promptRate, r.GenTokensPerSec, wantGen)
			}
			if c.style == styleSlow && r.FirstTokenSeconds < 0.15 || r.FirstTokenSeconds <= 0 {
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
			assertNoCheckWorkspace(t, tmp)
		})
	}
}

func near(a, b float64) bool { return a > b*0.999 && a < b*1.001 }

func mustOllamaClient(t *testing.T, url string) *OllamaClient {
	c, err := newOllamaClient(url, "", 0, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func assertNoCheckWorkspace(t *testing.T, tmp string) {
	t.Helper()
	// Nothing of Harvey's: no throw-away workspace, and none of the
	// sandbox's temporary directories either (issue 55).
	left, _ := filepath.Glob(filepath.Join(tmp, "harvey-*"))
	if len(left) > 0 {
		t.Fatalf("left in the temporary directory: %v", left)
	}
}

// Per task, what happened decides: the native model passes each task; the
// wrong-type model passes the question, the syntax question and the
// numeric task (coercion brings "4" back), and fails the rest with the
// error its calls got.
func TestModelCheckTableRows(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	f := checkFake(t, styleWrongType, "smollm2:latest")
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
	never, native := scriptedCheckModel(styleNever), scriptedCheckModel(styleNative)
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

// The command as a user runs it: the table on stdout, --json, and Ctrl-C
// in the middle of a slow model removes the throw-away workspace.
func TestModelCheckCommandEndToEnd(t *testing.T) {
	bin := e2e.Build(t)
	f := checkFake(t, styleNative, "llama3.2:latest")
	tmp, data := t.TempDir(), t.TempDir()
	env := []string{"TMPDIR=" + tmp, "XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + t.TempDir()}
	out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", env, "model", "check", "--ollama", f.URL())
	if code != 0 || !strings.Contains(out, "verdict: good for everyday use") || !strings.Contains(out, "read a named file") || !strings.Contains(errOut, "checking llama3.2:latest") {
		t.Fatalf("code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, _, code = e2e.RunEnv(t, bin, t.TempDir(), "", env, "model", "check", "--json", "--ollama", f.URL(), "llama3.2")
	var reports []modelcheck.Report
	if code != 0 || json.Unmarshal([]byte(out), &reports) != nil || len(reports) != 1 || reports[0].Grade != modelcheck.GradeGood {
		t.Fatalf("--json: %d %s", code, out)
	}
	assertNoCheckWorkspace(t, tmp)

	// Ctrl-C while the model is thinking.
	slow := fakeollama.New(t, "llama3.2:latest")
	slow.Respond = func(req map[string]any) fakeollama.Reply {
		return fakeollama.Reply{Lines: []string{fakeollama.ContentLine("llama3.2:latest", "thinking")}, Stall: time.Minute}
	}
	cmd := exec.Command(bin, "model", "check", "--ollama", slow.URL())
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST="), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "the check's first request", func() bool {
		left, _ := filepath.Glob(filepath.Join(tmp, "harvey-check-*"))
		return len(left) == 1 && len(slow.ChatRequests()) > 0
	})
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "model check stopped") {
		t.Fatalf("after Ctrl-C: %v\n%s", err, stderr.String())
	}
	assertNoCheckWorkspace(t, tmp)
}

// /model check in the REPL: the same check, the conversation untouched;
// the only model installed, when its check failed, is used but not
// silently.
func TestModelCheckInTheSession(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	f := checkFake(t, styleNever, "tinyllama:latest")
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

// A hostile model under check (issue 39): the check lets run only the call
// each task asks for (tool and arguments), refuses and counts the rest,
// runs commands with no caches and no network, and leaves no cache layer
// behind — through the built binary.
func TestModelCheckRunsOnlyWhatEachTaskAsks(t *testing.T) {
	bin := e2e.Build(t)
	f := checkFake(t, styleHostile, "llama3.2:latest")
	tmp, data := t.TempDir(), t.TempDir()
	env := []string{"TMPDIR=" + tmp, "XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + t.TempDir()}
	out, errOut, code := e2e.RunEnv(t, bin, t.TempDir(), "", env, "model", "check", "--json", "--ollama", f.URL(), "llama3.2")
	var reports []modelcheck.Report
	if code != 0 || json.Unmarshal([]byte(out), &reports) != nil || len(reports) != 1 {
		t.Fatalf("code %d\n%s\n%s", code, out, errOut)
	}
	refused := 0
	for _, task := range reports[0].Tasks {
		refused += task.Refused
		if task.ID == "edit" || task.ID == "run" {
			if !task.Passed || task.Refused != 2 {
				t.Errorf("%s: the expected call must run and the two others be refused: %+v", task.ID, task)
			}
		}
	}
	if refused == 0 {
		t.Fatalf("nothing refused: %s", out)
	}
	ran, asked := 0, 0
	for _, req := range f.ChatRequests() {
		for id, r := range fakeollama.ToolResults([]map[string]any{req}) {
			_ = id
			if strings.Contains(r, "hostile") || strings.Contains(r, "pwned") {
				asked++
				if !strings.Contains(r, "the model check runs only the call its task asks for") {
					ran++
				}
			}
		}
	}
	if asked == 0 || ran > 0 {
		t.Fatalf("hostile calls: %d answered, %d not refused", asked, ran)
	}
	if layers, _ := filepath.Glob(filepath.Join(data, "harvey", "caches", "*")); len(layers) > 0 {
		t.Fatalf("cache layers left behind: %v", layers)
	}
	assertNoCheckWorkspace(t, tmp)
}
