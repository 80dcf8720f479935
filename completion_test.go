package harvey

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// harvey completion bash, sourced in a real bash: the subcommands, their
// words, --output's modes and the slash commands as -p's value complete;
// zsh and fish scripts are written for the same tables (and checked by
// their shells where installed).
func TestCompletionScripts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "harvey.bash")
	os.WriteFile(script, []byte(completionSpec().Bash()), 0o644)
	complete := func(words ...string) string {
		line := `source ` + script + `; COMP_WORDS=(` + strings.Join(quoteAll(words), " ") + `); COMP_CWORD=` + strconv.Itoa(len(words)-1) + `; _harvey; echo "${COMPREPLY[@]}"`
		out, err := exec.Command(bash, "-c", line).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"harvey", "mo"}, "model"},
		{[]string{"harvey", "model", ""}, "check"},
		{[]string{"harvey", "completion", "z"}, "zsh"},
		{[]string{"harvey", "--output", "st"}, "stream-json"},
		{[]string{"harvey", "-p", "/ret"}, "/retry"},
		{[]string{"harvey", "--ou"}, "--output"},
		// a subcommand's own flags, read from its usage (issue 49)
		{[]string{"harvey", "rag", "query", "how?", "--st"}, "--store"},
		{[]string{"harvey", "model", "check", "--j"}, "--json"},
		{[]string{"harvey", "mcp", "add", "x", "--read"}, "--read-only"},
	} {
		if got := complete(c.words...); got != c.want {
			t.Errorf("%q: %q, want %q", c.words, got, c.want)
		}
	}
	for shell, text := range map[string]string{"zsh": completionSpec().Zsh(), "fish": completionSpec().Fish()} {
		for _, w := range []string{"stream-json", "/retry", "validate", "--continue", "--read-only", "--store"} {
			if !strings.Contains(text, w) && !strings.Contains(text, strings.TrimPrefix(w, "--")) {
				t.Errorf("%s: %q missing", shell, w)
			}
		}
		if sh, err := exec.LookPath(shell); err == nil {
			p := filepath.Join(dir, "harvey."+shell)
			os.WriteFile(p, []byte(text), 0o644)
			if out, err := exec.Command(sh, "-n", p).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v %s", shell, err, out)
			}
		}
	}
	var out, errOut strings.Builder
	if code := completionCommand([]string{"tcsh"}, &out, &errOut); code != 2 {
		t.Errorf("an unknown shell: %d", code)
	}
}

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = "'" + w + "'"
	}
	return out
}

// /model's Tab offers the installed models of the session's server, and
// --model's shell completion the models of your config's server (issue 62).
func TestModelNamesCompleted(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest")
	comp := completer(nil, commandSet{"model": &Command{Name: "model", Usage: "/model [NAME | check]"}}, func() []string { return installedModels(f.URL()) })
	cands, _ := comp("/model ", "mis")
	if strings.Join(cands, ",") != "mistral:latest " {
		t.Errorf("/model mis<Tab> offered %q", cands)
	}
	cands, _ = comp("/model ", "")
	if len(cands) != 3 {
		t.Errorf("/model <Tab> offered %q, want check and both models", cands)
	}
	if got := installedModels("http://127.0.0.1:1"); len(got) != 0 {
		t.Errorf("a server that does not answer gave %v", got)
	}
	if b := completionSpec().Bash(); !strings.Contains(b, `--model) COMPREPLY=($(compgen -W "$(harvey completion models`) {
		t.Errorf("bash completion does not complete --model from the installed models:\n%s", b)
	}
	if z, fi := completionSpec().Zsh(), completionSpec().Fish(); !strings.Contains(z, "harvey completion models") || !strings.Contains(fi, "harvey completion models") {
		t.Error("zsh or fish completion does not complete --model")
	}
}
