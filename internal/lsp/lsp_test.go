package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/launchtest"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// TestMain plays a language server when asked (HARVEY_LSP_FAKE: its
// mode), else the sandbox's launcher and the tests (internal/launchtest).
func TestMain(m *testing.M) {
	if mode := os.Getenv("HARVEY_LSP_FAKE"); mode != "" {
		fakeServer(mode)
		os.Exit(0)
	}
	launchtest.Main(m)
}

// fakeServer answers initialize and shutdown, asks the client for its
// configuration once, and publishes diagnostics for each text it is
// given: an error on each line holding BROKEN, a warning on each holding
// WARN, and with a BROKEN line an error in other.go too. Modes: "ok",
// "silent" (never publishes), "noversion" (publishes without versions),
// "crash" (exits at the first change).
func fakeServer(mode string) {
	r := bufio.NewReader(os.Stdin)
	var root string
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(os.Stdout, "Content-Length: %d\r\n\r\n%s", len(b), b)
	}
	for {
		body, err := readFrame(r)
		if err != nil {
			return
		}
		var m struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Params json.RawMessage  `json:"params"`
		}
		json.Unmarshal(body, &m)
		switch m.Method {
		case "initialize":
			var p struct {
				RootURI   string `json:"rootUri"`
				ProcessID *int   `json:"processId"`
			}
			json.Unmarshal(m.Params, &p)
			root = p.RootURI
			if p.ProcessID != nil {
				// As typescript-language-server and pyright do: a parent
				// that is not alive where the server runs (its PID
				// namespace) ends it.
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"capabilities": map[string]any{}}})
				os.Exit(4)
			}
			send(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "workspace/configuration", "params": map[string]any{"items": []any{map[string]any{"section": "x"}}}})
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"capabilities": map[string]any{}}})
		case "shutdown":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": nil})
		case "exit":
			return
		case "textDocument/didOpen", "textDocument/didChange":
			if mode == "crash" {
				os.Exit(3)
			}
			var p struct {
				TextDocument struct {
					URI     string `json:"uri"`
					Version int    `json:"version"`
					Text    string `json:"text"`
				} `json:"textDocument"`
				ContentChanges []struct {
					Text string `json:"text"`
				} `json:"contentChanges"`
			}
			json.Unmarshal(m.Params, &p)
			text := p.TextDocument.Text
			if len(p.ContentChanges) > 0 {
				text = p.ContentChanges[0].Text
			}
			if mode == "silent" {
				continue
			}
			var diags []map[string]any
			broken := false
			for i, l := range strings.Split(text, "\n") {
				if strings.Contains(l, "BROKEN") {
					broken = true
					diags = append(diags, diag(i, 1, "undefined: BROKEN"))
				}
				if strings.Contains(l, "WARN") {
					diags = append(diags, diag(i, 2, "unused variable"))
				}
			}
			params := map[string]any{"uri": p.TextDocument.URI, "diagnostics": diags}
			if mode != "noversion" {
				params["version"] = p.TextDocument.Version
			}
			time.Sleep(50 * time.Millisecond) // it thinks
			send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params})
			other := []map[string]any{}
			if broken {
				other = append(other, diag(2, 1, "other.go broke: BROKEN has no type"))
			}
			send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": map[string]any{"uri": root + "/other.go", "diagnostics": other}})
		}
	}
}

func diag(line, sev int, msg string) map[string]any {
	return map[string]any{"range": map[string]any{"start": map[string]any{"line": line, "character": 4}, "end": map[string]any{"line": line, "character": 9}},
		"severity": sev, "message": msg, "source": "fake"}
}

type host struct {
	mu   sync.Mutex
	said []string
	env  []string
}

func (h *host) Sandbox(string) (*sandbox.Spec, error) { return nil, nil }
func (h *host) Env() []string                         { return h.env }
func (h *host) Say(l string)                          { h.mu.Lock(); h.said = append(h.said, l); h.mu.Unlock() }
func (h *host) Record(string)                         {}

func fake(t *testing.T, mode string, wait time.Duration) (*Manager, *host, string) {
	root := t.TempDir()
	h := &host{env: append(os.Environ(), "HARVEY_LSP_FAKE="+mode)}
	m := New(root, h, Config{Servers: map[string][]string{"go": {os.Args[0]}, "python": {}}, Wait: wait})
	t.Cleanup(m.Close)
	return m, h, root
}

func TestAnEditsErrorsAndWhatItBrokeElsewhere(t *testing.T) {
	m, _, _ := fake(t, "ok", 2*time.Second)
	ctx := t.Context()
	got := m.Diagnose(ctx, "pkg/a.go", "package a\n\nvar x = BROKEN\nvar WARN int\n", false)
	for _, want := range []string{"[" + filepath.Base(os.Args[0]) + ": 2 in pkg/a.go, 1 new in other files]", "pkg/a.go:3:5: error: undefined: BROKEN", "pkg/a.go:4:5: warning: unused variable", "other.go:3:5: error: other.go broke"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if got := m.Diagnose(ctx, "pkg/a.go", "package a\n\nvar WARN int\n", true); !strings.Contains(got, "no errors in pkg/a.go") {
		t.Errorf("errors only, fixed: %s", got)
	}
	if got := m.Diagnose(ctx, "notes.md", "# hi", false); got != "" {
		t.Errorf("a language without a server: %q", got)
	}
	if got := m.Diagnose(ctx, "x.py", "BROKEN", false); got != "" {
		t.Errorf("a language your config turned off: %q", got)
	}
	if r := m.Running(); len(r) != 1 {
		t.Errorf("running %v", r)
	}
}

// Another file's errors reach the model only where the path gate lets it
// see that file.
func TestOtherFilesOnlyWhereTheModelMaySee(t *testing.T) {
	m, _, _ := fake(t, "ok", 2*time.Second)
	m.cfg.Visible = func(rel string) bool { return rel != "other.go" }
	got := m.Diagnose(t.Context(), "a.go", "BROKEN\n", true)
	if !strings.Contains(got, "a.go:1:5: error") || strings.Contains(got, "other.go") {
		t.Errorf("%s", got)
	}
}

func TestAServerWithoutVersions(t *testing.T) {
	m, _, _ := fake(t, "noversion", 2*time.Second)
	if got := m.Diagnose(t.Context(), "a.go", "BROKEN\n", true); !strings.Contains(got, "a.go:1:5: error: undefined: BROKEN") {
		t.Errorf("%s", got)
	}
}

func TestASilentServerIsSaidNotChecked(t *testing.T) {
	m, _, _ := fake(t, "silent", 200*time.Millisecond)
	start := time.Now()
	got := m.Diagnose(t.Context(), "a.go", "BROKEN\n", true)
	if !strings.Contains(got, "did not give a.go's errors within 1s: not checked") || time.Since(start) > 3*time.Second {
		t.Errorf("first use waits five times the bound: %q after %v", got, time.Since(start))
	}
	if got := m.Diagnose(t.Context(), "a.go", "BROKEN\n", true); !strings.Contains(got, "within 200ms") {
		t.Errorf("warm: %q", got)
	}
}

func TestAServerThatEndsIsSaidOnce(t *testing.T) {
	m, h, _ := fake(t, "crash", time.Second)
	if got := m.Diagnose(t.Context(), "a.go", "x", true); got != "" {
		t.Errorf("%q", got)
	}
	m.Diagnose(t.Context(), "a.go", "x", true)
	if len(h.said) != 1 || !strings.Contains(h.said[0], "ended") {
		t.Errorf("said %q", h.said)
	}
}

func TestOffAndUnknown(t *testing.T) {
	h := &host{}
	m := New(t.TempDir(), h, Config{Off: true})
	if m.Diagnose(context.Background(), "a.go", "BROKEN", true) != "" {
		t.Error("off still diagnoses")
	}
	m = New(t.TempDir(), h, Config{Servers: map[string][]string{"go": {"no-such-server-here"}}})
	if m.Diagnose(context.Background(), "a.go", "BROKEN", true) != "" || len(h.said) != 0 {
		t.Errorf("a server that is not here: %q", h.said)
	}
	for f, want := range map[string]string{"a.tsx": "typescriptreact", "b.PY": "python", "c.hpp": "cpp", "d.rs": "rust", "e.txt": ""} {
		if _, id := Language(f); id != want {
			t.Errorf("%s: %q", f, id)
		}
	}
}

// With gopls on PATH, a real edit that breaks a Go build gets gopls's error.
func TestGoplsSaysWhatAnEditBroke(t *testing.T) {
	if _, err := exec.LookPath("gopls"); err != nil {
		t.Skip("gopls is not on PATH (go install golang.org/x/tools/gopls@v0.23.0)")
	}
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(root, "util.go"), []byte("package m\n\nfunc Twice(n int) int { return 2 * n }\n"), 0o644)
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package m\n\nvar X = Twice(2)\n"), 0o644)
	m := New(root, &host{env: os.Environ()}, Config{})
	defer m.Close()
	broken := "package m\n\nfunc Twice(s string) string { return s + s }\n"
	os.WriteFile(filepath.Join(root, "util.go"), []byte(broken), 0o644)
	start := time.Now()
	got := m.Diagnose(t.Context(), "util.go", broken, true)
	first := time.Since(start)
	if !strings.Contains(got, "main.go:3:") || !strings.Contains(got, "cannot use 2") {
		t.Errorf("gopls's error in the file the edit broke (%v):\n%s", first, got)
	}
	fixed := "package m\n\nfunc Twice(n int) int { return n + n }\n"
	os.WriteFile(filepath.Join(root, "util.go"), []byte(fixed), 0o644)
	start = time.Now()
	got = m.Diagnose(t.Context(), "util.go", fixed, true)
	t.Logf("gopls: first use %v, warm %v", first, time.Since(start))
	if !strings.Contains(got, "no errors in util.go") {
		t.Errorf("fixed:\n%s", got)
	}
}

// Ctrl-C ends the wait for a server's errors (the turn's context), not
// the server: a cancelled wait returns at once, and the server, started
// at first use whatever the turn, stays warm for the next edit.
func TestAWaitEndsWithTheTurn(t *testing.T) {
	m, _, _ := fake(t, "silent", 10*time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	m.Diagnose(ctx, "a.go", "BROKEN\n", true)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the wait outlived the turn by %v", d)
	}
	if r := m.Running(); len(r) != 1 {
		t.Errorf("the server did not stay: %v", r)
	}
}
