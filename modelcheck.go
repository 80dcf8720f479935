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
	"strings"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/modelcheck"
	"github.com/harvey-agent/harvey/internal/ollama"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// checkTaskTimeout bounds one task (a Pi answers a turn in tens of
// seconds; a model stuck in a loop is stopped by the round limit first).
var checkTaskTimeout = 4 * time.Minute

// checkOptions is what to check and where.
type checkOptions struct {
	models    []string // "" entries are not allowed; "@NAME" is a route
	ollamaURL string
	progress  io.Writer // a line per task as it finishes (nil: quiet)
}

// runModelCheck checks each model in its own throw-away workspace.
func runModelCheck(ctx context.Context, o checkOptions) ([]modelcheck.Report, error) {
	var reports []modelcheck.Report
	for _, m := range o.models {
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
		r := checkModel(ctx, m, o)
		r.Judge()
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
		if r.Error == "" {
			modelcheck.Save(r)
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// checkModel runs the battery against one model.
func checkModel(ctx context.Context, name string, o checkOptions) modelcheck.Report {
	r := modelcheck.Report{Model: name, Server: "ollama", CheckedAt: time.Now().UTC()}
	dir, err := os.MkdirTemp("", "harvey-check-*")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	defer removeCacheLayers(dir)
	route, isRoute := strings.CutPrefix(name, "@")
	model := name
	if isRoute {
		model = ""
	} else {
		route = ""
	}
	var sink strings.Builder
	// No --yes: each task lets run only the call it asks for (tool and
	// arguments); commands get no caches and no network.
	a, err := Start(ctx, Options{Dir: dir, Model: model, OllamaURL: o.ollamaURL, NoMCP: true,
		Stdin: strings.NewReader(""), Stdout: &sink, Stderr: &sink})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	a.gate.bare = true
	defer a.Workspace.Close()
	defer a.Close()
	if !identify(ctx, a, &r, route, isRoute) {
		return r
	}
	token := randomToken()
	var rt modelcheck.Rates
	for _, task := range modelcheck.Battery(token) {
		if ctx.Err() != nil {
			break
		}
		a.approvals.offTask = nil
		a.approvals.expect = func(req approvalRequest) bool { return task.Expects != nil && task.Expects(dir, effectOf(req)) }
		tr, elapsed, terr := runCheckTask(ctx, a, dir, task, route)
		if tr == nil {
			r.Error = termtext.FirstLine(terr.Error())
			r.Counters = rt.Counters()
			return r
		}
		if r.Layout == "" {
			r.Layout, r.ContextWindow, r.ToolMode = tr.layout, tr.window, tr.mode
			if tr.mode == string(ModeProse) {
				r.Layout = "tools described in the system prompt"
			}
		}
		pass, note := task.Check(dir, tr.Trace)
		if terr != nil && ctx.Err() == nil {
			pass, note = false, termtext.FirstLine(terr.Error())
		}
		row := modelcheck.TaskReport{ID: task.ID, Title: task.Title, Passed: pass, How: howCalled(tr), Rounds: len(tr.Rounds), Seconds: elapsed.Seconds(), Note: note, Refused: len(a.approvals.offTask)}
		if row.Refused > 0 {
			row.Note = strings.TrimPrefix(row.Note+"; ", "; ") + fmt.Sprintf("refused %s the task did not ask for (%s)", termtext.Plural(row.Refused, "call"), modelcheck.TruncateRunes(strings.Join(a.approvals.offTask, "; "), 120))
		}
		r.Tasks = append(r.Tasks, row)
		rt.Add(tr.Trace)
		if o.progress != nil {
			fmt.Fprintf(o.progress, "  %-34s %s\n", r.Model+" · "+task.Title, modelcheck.PassWord(pass))
		}
	}
	rt.Fill(&r)
	return r
}

// identify names what answers the check in r: the route's server and
// model, or the model connected and its Ollama version. False: nothing
// answers (r.Error says why).
func identify(ctx context.Context, a *Agent, r *modelcheck.Report, route string, isRoute bool) bool {
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
		r.Error = termtext.FirstLine(fmt.Sprint(cmpErr(a.connectErr, a.errNoBackend())))
		return false
	}
	r.Model = a.ModelName
	if oc, ok := a.Client.(*ollama.Client); ok {
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r.OllamaVersion, _ = oc.Reachable(vctx)
		cancel()
	}
	return true
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// checkTrace is a task's trace with what the turn chose.
type checkTrace struct {
	*modelcheck.Trace
	layout, mode string
	window       int
}

// runCheckTask writes the task's files and runs its prompt as a fresh
// conversation. A nil trace means the turn could not start at all.
func runCheckTask(ctx context.Context, a *Agent, dir string, task modelcheck.Task, route string) (*checkTrace, time.Duration, error) {
	for p, content := range task.Files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, 0, err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return nil, 0, err
		}
	}
	a.ClearHistory()
	prompt := task.Prompt
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
	t.trace = &modelcheck.Trace{}
	start := time.Now()
	err = a.runTurn(tctx, t, p)
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s", checkTaskTimeout)
	}
	return &checkTrace{Trace: t.trace, layout: t.layout.String(), mode: string(t.mode), window: t.window}, time.Since(start), err
}

// howCalled is how the task's calls came: the protocol's field, printed
// (and in which format), or none.
func howCalled(tr *checkTrace) string {
	var hows []string
	for _, r := range tr.Rounds {
		if r.How != "" && !slices.Contains(hows, r.How) {
			hows = append(hows, r.How)
		}
	}
	if len(hows) == 0 {
		return "none"
	}
	return strings.Join(hows, ", ")
}

// effectOf is an approval request as a task's expectation reads it.
func effectOf(r approvalRequest) modelcheck.Effect {
	e := modelcheck.Effect{Tool: r.tool, Action: r.action, ByUser: r.who == byUser}
	if r.change != nil {
		e.Change, e.Target = true, r.change.Target
	}
	return e
}

func randomToken() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
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
	ucf, _, _ := configfile.LoadUser()
	url = resolveOllamaURL(url, ucf.OllamaURL)
	names, err := checkTargets(ctx, url, names, all, ucf.Model)
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "checking %s: %d short tasks each, in a throw-away workspace (Ctrl-C stops)\n", strings.Join(names, ", "), len(modelcheck.Battery("")))
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
		modelcheck.WriteReport(stdout, reports)
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
	fmt.Fprintf(a.Err, "checking %s: %d short tasks each, in a throw-away workspace (Ctrl-C stops)\n", strings.Join(names, ", "), len(modelcheck.Battery("")))
	reports, err := runModelCheck(ctx, checkOptions{models: names, ollamaURL: a.OllamaURL, progress: a.Err})
	if err != nil {
		return fmt.Errorf("model check stopped: %v", err)
	}
	modelcheck.WriteReport(out, reports)
	return nil
}

// removeCacheLayers removes the private cache layers Harvey kept for a
// workspace (a throw-away one's would pile up, one per check).
func removeCacheLayers(workspace string) {
	if data := datadir.Path(); data != "" {
		os.RemoveAll(filepath.Join(data, "caches", datadir.Key(workspace)))
	}
}
