package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// lspPATH is PATH with where language servers are installed here: the Go
// bin of home (go install golang.org/x/tools/gopls) and
// HARVEY_TEST_LSP_BIN (the node_modules/.bin that .ci/run installs
// pyright and typescript-language-server into).
func lspPATH(home string) string {
	p := os.Getenv("PATH") + string(os.PathListSeparator) + filepath.Join(home, "go", "bin")
	if extra := os.Getenv("HARVEY_TEST_LSP_BIN"); extra != "" {
		p = extra + string(os.PathListSeparator) + p
	}
	return p
}

// needServer skips, saying why, where the language server is not here or
// does not start outside Harvey.
func needServer(t *testing.T, path string, argv ...string) {
	t.Helper()
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		for _, d := range filepath.SplitList(path) {
			if c := filepath.Join(d, argv[0]); fileExists(c) {
				prog, err = c, nil
				break
			}
		}
	}
	if err != nil {
		t.Skipf("%s is not installed here (gopls: go install golang.org/x/tools/gopls@v0.23.0; pyright and typescript-language-server: npm, HARVEY_TEST_LSP_BIN)", argv[0])
	}
	if err := ToolchainWorks([]string{"PATH=" + path}, append([]string{prog}, argv[1:]...)...); err != nil {
		t.Skip(err.Error())
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// An edit that breaks the build returns the language server's error in the
// same tool result, through the built binary, the server in the sandbox:
// gopls for a Go module (the error is in the file the edit broke, not the
// one it changed), pyright for Python, typescript-language-server for
// TypeScript, each where it is installed.
func TestEndToEndDiagnosticsAfterAnEdit(t *testing.T) {
	t.Parallel()
	RequireSandbox(t)
	bin := Build(t)
	path := lspPATH(RealHome) // this machine's gopls, on purpose
	cases := []struct {
		name, server, check string
		argv                []string
		files               map[string]string
		call                fakeollama.Call
		want                []string
	}{
		{name: "go", argv: []string{"gopls", "version"},
			files: map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "util.go": "package m\n\nfunc Twice(n int) int { return 2 * n }\n", "main.go": "package m\n\nvar X = Twice(2)\n"},
			call:  fakeollama.Call{ID: "e", Name: "edit_file", Args: map[string]any{"path": "util.go", "old_text": "func Twice(n int) int { return 2 * n }", "new_text": "func Twice(s string) string { return s + s }"}},
			want:  []string{"[gopls: 0 in util.go, 1 new in other files]", "main.go:3:", "cannot use 2"}},
		{name: "python", argv: []string{"pyright", "--version"},
			files: map[string]string{"pyproject.toml": "[project]\nname = \"m\"\n"},
			call:  fakeollama.Call{ID: "e", Name: "write_file", Args: map[string]any{"path": "m.py", "content": "def twice(n: int) -> int:\n    return 2 * n\n\nx: str = twice(2)\n"}},
			want:  []string{"m.py:4:", "error:", "int"}},
		{name: "typescript", argv: []string{"typescript-language-server", "--version"},
			files: map[string]string{"tsconfig.json": "{\"compilerOptions\": {\"strict\": true}}\n"},
			call:  fakeollama.Call{ID: "e", Name: "write_file", Args: map[string]any{"path": "m.ts", "content": "export const n: number = \"two\";\n"}},
			want:  []string{"m.ts:1:", "error:", "not assignable to type 'number'"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needServer(t, path, c.argv...)
			dir := t.TempDir()
			for name, content := range c.files {
				WriteFile(t, dir, name, content)
			}
			f := fakeollama.New(t, "llama3.2:latest")
			f.Script(fakeollama.ToolReply("llama3.2", c.call), fakeollama.TextReply("llama3.2", "Done."))
			out, errOut, code := RunEnv(t, bin, dir, "", []string{"PATH=" + path}, "-p", "change it", "--yes", "--model", "llama3.2", "--ollama", f.URL())
			reqs := f.ChatRequests()
			if code != 0 || len(reqs) != 2 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			res := fakeollama.ToolResults(reqs)["e"]
			for _, w := range c.want {
				if !strings.Contains(res, w) {
					t.Errorf("the result lacks %q:\n%s\n%s", w, res, errOut)
				}
			}
		})
	}
}
