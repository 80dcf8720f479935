package mcpform

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// person answers a form's questions in turn and keeps what was said.
type person struct {
	answers []string
	asked   []string
	said    []string
}

func (p *person) Say(_ termtext.Tone, line string) { p.said = append(p.said, line) }
func (p *person) Ask(q string) (string, error) {
	p.asked = append(p.asked, q)
	if len(p.answers) == 0 {
		return "", errors.New("Ctrl-C")
	}
	a := p.answers[0]
	p.answers = p.answers[1:]
	return a, nil
}

const schema = `{"type":"object","properties":{
 "zone":{"type":"string","oneOf":[{"const":"eu-1","title":"Europe"},{"const":"us-1","title":"America"}]},
 "count":{"type":"integer","minimum":1,"maximum":5},
 "tags":{"type":"array","items":{"enum":["a","b","c"]},"minItems":1},
 "note":{"type":"string"}},
 "required":["zone","count"]}`

// A form as a person answers it: in the server's order, a choice by its
// title, a number out of range asked again, a multi-select, an optional
// field left out with Enter.
func TestForm(t *testing.T) {
	var o Orders
	raw, _ := json.Marshal(map[string]any{"message": "Deploy?", "requestedSchema": json.RawMessage(schema)})
	o.note(raw)
	var sch map[string]any
	json.Unmarshal([]byte(schema), &sch)
	order := o.Of("Deploy?", sch)
	if strings.Join(order, ",") != "zone,count,tags,note" {
		t.Fatalf("order %v", order)
	}
	p := &person{answers: []string{"Europe", "9", "3", "1, c", ""}}
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "Deploy?", RequestedSchema: sch}}
	res, err := Answer(p, true, "deployer", req, order)
	if err != nil || res.Action != "accept" {
		t.Fatalf("%+v %v", res, err)
	}
	got, _ := json.Marshal(res.Content)
	if string(got) != `{"count":3,"tags":["a","c"],"zone":"eu-1"}` {
		t.Errorf("content %s", got)
	}
	if len(p.asked) != 5 || !strings.Contains(strings.Join(p.said, "\n"), "Europe") {
		t.Errorf("asked %q said %q", p.asked, p.said)
	}
}

// decline declines, Ctrl-C cancels, and a headless run declines at once
// with a line that says so.
func TestFormRefusals(t *testing.T) {
	var sch map[string]any
	json.Unmarshal([]byte(schema), &sch)
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "Deploy?", RequestedSchema: sch}}
	for answers, want := range map[string]string{"decline": "decline", "": "cancel"} {
		p := &person{}
		if answers != "" {
			p.answers = []string{answers}
		}
		if res, _ := Answer(p, true, "s", req, nil); res.Action != want {
			t.Errorf("%q: %s", answers, res.Action)
		}
	}
	p := &person{}
	if res, _ := Answer(p, false, "s", req, nil); res.Action != "decline" || len(p.asked) != 0 || !strings.Contains(strings.Join(p.said, ""), "headless") {
		t.Errorf("headless: %+v %q", res, p.said)
	}
}
