package knowledge

import (
	"strings"
	"testing"
)

// /kb through Do, as the session runs it: a project added and active, an
// observation with its kind, a concept linked to the project and to the
// observation, search, status, show, a status change, and inject, whose
// summary reaches the conversation redacted.
func TestCommands(t *testing.T) {
	kb, _ := openTestKB(t)
	var injected []string
	inject := func(label, text string) { injected = append(injected, label+": "+text) }
	run := func(line string) string {
		t.Helper()
		args := strings.Fields(line)
		sub, rest := args[0], args[1:]
		_, text, _ := strings.Cut(line, " ")
		var out strings.Builder
		if err := Do(kb, sub, rest, strings.TrimSpace(text), &out, inject); err != nil {
			t.Fatalf("/kb %s: %v", line, err)
		}
		return out.String()
	}
	for line, want := range map[string]string{
		"status": "no active project",
	} {
		if got := run(line); !strings.Contains(got, want) {
			t.Errorf("/kb %s: %q", line, got)
		}
	}
	steps := [][2]string{
		{"project add harvey a terminal agent", "project #1 harvey added; it is the active project"},
		{"project add pi", "project #2 pi added"},
		{"project use harvey", "active project: #1 harvey"},
		{"observe decision: ship the sandbox first, token ghp_0123456789abcdefghijABCDEFGHIJ012345", "recorded"},
		{"concept add sandbox isolation of commands", "concept #1 sandbox added"},
		{"concept link sandbox", "linked sandbox"},
		{"concept link sandbox obs 1", "linked sandbox to observation #1"},
		{"concept list", "sandbox"},
		{"search sandbox", "ship the sandbox"},
		{"project list", "pi"},
		{"project show", "harvey"},
		{"project status pi paused", "paused"},
		{"status", "active project: #1 harvey"},
		{"inject", "added project #1 harvey to the conversation"},
	}
	for _, s := range steps {
		if got := run(s[0]); !strings.Contains(got, s[1]) {
			t.Errorf("/kb %s: %q, want %q", s[0], got, s[1])
		}
	}
	if len(injected) != 1 || !strings.HasPrefix(injected[0], "knowledge base: ") || strings.Contains(injected[0], "ghp_0123456789") {
		t.Errorf("injected %q", injected)
	}
	for _, line := range []string{"bogus", "project add", "project use", "concept add", "concept link", "concept link sandbox obs x", "project frob"} {
		args := strings.Fields(line)
		var out strings.Builder
		if err := Do(kb, args[0], args[1:], "", &out, inject); err == nil {
			t.Errorf("/kb %s: no error", line)
		}
	}
}
