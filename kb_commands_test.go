// Feature: /kb through the agent (kb_commands.go over internal/knowledge),
// and the database out of every tool's reach (internal/wspath, search.go).
package harvey

import (
	"bytes"
	"strings"
	"testing"
)

// /kb through the agent, and the database out of every tool's reach.
func TestKBCommands(t *testing.T) {
	env := newTestEnv(t, nil, "")
	run := func(line string) (string, error) {
		var out bytes.Buffer
		err := env.a.Dispatch(t.Context(), line, &out)
		return out.String(), err
	}
	steps := []struct{ line, want, errWant string }{
		{"/kb", "0 projects, 0 observations, 0 concepts", ""},
		{"/kb observe something", "", "no active project"},
		{"/kb project add harvey Terminal agent for small models", "project #1 harvey added; it is the active project", ""},
		{"/kb observe decision: tools get short descriptions", "decision #1 recorded on harvey", ""},
		{"/kb observe Question why does mistral print calls as text?", "question #2 recorded", ""},
		{"/kb observe plain note with a: colon", "note #3 recorded", ""},
		{`/kb observe note: he said "use tabs",  not 'spaces'`, "note #4 recorded", ""},
		{"/kb search tabs", `he said "use tabs",  not 'spaces'`, ""},
		{"/kb observe idea: not a kind", "", `unknown kind "idea"`},
		{"/kb observe finding:", "", "needs text"},
		{"/kb concept add prompt-cache keep the prefix identical", "concept #1 prompt-cache added", ""},
		{"/kb concept link prompt-cache", "linked prompt-cache to project #1 harvey", ""},
		{"/kb concept link prompt-cache obs 1", "linked prompt-cache to observation #1", ""},
		{"/kb concept link nope", "", `no concept "nope"`},
		{"/kb concept list", "prompt-cache", ""},
		{"/kb project add harvey again", "", "already exists"},
		{"/kb project add pi", "project #2 pi added", ""},
		{"/kb project use 1", "active project: #1 harvey", ""},
		{"/kb project status pi paused", "project #2 pi is paused", ""},
		{"/kb project status pi finished", "", `unknown status "finished"`},
		{"/kb project list", "* #1 harvey", ""},
		{"/kb search mistral", "question: why does mistral print calls as text?", ""},
		{"/kb search", "", "search for what?"},
		{"/kb project show", "Concepts: prompt-cache", ""},
		{"/kb bogus", "", "unknown /kb subcommand"},
		{"/kb inject", "added project #1 harvey to the conversation (4 observations", ""},
		{"/help kb", "/kb observe [KIND:] TEXT", ""},
	}
	for _, s := range steps {
		out, err := run(s.line)
		if s.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), s.errWant) {
				t.Fatalf("%s: err = %v, want %q", s.line, err, s.errWant)
			}
			continue
		}
		if err != nil || !strings.Contains(out, s.want) {
			t.Fatalf("%s: out = %q err = %v, want %q", s.line, out, err, s.want)
		}
	}
	last := env.a.History[len(env.a.History)-1]
	if last.Role != "user" || !strings.HasPrefix(last.Content, "[context: knowledge base]\nProject #1 harvey (active): Terminal agent") ||
		!strings.Contains(last.Content, "decision: tools get short descriptions") {
		t.Fatalf("injected = %+v", last)
	}
	// No tool reaches the database.
	if _, err := invokeTool(env.a, "read_file", t.Context(), map[string]any{"path": "agents/knowledge.db"}); err == nil || !strings.Contains(err.Error(), "agents/") {
		t.Fatalf("read_file agents/knowledge.db: %v", err)
	}
	if _, err := invokeTool(env.a, "edit_file", t.Context(), editArgs("agents/knowledge.db", "x", "y")); err == nil {
		t.Fatal("edit_file reached the database")
	}
	if hits, _ := env.a.gate.searchChecked(t.Context(), "harvey", "."); strings.Contains(hits.Text, "knowledge") {
		t.Fatalf("search_files reached the database: %s", hits.Text)
	}
}
