package harvey

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildHarvey builds cmd/harvey once per test binary run.
func buildHarvey(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "harvey")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/harvey")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func runHarvey(t *testing.T, bin, dir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(filterCommandEnvironment(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST=")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestEndToEndHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildHarvey(t)
	f := newFakeOllama(t, "llama3.2:latest", "mistral:latest")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the answer is 42\n"), 0o644)

	// --version, --help, bad usage
	if out, _, code := runHarvey(t, bin, dir, "", "--version"); code != 0 || !strings.HasPrefix(out, "harvey ") {
		t.Fatalf("--version: %d %q", code, out)
	}
	if _, _, code := runHarvey(t, bin, dir, "", "--bogus"); code != 2 {
		t.Fatalf("bad flag exit %d", code)
	}
	// No backend: one-line hint, exit 1.
	_, errOut, code := runHarvey(t, bin, dir, "", "-p", "hello", "--ollama", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(errOut, "ollama serve") {
		t.Fatalf("no backend: %d %q", code, errOut)
	}
	// Several models and none chosen: error listing them.
	_, errOut, code = runHarvey(t, bin, dir, "", "-p", "hello", "--ollama", f.URL())
	if code != 1 || !strings.Contains(errOut, "llama3.2:latest, mistral:latest") {
		t.Fatalf("model choice: %d %q", code, errOut)
	}
	// Read, write and run as scripted, with --yes.
	f.script(
		toolReply("llama3.2", fakeCall{id: "r", name: "read_file", args: map[string]any{"path": "notes.txt"}}),
		toolReply("llama3.2", fakeCall{id: "w", name: "write_file", args: map[string]any{"path": "out/answer.txt", "content": "42\n"}}),
		toolReply("llama3.2", fakeCall{id: "x", name: "run_command", args: map[string]any{"command": "cat out/answer.txt"}}),
		textReply("llama3.2", "The answer is 42; saved to out/answer.txt."),
	)
	out, errOut, code := runHarvey(t, bin, dir, "", "-p", "find the answer and save it", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "The answer is 42") || strings.Contains(out, "⚙") {
		t.Fatalf("stdout = %q", out)
	}
	if !strings.Contains(errOut, "⚙ write_file out/answer.txt") || !strings.Contains(errOut, "tok/s") {
		t.Fatalf("stderr = %q", errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out", "answer.txt")); string(b) != "42\n" {
		t.Fatalf("file = %q", b)
	}
	reqs := f.chatRequests()
	m := messagesOf(reqs[len(reqs)-1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "42\n[exit 0]") {
		t.Fatalf("run result = %q", c)
	}
	// --run FILE with commands; a failing line gives exit 1.
	os.WriteFile(filepath.Join(dir, "script.txt"), []byte("/files\n/read notes.txt\n/read ../escape\n"), 0o644)
	out, errOut, code = runHarvey(t, bin, dir, "", "--run", "script.txt", "--ollama", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(out, "notes.txt") || !strings.Contains(errOut, "outside the workspace") {
		t.Fatalf("--run: %d %q %q", code, out, errOut)
	}
	// Piped stdin REPL: no escape codes, commands work.
	out, errOut, code = runHarvey(t, bin, dir, "/files\n/read notes.txt\n/exit\n", "--ollama", "http://127.0.0.1:1")
	if code != 0 || !strings.Contains(out, "read notes.txt into context") || strings.Contains(out+errOut, "\x1b[") {
		t.Fatalf("piped REPL: %d %q %q", code, out, errOut)
	}
}
