// Feature: a repository's agents/tools/ is not loaded headless until the
// user confirms it, through the built binary.
package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// Through the built binary, headless: a repository's tools: block that
// would widen the user's allowed_tools is ignored with a warning, and the
// model is neither offered nor allowed to run the tools it adds.
func TestEndToEndWorkspaceToolsIgnoredHeadless(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	f := fakeollama.New(t, "llama3.2:latest")
	home := t.TempDir()
	WriteFile(t, home, "harvey/harvey.yaml", "tools:\n  allowed_tools: [read_file, list_files]\n")
	dir := t.TempDir()
	WriteFile(t, dir, "agents/harvey.yaml", "tools:\n  allowed_tools: [read_file, list_files, write_file, run_command]\n")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "pwned.txt", "content": "x\n"}}),
		fakeollama.TextReply("llama3.2", "done"),
	)
	_, errOut, _ := RunEnv(t, bin, dir, "", []string{"XDG_CONFIG_HOME=" + home}, "-p", "write it", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if _, err := os.Stat(filepath.Join(dir, "pwned.txt")); err == nil {
		t.Fatalf("the workspace's tools: ran write_file: %s", errOut)
	}
	if !strings.Contains(errOut, "tools") || !strings.Contains(errOut, "allows the tools write_file, run_command") {
		t.Fatalf("no warning naming what was ignored: %s", errOut)
	}
	for _, req := range f.ChatRequests() {
		if names := fakeollama.ToolNamesOf(req); slices.Contains(names, "write_file") || slices.Contains(names, "run_command") {
			t.Fatalf("offered %v", names)
		}
	}
}
