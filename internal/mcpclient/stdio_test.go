package mcpclient

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// sandboxHost is a session whose servers run in the sandbox a command of
// the workspace gets (the test binary, which is the server, readable).
type sandboxHost struct {
	fakeHost
	root string
}

func (h *sandboxHost) Sandbox(purpose string) *sandbox.Spec {
	sp := sandboxpolicy.CommandSpec(sandboxpolicy.SpecFor{Root: h.root, Purpose: purpose})
	exe, _ := os.Executable()
	sp.RO = append(sp.RO, filepath.Dir(exe))
	return sp
}

// gitWorkspace is a workspace that is a git repository.
func gitWorkspace(t *testing.T) string {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	root := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Skipf("no git here: %v %s", err, out)
	}
	return root
}

func stdioConfig(start string) config.MCPServer {
	exe, _ := os.Executable()
	return config.MCPServer{Command: []string{exe}, Env: map[string]string{"HARVEY_TEST_MCP": "stdio", "HARVEY_TEST_MCP_START": start}}
}

// A stdio server of your config, through the real client and the sandbox:
// its tools are called; what a call writes in the workspace is said; what
// it does to .git is undone and said; a server that dies mid-call is
// restarted once and the model is told to call again, not told it worked.
func TestStdioServerIsCheckedCallByCall(t *testing.T) {
	root := gitWorkspace(t)
	h := &sandboxHost{root: root}
	m := New(h, root, testOptions)
	defer m.Close()
	s := m.Add("local", stdioConfig(""))
	if err := m.Connect(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if s.State() != "running" || len(s.Tools()) != 3 {
		t.Fatalf("state %q, tools %v", s.State(), s.Tools())
	}
	if out, err := m.Call(t.Context(), s, "echo", "local__echo", map[string]any{"text": "hi"}); err != nil || out != "echo: hi" {
		t.Errorf("echo: %q %v", out, err)
	}
	out, err := m.Call(t.Context(), s, "write", "local__write", map[string]any{"path": "notes.txt", "text": "n\n"})
	if err != nil || !strings.Contains(out, "wrote notes.txt") || !strings.Contains(out, "notes.txt") || strings.Count(out, "\n") < 1 {
		t.Errorf("a write in the workspace is not said: %q %v", out, err)
	}
	hook := filepath.Join(root, ".git", "hooks", "pre-commit")
	out, err = m.Call(t.Context(), s, "write", "local__write", map[string]any{"path": ".git/hooks/pre-commit", "text": "#!/bin/sh\necho owned\n"})
	if _, serr := os.Stat(hook); serr == nil {
		t.Errorf("the hook a tool call wrote is still there (%q %v)", out, err)
	}
	if sandbox.Available().Mode() == sandbox.ModeLandlock || !sandbox.Available().Enforced() {
		if !strings.Contains(out, "pre-commit") {
			t.Errorf("what was undone is not said: %q %v", out, err)
		}
	}
	_, err = m.Call(t.Context(), s, "die", "local__die", nil)
	if err == nil || !strings.Contains(err.Error(), "it was restarted — call again") {
		t.Errorf("a server that died mid-call: %v", err)
	}
	if s.State() != "running" {
		t.Errorf("not restarted: %q", s.State())
	}
	if out, err := m.Call(t.Context(), s, "echo", "local__echo", map[string]any{"text": "again"}); err != nil || out != "echo: again" {
		t.Errorf("after the restart: %q %v", out, err)
	}
	_, err = m.Call(t.Context(), s, "die", "local__die", nil)
	if err == nil || strings.Contains(err.Error(), "restarted") {
		t.Errorf("a second death is not restarted again: %v", err)
	}
}

// What a server does before anyone calls it is checked too: a hook it
// writes as it starts is undone and said to the user; a server that cannot
// start says why in its own last line.
func TestStdioServerStartIsChecked(t *testing.T) {
	root := gitWorkspace(t)
	h := &sandboxHost{root: root}
	m := New(h, root, testOptions)
	defer m.Close()
	s := m.Add("hooky", stdioConfig("hook"))
	if err := m.Connect(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git", "hooks", "post-checkout")); err == nil {
		t.Error("the hook the server wrote as it started is still there")
	}
	h.mu.Lock()
	said := strings.Join(h.said, "\n")
	h.mu.Unlock()
	if sandbox.Available().Mode() == sandbox.ModeLandlock || !sandbox.Available().Enforced() {
		if !strings.Contains(said, "MCP server hooky, at start:") || !strings.Contains(said, "post-checkout") {
			t.Errorf("not said: %q", said)
		}
	}
	f := m.Add("broken", stdioConfig("fail"))
	err := m.Connect(t.Context(), f)
	if err == nil || !strings.Contains(err.Error(), "fatal: cannot open the index: permission denied") {
		t.Errorf("why it did not start: %v", err)
	}
	if !strings.HasPrefix(f.State(), "failed: ") || strings.Join(m.Failed(), ",") != "broken" {
		t.Errorf("state %q, failed %v", f.State(), m.Failed())
	}
	if _, err := m.Call(t.Context(), f, "echo", "broken__echo", nil); err == nil || !strings.Contains(err.Error(), "MCP server broken failed") || !strings.Contains(err.Error(), "cannot open the index") {
		t.Errorf("a call to a server that cannot start: %v", err)
	}
}
