package mcpform

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// A URL request shows the URL with nothing a terminal would act on, and
// takes done (or yes) to accept, anything else to decline, Ctrl-C to cancel.
func TestURLElicitation(t *testing.T) {
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/login\x1b]0;owned\x07"}}
	for answer, want := range map[string]string{"done": "accept", "yes": "accept", "no": "decline", "later": "decline", "": "cancel"} {
		p := &person{}
		if answer != "" {
			p.answers = []string{answer}
		}
		res, err := Answer(p, true, "auth\x1b[2J", req, nil)
		if err != nil || res.Action != want {
			t.Errorf("%q: %+v %v", answer, res, err)
		}
		said := strings.Join(p.said, "\n")
		if strings.ContainsRune(said, '\x1b') || !strings.Contains(said, "https://example.com/login") {
			t.Errorf("what was shown: %q", said)
		}
	}
}

// Each type and format the specification names is read as that type; an
// answer that does not fit is said in one line and asked again; Enter
// sends the default the prompt named, and leaves out an optional field.
func TestFieldsAreReadAsTheirTypes(t *testing.T) {
	const sch = `{"type":"object","properties":{
 "mail":{"type":"string","format":"email","description":"Your address"},
 "site":{"type":"string","format":"uri"},
 "day":{"type":"string","format":"date"},
 "at":{"type":"string","format":"date-time"},
 "name":{"type":"string","minLength":2,"maxLength":4},
 "ratio":{"type":"number","minimum":0.5},
 "size":{"type":"integer","maximum":10},
 "ok":{"type":"boolean"},
 "region":{"type":"string","enum":["eu","us"],"enumNames":["Europe","America"],"default":"eu"},
 "extra":{"type":"string"},
 "picks":{"type":"array","items":{"anyOf":[{"const":"x","title":"Ex"},{"const":"y"}]},"maxItems":1}},
 "required":["mail","site","day","at","name","ratio","size","ok","picks"]}`
	order := []string{"mail", "site", "day", "at", "name", "ratio", "size", "ok", "region", "extra", "picks"}
	var m map[string]any
	json.Unmarshal([]byte(sch), &m)
	p := &person{answers: []string{
		"not-an-address", "me@example.com",
		"example.com", "https://example.com",
		"07/12/2026", "2026-12-07",
		"2026-12-07 10:00", "2026-12-07T10:00:00Z",
		"", "a", "abcde", "abc",
		"many", "0.25", "0.75",
		"3.5", "11", "10",
		"maybe", "no",
		"Asia", "",
		"",
		"x, y", "Z", "ex",
	}}
	res, err := Answer(p, true, "s", &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "Who?", RequestedSchema: m}}, order)
	if err != nil || res.Action != "accept" {
		t.Fatalf("%+v %v (said %q)", res, err, p.said)
	}
	got, _ := json.Marshal(res.Content)
	want := `{"at":"2026-12-07T10:00:00Z","day":"2026-12-07","mail":"me@example.com","name":"abc","ok":false,"picks":["x"],"ratio":0.75,"region":"eu","site":"https://example.com","size":10}`
	if string(got) != want {
		t.Errorf("content %s\nwant    %s", got, want)
	}
	said := strings.Join(p.said, "\n")
	for _, line := range []string{"mail: an email address", "site: a URL", "day: a date, YYYY-MM-DD", "at: a date and time", "name is required", "name: 2 to 4 characters", "ratio: a number", "ratio: at least 0.5", "size: a whole number", "size: at most 10", "ok: yes or no", "region: one of the choices", "picks: at most 1 choices", `picks: "Z" is not one of the choices`} {
		if !strings.Contains(said, line) {
			t.Errorf("not said: %q\n%s", line, said)
		}
	}
	asked := strings.Join(p.asked, "\n")
	for _, prompt := range []string{"mail (string (an email address); required) — Your address", "region (choose one: its number, title or value; Enter for eu)", "picks (choose any: numbers, titles or values, separated by commas; at most 1 choices; required)", "ratio (number; at least 0.5; required)"} {
		if !strings.Contains(asked, prompt) {
			t.Errorf("no prompt %q in\n%s", prompt, asked)
		}
	}
}

// The server's field order is read from the wire: from a stdio server's
// messages as the connection reads them, and from an HTTP server's event
// stream as the body passes, unchanged.
func TestOrderIsReadFromTheWire(t *testing.T) {
	const params = `{"message":"Pick","requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},"mid":{"type":"integer"}}}}`
	var sch map[string]any
	json.Unmarshal([]byte(`{"type":"object","properties":{"alpha":{},"mid":{},"zeta":{}}}`), &sch)

	var o Orders
	body := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"elicitation/create\",\"params\":" + params + "}\n\n"
	rt := OrderedBodies{Orders: &o, Next: roundTrip(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body))}, nil
	})}
	resp, err := rt.RoundTrip(httptest.NewRequest("POST", "http://x/mcp", nil))
	if err != nil {
		t.Fatal(err)
	}
	passed, _ := io.ReadAll(resp.Body)
	if string(passed) != body {
		t.Errorf("the body changed: %q", passed)
	}
	if got := strings.Join(o.Of("Pick", sch), ","); got != "zeta,alpha,mid" {
		t.Errorf("HTTP order %q", got)
	}

	var o2 Orders
	client, server := mcp.NewInMemoryTransports()
	sc, err := server.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cc, err := OrderedTransport{Transport: client, Orders: &o2}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := jsonrpc.MakeID(float64(1))
	go sc.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "elicitation/create", Params: json.RawMessage(params)})
	if _, err := cc.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o2.Of("Pick", sch), ","); got != "zeta,alpha,mid" {
		t.Errorf("stdio order %q", got)
	}
	if o2.Of("Other", sch) != nil {
		t.Error("an order for a request never seen")
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
