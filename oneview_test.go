package harvey

// One view for the model (issue 27), a feature that spans git.go,
// git_grep.go, internal/editmatch, search.go and internal/secrets: driven through the built
// binary by a scripted model, every probe at a redacted secret answers the
// same for the right guess and a wrong one, and what the model reads never
// holds the secret.

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

func TestEndToEndNoOracleOnSecrets(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	_, dir := oneViewRepo(t)
	right, wrong := oneViewToken[:12], oneViewToken[:11]+"X"
	probes := func(g string) []fakeollama.Call {
		return []fakeollama.Call{
			{Name: "git_command", Args: map[string]any{"subcommand": "log", "args": []any{"-G", g}}},
			{Name: "git_command", Args: map[string]any{"subcommand": "log", "args": []any{"-S" + g, "--oneline"}}},
			{Name: "git_command", Args: map[string]any{"subcommand": "log", "args": []any{"--grep", g, "--oneline"}}},
			{Name: "git_command", Args: map[string]any{"subcommand": "log", "args": []any{"-F", "--invert-grep", "--grep=" + g, "--oneline"}}},
			{Name: "git_command", Args: map[string]any{"subcommand": "blame", "args": []any{"-L", "/" + "pgv4lue" + g[len(g)-1:] + "/,+1", "app.yaml"}}},
			{Name: "edit_file", Args: map[string]any{"path": "local.env.sh", "old_text": "DB_PASSWORD=hunter2" + g[len(g)-1:], "new_text": "DB_PASSWORD=hunter2" + g[len(g)-1:]}},
			{Name: "edit_file", Args: map[string]any{"path": "app.yaml", "old_text": "pgv4luen3w"[:9] + map[bool]string{true: "w", false: "x"}[g == right], "new_text": "x"}},
			{Name: "search_files", Args: map[string]any{"pattern": "hunter2hunter" + map[bool]string{true: "2", false: "3"}[g == right] + "|REDACTED"}},
			{Name: "search_files", Args: map[string]any{"pattern": regexp.QuoteMeta(g)}},
			{Name: "read_file", Args: map[string]any{"path": "app.properties"}},
			{Name: "git_command", Args: map[string]any{"subcommand": "show", "args": []any{"annotated-env"}}},
		}
	}
	run := func(g string) []string {
		f := fakeollama.New(t, "llama3.2:latest")
		var replies []fakeollama.Reply
		calls := probes(g)
		for i := range calls {
			calls[i].ID = fmt.Sprintf("p%d", i)
		}
		for i := 0; i < len(calls); i += 3 { // three calls a reply: under the round limit
			replies = append(replies, fakeollama.ToolReply("llama3.2", calls[i:min(i+3, len(calls))]...))
		}
		f.Script(append(replies, fakeollama.TextReply("llama3.2", "done"))...)
		if _, errOut, code := e2e.Run(t, bin, dir, "", "-p", "probe", "--yes", "--model", "llama3.2", "--ollama", f.URL()); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		res := fakeollama.ToolResults(f.ChatRequests())
		var out []string
		for i := range calls {
			r := res[fmt.Sprintf("p%d", i)]
			_, body, _ := strings.Cut(r, "\n") // the header echoes the model's own arguments
			for _, v := range oneViewValues {
				if strings.Contains(body, v) {
					t.Fatalf("probe %d shows %q: %s", i, v, r)
				}
			}
			// The echo of the model's own arguments differs by design.
			r = strings.NewReplacer(g, "GUESS", "hunter22", "hunter2G", "hunter23", "hunter2G", "hunter2hunter2", "H", "hunter2hunter3", "H",
				"pgv4luen3w", "PG", "pgv4luen3x", "PG", "pgv4lue"+g[len(g)-1:], "PGV").Replace(r)
			out = append(out, regexp.MustCompile(`bytes=\d+`).ReplaceAllString(r, "bytes=N"))
		}
		return out
	}
	a, b := run(right), run(wrong)
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("probe %d: the right and the wrong guess answer differently:\n%s\n---\n%s", i, a[i], b[i])
		}
	}
	if !strings.Contains(a[9], "spring.datasource.password=[REDACTED") {
		t.Errorf("read_file: %s", a[9])
	}
}
