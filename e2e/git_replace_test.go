package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// Nothing hidden from review (issue 54): a command that stages a changed
// Makefile, writes a copy of HEAD whose tree holds it and replaces HEAD
// with it (loose, or packed into packed-refs), or grafts history away,
// leaves the user's git status and git diff blind to the change. After the
// check the user's git shows it again, and the result says so, in each
// kernel mode that runs commands.
func TestEndToEndReplaceRefsUndone(t *testing.T) {
	for _, kernel := range Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			f := newModeFixture(t)
			WriteFile(t, f.dir, "Makefile", "all:\n\t@echo ours\n")
			f.git(t, "add Makefile")
			f.git(t, "commit -qm makefile")
			hide := `printf 'all:\n\t@echo planted\n' > Makefile && git add Makefile && c=$(git commit-tree $(git write-tree) -p HEAD^ -m makefile) && git replace HEAD $c`
			fo := fakeollama.New(t, "llama3.2:latest")
			fo.Script(fakeollama.ToolReply("llama3.2",
				fakeollama.Call{ID: "loose", Name: "run_command", Args: map[string]any{"command": hide + " && git status --short | wc -l"}},
			), fakeollama.ToolReply("llama3.2",
				fakeollama.Call{ID: "packed", Name: "run_command", Args: map[string]any{"command": hide + " && git pack-refs --all && ls .git/refs/replace | wc -l"}},
			), fakeollama.ToolReply("llama3.2",
				fakeollama.Call{ID: "grafts", Name: "run_command", Args: map[string]any{"command": "git rev-parse HEAD > .git/info/grafts; echo grafted"}},
			), fakeollama.TextReply("llama3.2", "Done."))
			out, errOut, code := RunKernel(t, kernel, bin(t), f.dir, "", f.env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
			if code != 0 || !strings.Contains(out, "Done.") {
				t.Fatalf("exit %d: %s\n%s", code, out, errOut)
			}
			res := fakeollama.ToolResults(fo.ChatRequests())
			for _, id := range []string{"loose", "packed"} {
				if r := res[id]; !strings.Contains(r, "replace refs") {
					t.Errorf("%s: the result does not say the replace ref was undone: %s", id, r)
				}
			}
			if !strings.Contains(errOut, "replace refs") {
				t.Errorf("the user's terminal was not told:\n%s", errOut)
			}
			if r := res["grafts"]; !strings.Contains(r, "grafts") {
				t.Errorf("grafts: %s", r)
			}
			if st := f.git(t, "status --short"); !strings.Contains(st, "Makefile") {
				t.Errorf("the user's git status does not show the changed Makefile:\n%q", st)
			}
			if d := f.git(t, "diff --cached"); !strings.Contains(d, "planted") {
				t.Errorf("the user's git diff --cached does not show the change:\n%s", d)
			}
			if l := f.git(t, "replace -l"); strings.TrimSpace(l) != "" {
				t.Errorf("replace refs left: %q", l)
			}
			if n := strings.Count(f.git(t, "log --oneline"), "\n"); n != 2 {
				t.Errorf("the user's git log shows %d commits, want 2 (%s)", n, fmt.Sprint(kernel))
			}
		})
	}
}

// bin is the built binary (Build).
func bin(t *testing.T) string { return Build(t) }
