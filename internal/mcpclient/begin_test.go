package mcpclient

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// A session's servers start in the background (issue 75): the session is
// not held while one starts; the next turn's Await registers what started
// and says what failed; and the session's end, while a server still
// starts, returns at once, having ended the server with what it started
// and undone what it did at start.
func TestServersStartInTheBackground(t *testing.T) {
	root := gitWorkspace(t)
	h := &sandboxHost{root: root}
	m := New(h, root, testOptions)
	ok := m.Add("local", stdioConfig(""))
	bad := m.Add("broken", stdioConfig("fail"))
	hooky := m.Add("hooky", stdioConfig("hook"))
	m.Begin(ok)
	m.Begin(bad)
	m.Begin(hooky)
	if !m.Pending() {
		t.Fatal("nothing is pending after Begin")
	}
	for deadline := time.Now().Add(20 * time.Second); hooky.State() == "starting" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	h.mu.Lock()
	before := strings.Join(h.said, "\n")
	h.mu.Unlock()
	if before != "" {
		t.Errorf("said from the background, over what you type: %q", before)
	}
	if !m.Await(t.Context()) || m.Pending() {
		t.Fatal("Await did not finish the starts")
	}
	h.mu.Lock()
	registered, said := strings.Join(h.registered, ","), strings.Join(h.said, "\n")
	h.mu.Unlock()
	if (sandbox.Available().Mode() == sandbox.ModeLandlock || !sandbox.Available().Enforced()) && !strings.Contains(said, "MCP server hooky, at start:") {
		t.Errorf("what the start's check undid is not said: %q", said)
	}
	if !strings.Contains(registered, "local__echo") || strings.Contains(registered, "broken") {
		t.Errorf("registered %q", registered)
	}
	if !strings.Contains(said, "warning: MCP server broken: ") || !strings.Contains(said, "cannot open the index") {
		t.Errorf("the failed start is not said: %q", said)
	}
	if out, err := m.Call(t.Context(), ok, "echo", "local__echo", map[string]any{"text": "hi"}); err != nil || out != "echo: hi" {
		t.Errorf("echo: %q %v", out, err)
	}

	slow := m.Add("slow", stdioConfig("hang"))
	m.Begin(slow)
	pidFile := filepath.Join(root, "child.pid")
	var child int
	for deadline := time.Now().Add(20 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(string(b))
	}
	if child == 0 {
		t.Fatal("the slow server never started")
	}
	begin := time.Now()
	m.Close()
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("the session's end waited %s for a server still starting", d)
	}
	if m.Await(t.Context()) && !strings.HasPrefix(slow.State(), "failed") && slow.State() != "stopped" {
		t.Errorf("a server ended while starting is %q", slow.State())
	}
	if sandbox.Available().Enforced() {
		if _, err := os.Stat(filepath.Join(root, ".git", "hooks", "post-checkout")); err == nil {
			t.Error("the hook the server planted while it started is still there")
		}
		// Its child: gone, or (in a PID namespace of its own) not ours to see.
		if alive(child) && sandbox.Available().Mode() == sandbox.ModeLandlock {
			t.Errorf("the child of a server ended while starting lives on (pid %d)", child)
		}
	}
}

// alive reports whether process pid exists and is not a zombie (a zombie
// can do nothing more).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
