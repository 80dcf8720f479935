package shellcomplete

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A subcommand's flags are read from its usage as it prints it: "harvey SUB
// WORD" lines only, each flag once, none of another program's command line
// after --.
func TestSubcommandFlags(t *testing.T) {
	got := SubcommandFlags("usage: harvey rag query \"TEXT\" [--store NAME] [-k N] [--json] [--json]\n  harvey mcp add NAME [--env K=V] -- npx --yes x\nnot a usage --flag\n")
	if q := got["rag query"]; !slices.Equal(q, []string{"--store", "-k", "--json"}) {
		t.Errorf("rag query: %v", q)
	}
	if a := got["mcp add"]; !slices.Equal(a, []string{"--env"}) {
		t.Errorf("mcp add (the server's --yes is its own): %v", a)
	}
	if len(got) != 2 {
		t.Errorf("other lines read: %v", got)
	}
}

// Each shell's script is written from the Spec alone and parses in its
// shell (where the shell is installed): flags with values complete their
// values, a subcommand its words and its word's flags.
func TestScriptsFromTheSpec(t *testing.T) {
	s := Spec{
		Flags:       []Flag{{Name: "-p", Value: true, Help: "prompt"}, {Name: "--output", Value: true, Help: "mode"}, {Name: "--yes", Help: "approve"}},
		Subcommands: map[string][]string{"tools": {"validate"}},
		SubFlags:    map[string][]string{"tools validate": {"--json"}},
		OutputModes: []string{"text", "json"},
		Slash:       []string{"/help", "/retry"},
	}
	scripts := map[string]string{"bash": s.Bash(), "zsh": s.Zsh(), "fish": s.Fish()}
	for shell, text := range scripts {
		for _, want := range []string{"validate", "json", "/retry", "yes"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: %q missing:\n%s", shell, want, text)
			}
		}
		sh, err := exec.LookPath(shell)
		if err != nil {
			continue
		}
		p := filepath.Join(t.TempDir(), "harvey."+shell)
		os.WriteFile(p, []byte(text), 0o644)
		if out, err := exec.Command(sh, "-n", p).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v %s", shell, err, out)
		}
	}
	if !strings.Contains(scripts["fish"], "complete -c harvey -s p -d") || !strings.Contains(scripts["fish"], "-l yes") {
		t.Errorf("fish's options: %s", scripts["fish"])
	}
}
