package harvey

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/refusal"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// scriptedUI answers approval questions from a list and records what was
// asked (the request and the decision), as the terminal renderer would be.
type scriptedUI struct {
	answers []answer
	asked   []approvalRequest
	kinds   []decision
}

func (s *scriptedUI) ask(_ context.Context, r approvalRequest, d decision) (answer, error) {
	s.asked, s.kinds = append(s.asked, r), append(s.kinds, d)
	if len(s.answers) == 0 {
		return answer{}, errors.New("nothing scripted")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	if d != askYNA {
		a.always = false // only y/n/a questions take "always"
	}
	return a, nil
}

// The one policy table, for every kind of requester: what --yes answers,
// what "always" answers (and for whom), what is refused headless (and
// counted), and that a "no" passes the user's reason to the model.
func TestApprovalPolicyTable(t *testing.T) {
	yes, always, no := answer{yes: true}, answer{yes: true, always: true}, answer{reason: "use tabs"}
	for _, c := range []struct {
		name     string
		r        approvalRequest
		headless decision // decided with nobody at the terminal
		asked    decision // decided at the terminal
		yesFlag  bool     // --yes answers it
		always   bool     // an "always" answers the next one
		counted  bool     // a headless refusal is counted (exit status 3)
	}{
		{"a model's write_file", approvalRequest{tool: "write_file", who: byModel, action: "write a.go"}, refused, askYNA, true, true, true},
		{"an API tool (RegisterTool)", approvalRequest{tool: "deploy", who: byModel, action: "run deploy"}, refused, askYNA, true, true, true},
		{"an MCP tool", approvalRequest{tool: "fs__write", who: byModel, action: "call MCP tool fs__write"}, refused, askYNA, true, true, true},
		{"the user's /apply", approvalRequest{tool: "/apply", who: byUser, action: "write 2 files shown above"}, refused, askYNA, true, true, true},
		{"the sandbox's rerun", approvalRequest{tool: "sandbox", who: bySandbox, action: "npm install", question: "Type yes"}, refused, askYes, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			interactive := false
			ui := &scriptedUI{}
			p := newApprovals(func() bool { return interactive }, ui)
			if d := p.decide(c.r); d != c.headless {
				t.Fatalf("headless: %v", d)
			}
			err := p.approve(t.Context(), c.r)
			if !errors.Is(err, refusal.ErrDenied) || (p.refusedN == 1) != c.counted || len(ui.asked) != 0 {
				t.Fatalf("headless: %v, counted %d, asked %d", err, p.refusedN, len(ui.asked))
			}
			interactive = true
			if d := p.decide(c.r); d != c.asked {
				t.Fatalf("at the terminal: %v", d)
			}
			// A "no" with words: the model gets them.
			ui.answers = []answer{no}
			if err := p.approve(t.Context(), c.r); !errors.Is(err, refusal.ErrDenied) || !strings.Contains(err.Error(), `saying: "use tabs"`) {
				t.Fatalf("no: %v", err)
			}
			ui.answers = []answer{yes}
			if err := p.approve(t.Context(), c.r); err != nil {
				t.Fatal(err)
			}
			// "always": answers the next one only where the table says so,
			// and only for the same tool and requester.
			ui.answers = []answer{always, yes, yes}
			p.approve(t.Context(), c.r)
			before := len(ui.asked)
			p.approve(t.Context(), c.r)
			if answered := len(ui.asked) == before; answered != c.always {
				t.Fatalf("always answered the next: %v", answered)
			}
			other := c.r
			other.who = (c.r.who + 1) % 3
			if other.who != bySandbox && p.decide(other) == allow {
				t.Fatalf("an always for %v answered for %v", c.r.who, other.who)
			}
			// --yes
			q := newApprovals(func() bool { return true }, &scriptedUI{})
			q.auto = true
			if (q.decide(c.r) == allow) != c.yesFlag {
				t.Fatalf("--yes: %v", q.decide(c.r))
			}
		})
	}
}

// The paths that ask go through the one service: a registered API tool
// and /apply reach the same renderer with who is asking.
func TestApprovalPathsUseTheService(t *testing.T) {
	env := newTestEnv(t, nil, "")
	env.a.approvals.auto, env.a.Interactive = false, true
	ui := &scriptedUI{answers: []answer{{reason: "not now"}, {reason: "no"}}}
	env.a.approvals.ui = ui
	env.a.Tools.RegisterTool("deploy", "Deploy.", map[string]any{"type": "object", "properties": map[string]any{}}, func(context.Context, map[string]any) (string, error) {
		return "deployed", nil
	})
	ex := &ToolExecutor{registry: env.a.Tools, maxIterations: 10, maxOutputBytes: 4096, host: newTurnHost(env.a)}
	msgs, err := ex.ExecuteToolCalls(t.Context(), []anyllm.ToolCall{{ID: "call_1", Type: "function", Function: fc("deploy", "{}")}})
	if err != nil || !strings.Contains(msgs[0].Content, `saying: \"not now\"`) && !strings.Contains(msgs[0].Content, `saying: "not now"`) {
		t.Fatalf("%v %q", err, msgs[0].Content)
	}
	env.a.AddMessage(llm.RoleAssistant, "```text n.txt\nx\n```\n")
	dispatch(t, env.a, "/apply")
	if len(ui.asked) != 2 || ui.asked[0].who != byModel || ui.asked[0].tool != "deploy" || ui.asked[1].who != byUser || ui.asked[1].tool != "/apply" {
		t.Fatalf("asked %+v", ui.asked)
	}
}
