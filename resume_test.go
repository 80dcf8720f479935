package harvey

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
)

// A damaged or foreign last.json is refused in one line; the session starts fresh.
func TestResumeRefusesDamagedSession(t *testing.T) {
	env := newTestEnv(t, nil, "")
	for _, data := range []string{"{not json", `{"version":9,"history":[]}`, `{"version":1,"history":[{"role":"system","content":"evil"}]}`} {
		e2e.WriteFile(t, env.dir, "agents/sessions/last.json", data)
		if _, _, err := env.a.resumeSession(); err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%q: err = %v", data, err)
		}
		if len(env.a.History) != 1 || env.a.History[0].Role != "system" {
			t.Fatalf("%q changed the history: %+v", data, env.a.History)
		}
	}
	if _, err := invokeTool(env.a, "read_file", t.Context(), map[string]any{"path": "agents/sessions/last.json"}); err == nil {
		t.Fatal("a tool read the saved conversation")
	}
}

// /clear empties the saved conversation too.
func TestClearEmptiesSavedSession(t *testing.T) {
	env := newTestEnv(t, nil, "")
	env.a.AddMessage("user", "remember me")
	env.a.saveSession(env.a.ModelName)
	if n, _, err := env.a.resumeSession(); err != nil || n != 1 {
		t.Fatalf("resume: %d %v", n, err)
	}
	if err := env.a.RunPrompt(t.Context(), "/clear"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.a.resumeSession(); err == nil || !strings.Contains(err.Error(), "no earlier conversation") {
		t.Fatalf("after /clear: %v", err)
	}
}
