package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// Durations as people write them; a negative or unreadable one is refused.
func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "90": 90 * time.Second, "90s": 90 * time.Second, "1m30s": 90 * time.Second} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"-1", "-5m", "soon"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if d, _ := ParseIdle("off"); d != 0 {
		t.Error("retry.idle: off")
	}
	if d, _ := ParseIdle(""); d != DefaultReplyIdle {
		t.Error("retry.idle default")
	}
}

// A typo is named with its line; values past a ceiling are brought back
// with a warning; unset values get their defaults.
func TestUnknownKeysAndClamp(t *testing.T) {
	src := "modle: x\ntools:\n  max_tool_calls_per_turn: 99\n  max_output_bytes: 999999999\nmodels:\n  m:\n    max_tool_calls_per_turn: 50\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	c := Default()
	if err := doc.Content[0].Decode(c); err != nil {
		t.Fatal(err)
	}
	w := strings.Join(append(UnknownKeys(doc.Content[0], reflect.TypeOf(Config{}), ""), c.Clamp()...), "\n")
	for _, want := range []string{`:1: unknown key "modle"`, "max_tool_calls_per_turn 99 is past the ceiling", "max_output_bytes", "models.m.max_tool_calls_per_turn 50"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings do not say %q:\n%s", want, w)
		}
	}
	if c.MaxToolCalls("m") != DefaultMaxToolCalls || c.MaxOutputBytes() != DefaultMaxOutputBytes || c.EffectiveNumCtx("m:latest") != DefaultNumCtx {
		t.Errorf("clamped: %d %d %d", c.MaxToolCalls("m"), c.MaxOutputBytes(), c.EffectiveNumCtx("m"))
	}
}

// A hook's command is a list or a shell line, and is written back as it
// was read; Check refuses what a hook may not be, a workspace's hook that
// asks for the user's powers first.
func TestHookConfig(t *testing.T) {
	var hs []HookConfig
	if err := yaml.Unmarshal([]byte("- event: pre_tool\n  match: run_command\n  command: ./check.sh \"$X\"\n- event: stop\n  command: [notify, done]\n"), &hs); err != nil {
		t.Fatal(err)
	}
	if strings.Join(hs[0].Command, " ") != `sh -c ./check.sh "$X"` || strings.Join(hs[1].Command, " ") != "notify done" {
		t.Fatalf("commands: %q %q", hs[0].Command, hs[1].Command)
	}
	if out, _ := yaml.Marshal(hs[0].Command); strings.TrimSpace(string(out)) != `./check.sh "$X"` {
		t.Errorf("written back: %s", out)
	}
	if hs[0].Check() != nil || hs[1].Check() != nil || !hs[0].BlocksOnError() || hs[1].BlocksOnError() || hs[0].TimeLimit() != DefaultHookTimeout {
		t.Error("valid hooks")
	}
	for _, h := range []HookConfig{
		{Event: "before", Command: HookArgv{"x"}},
		{Event: HookPre},
		{Event: HookStop, Match: "run_command", Command: HookArgv{"x"}},
		{Event: HookSessionStart, OnError: "block", Command: HookArgv{"x"}},
		{Event: HookPre, Match: "(", Command: HookArgv{"x"}},
		{Event: HookPre, Command: HookArgv{"x"}, Network: true, FromWorkspace: true},
		{Event: HookPre, Command: HookArgv{"x"}, Writable: []string{"~/."}, FromWorkspace: true},
	} {
		if h.Check() == nil {
			t.Errorf("accepted: %+v", h)
		}
	}
	if p := (HookConfig{Writable: []string{"~/."}}).Powers(); !strings.Contains(p, "will NOT run") {
		t.Errorf("powers: %s", p)
	}
}

// A workspace's server never has ${VAR} filled from the user's
// environment; the user's own server does, and its question says so.
func TestMCPServerExpanded(t *testing.T) {
	t.Setenv("HARVEY_TEST_TOKEN", "s3cret")
	own := MCPServer{URL: "https://mcp.example/", Headers: map[string]string{"Authorization": "Bearer ${HARVEY_TEST_TOKEN}"}}
	if got := own.Expanded(own.Headers)["Authorization"]; got != "Bearer s3cret" {
		t.Errorf("your own server: %q", got)
	}
	m := map[string]MCPServer{"x": own}
	MarkWorkspace(m)
	ws := m["x"]
	if got := ws.Expanded(ws.Headers)["Authorization"]; got != "Bearer ${HARVEY_TEST_TOKEN}" {
		t.Errorf("a workspace's server: %q", got)
	}
	if !(MCPServer{}).OfferedTo("any") || (MCPServer{Models: []string{"llama3.2"}}).OfferedTo("mistral") || !(MCPServer{Models: []string{"llama3.2"}}).OfferedTo("llama3.2:latest") {
		t.Error("offeredTo")
	}
}
