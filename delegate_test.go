package harvey

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// searchCalls is the search a model makes for "where is Retry defined and
// who calls it": a search, then six files read.
func searchCalls() []fakeollama.Reply {
	var reads []fakeollama.Call
	for i, n := range []int{123, 7, 42, 99, 150, 188} {
		reads = append(reads, fakeollama.Call{ID: fmt.Sprint("r", i), Name: "read_file", Args: map[string]any{"path": fmt.Sprintf("pkg/f%03d.go", n)}})
	}
	return []fakeollama.Reply{
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "s", Name: "search_files", Args: map[string]any{"pattern": "Retry"}}),
		fakeollama.ToolReply("llama3.2", reads...),
	}
}

// promptTokens estimates a request's prompt as the client does (a token
// per four bytes of what is sent).
func promptTokens(req map[string]any) int {
	b, _ := json.Marshal(req["messages"])
	return len(b) / 4
}

// Delegation spares the main conversation (issue 63): the same search of a
// 200-file repository done in the main conversation, then by a sub-agent.
// Delegated, the main conversation grows by the call and the answer only;
// the sub-agent is offered only the tools that change nothing, with its
// own short prompt, and its calls pass the gate and are audited.
func TestDelegatedSearchSparesTheMainConversation(t *testing.T) {
	growth := map[string]int{}
	for _, mode := range []string{"inline", "delegated"} {
		f := fakeollama.New(t, "llama3.2:latest")
		env := newTestEnv(t, f, "llama3.2")
		e2e.RetryFixture(t, env.dir)
		var script []fakeollama.Reply
		if mode == "delegated" {
			script = append(script, fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "d", Name: "delegate", Args: map[string]any{"task": "Where is Retry defined and who calls it?"}}))
			script = append(script, searchCalls()...)
			script = append(script, fakeollama.TextReply("llama3.2", e2e.RetryAnswer))
		} else {
			script = append(script, searchCalls()...)
		}
		script = append(script, fakeollama.TextReply("llama3.2", "Retry is in pkg/f123.go."))
		f.Script(script...)
		if err := env.a.RunPrompt(t.Context(), "Where is Retry defined and who calls it?"); err != nil {
			t.Fatal(err)
		}
		reqs := f.ChatRequests()
		growth[mode] = promptTokens(reqs[len(reqs)-1]) - promptTokens(reqs[0])
		if mode == "inline" {
			continue
		}
		sub := reqs[1]
		msgs := fakeollama.MessagesOf(sub)
		if msgs[0]["content"] != subAgentPreamble || len(msgs) != 2 {
			t.Errorf("the sub-agent's conversation starts with its own prompt and the task: %v", msgs)
		}
		names := fakeollama.ToolNamesOf(sub)
		for _, w := range []string{"read_file", "search_files", "list_files"} {
			if !slices.Contains(names, w) {
				t.Errorf("the sub-agent lacks %s: %v", w, names)
			}
		}
		for _, n := range []string{"write_file", "edit_file", "run_command", "delegate", "job_output", "task_wait"} {
			if slices.Contains(names, n) {
				t.Errorf("the sub-agent is offered %s: %v", n, names)
			}
		}
		final := fakeollama.MessagesOf(reqs[len(reqs)-1])
		res := fakeollama.ToolResults(reqs)["d"]
		if !strings.Contains(res, e2e.RetryAnswer) || strings.Contains(fmt.Sprint(final), "helper123_05") {
			t.Errorf("the main conversation got more than the answer: %q", res)
		}
		var log strings.Builder
		env.a.Audit.Print(&log, 50)
		if !strings.Contains(log.String(), "delegate") || strings.Count(log.String(), "read_file") < 6 {
			t.Errorf("the sub-agent's calls are not in the audit log:\n%s", log.String())
		}
	}
	t.Logf("the main conversation grew by %d prompt tokens with the search done in it, by %d with it delegated (%.1f×)",
		growth["inline"], growth["delegated"], float64(growth["inline"])/float64(max(1, growth["delegated"])))
	if growth["delegated"] > (len(e2e.RetryAnswer)+400)/4 || growth["inline"] < 8*growth["delegated"] {
		t.Errorf("delegating did not spare the main conversation: %d tokens inline, %d delegated", growth["inline"], growth["delegated"])
	}
}

// The sub-agent cannot write unless your own config says so: a write it
// asks for is an unknown tool and nothing is written; with delegate.tools
// naming write_file in your config, it asks as it would for the main
// model, and writes. A repository's agents/harvey.yaml cannot set it.
func TestDelegateWritesOnlyWhereYourConfigSays(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		f := fakeollama.New(t, "llama3.2:latest")
		env := newTestEnv(t, f, "llama3.2")
		if allowed {
			env.a.Config.Delegate.Tools = []string{"read_file", "write_file"}
		}
		var asked []string
		env.a.approvals.observe = func(r approvalRequest, _ bool, _ string) { asked = append(asked, r.tool) }
		f.Script(
			fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "d", Name: "delegate", Args: map[string]any{"task": "note it"}}),
			fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "note.txt", "content": "hi\n"}}),
			fakeollama.TextReply("llama3.2", "wrote it"),
			fakeollama.TextReply("llama3.2", "done"))
		if err := env.a.RunPrompt(t.Context(), "go"); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(env.dir, "note.txt"))
		res := fakeollama.ToolResults(f.ChatRequests())["w"]
		switch {
		case !allowed && (err == nil || !strings.Contains(res, "unknown tool")):
			t.Errorf("the sub-agent wrote with no config saying so: %q", res)
		case allowed && (err != nil || !slices.Contains(asked, "write_file")):
			t.Errorf("delegate.tools: [write_file]: written %v, asked %v: %q", err == nil, asked, res)
		}
	}

	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	e2e.WriteFile(t, dir, "agents/harvey.yaml", "delegate:\n  tools: [write_file, run_command]\n")
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	cf, err := configfile.Load(ws.Tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Delegate.Tools) != 0 {
		t.Errorf("a repository's config gave the sub-agent %v", cf.Delegate.Tools)
	}
}

// /delegate is yours: the answer is shown, and the next message to the
// model starts with it, once.
func TestDelegateCommandCarriesTheAnswer(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	e2e.RetryFixture(t, env.dir)
	script := append(searchCalls(), fakeollama.TextReply("llama3.2", e2e.RetryAnswer), fakeollama.TextReply("llama3.2", "ok"), fakeollama.TextReply("llama3.2", "ok"))
	f.Script(script...)
	if err := env.a.RunPrompt(t.Context(), "/delegate where is Retry defined?"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.out.String(), "pkg/f123.go:41") {
		t.Errorf("the answer was not shown: %q", env.out.String())
	}
	for i, prompt := range []string{"rename it", "and then?"} {
		if err := env.a.RunPrompt(t.Context(), prompt); err != nil {
			t.Fatal(err)
		}
		reqs := f.ChatRequests()
		m := fakeollama.MessagesOf(reqs[len(reqs)-1])
		last := m[len(m)-1]["content"].(string)
		if carried := strings.Contains(last, e2e.RetryAnswer); carried != (i == 0) || !strings.HasSuffix(last, prompt) {
			t.Errorf("message %d (carried: %v): %q", i+1, carried, last)
		}
	}
}

// delegate.route runs the sub-agent on a route — a bigger model on another
// machine — while the main conversation stays on the session's model.
func TestDelegateOnARoute(t *testing.T) {
	small := fakeollama.New(t, "llama3.2:latest")
	big := fakeollama.New(t, "qwen2.5:14b")
	env := newTestEnv(t, small, "llama3.2")
	env.a.Config.Routes = []config.Route{{Name: "big", Provider: "ollama", URL: big.URL(), Model: "qwen2.5:14b", Enabled: true}}
	env.a.Config.Delegate.Route = "big"
	e2e.RetryFixture(t, env.dir)
	small.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "d", Name: "delegate", Args: map[string]any{"task": "Where is Retry?"}}), fakeollama.TextReply("llama3.2", "It is in f123."))
	big.Script(fakeollama.ToolReply("qwen2.5:14b", fakeollama.Call{ID: "s", Name: "search_files", Args: map[string]any{"pattern": "func Retry"}}), fakeollama.TextReply("qwen2.5:14b", e2e.RetryAnswer))
	if err := env.a.RunPrompt(t.Context(), "where is Retry?"); err != nil {
		t.Fatal(err)
	}
	bigReqs, smallReqs := big.ChatRequests(), small.ChatRequests()
	if len(bigReqs) != 2 || len(smallReqs) != 2 || bigReqs[0]["model"] != "qwen2.5:14b" {
		t.Fatalf("%d requests to the route, %d to the session's model", len(bigReqs), len(smallReqs))
	}
	if !strings.Contains(fakeollama.ToolResults(bigReqs)["s"], "pkg/f123.go") || !strings.Contains(fakeollama.ToolResults(smallReqs)["d"], e2e.RetryAnswer) {
		t.Errorf("search %q, answer %q", fakeollama.ToolResults(bigReqs)["s"], fakeollama.ToolResults(smallReqs)["d"])
	}

	// A route that is not there is said, and nothing else runs.
	env.a.Config.Delegate.Route = "gone"
	if _, err := delegate(t.Context(), env.a, "anything"); err == nil || !strings.Contains(err.Error(), "delegate.route") {
		t.Errorf("a missing route: %v", err)
	}
}
