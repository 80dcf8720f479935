package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// Command is the one way a long-lived program is made ready (an MCP
// server's stdio): unstarted, with its streams the caller's, and in the
// sandbox its spec names, which keeps the rest of the machine out of its
// reach however it was asked for.
func TestCommandIsTheSandboxedProgram(t *testing.T) {
	if _, _, err := Command(Proc{}); err == nil {
		t.Error("an empty command was made")
	}
	if _, _, err := Command(Proc{Argv: []string{"no-such-program-here"}}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a missing program: %v", err)
	}
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("OUTSIDE-SECRET\n"), 0o600)
	spec := sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: root, Purpose: "test"})
	cmd, sp, err := Command(Proc{Dir: root, Argv: []string{"sh", "-c", "read line; echo got $line; cat " + secret + "; echo x > made"}, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: spec})
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Process != nil {
		t.Fatal("Command started the program")
	}
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader("hello\n"), &out, &out
	cmd.Run()
	if !strings.Contains(out.String(), "got hello") {
		t.Fatalf("the program's stdio: %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(root, "made")); err != nil {
		t.Errorf("it could not write its workspace: %v", err)
	}
	if !sandbox.Available().Enforced() {
		if sp != nil {
			t.Errorf("a spec where there is no sandbox: %+v", sp)
		}
		t.Skip("no sandbox here: the rest is the sandbox's")
	}
	if sp == nil || sp.Dir != root || len(sp.Argv) == 0 || cmd.SysProcAttr == nil {
		t.Errorf("not through the launcher: spec %+v", sp)
	}
	if strings.Contains(out.String(), "OUTSIDE-SECRET") {
		t.Errorf("the program read outside its sandbox: %q", out.String())
	}
}
