//go:build linux

// Feature: MCP through the REPL in a pseudo-terminal: a server's question
// (elicitation) and an OAuth login, against this package's fakes; the
// rest of the REPL is in e2e/pty_test.go.
package mcp

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/ptytest"
	"github.com/harvey-agent/harvey/internal/secrets"
)

func TestMCPElicitationThroughPTY(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	url, _ := elicitServer(t)
	cfg := t.TempDir()
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    h:\n      url: %s\n      read_only: [ask]\n", url))
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "a", Name: "h__ask", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "Thanks."))
	s := ptytest.StartWith(t, bin, t.TempDir(), []string{"NO_COLOR=1", "XDG_CONFIG_HOME=" + cfg}, 160, "--ollama", f.URL(), "--model", "llama3.2")
	s.Expect("harvey> ")
	s.Send("ask me\r")
	s.Expect("MCP server h asks: Who are you, and how many?")
	s.Expect("type decline to refuse the form") // said before the first field (issue 55)
	// In the server's order: name, size, toppings, count.
	s.Expect("name (string; at least 2 characters; required) — your name: ")
	s.Send("\r")
	s.Expect("name is required (type decline to refuse the form)")
	s.Send("A\r")
	s.Expect("name: at least 2 characters")
	s.Send("Ada\r")
	s.Expect("1. Small (s)")
	s.Expect("2. Large (l)")
	s.Expect("size (choose one: its number, title or value) — Size: ")
	s.Send("large\r") // the title a person reads
	s.Expect("1. cheese")
	s.Expect("3. basil")
	s.Expect("toppings (choose any: numbers, titles or values, separated by commas; 1 to 2 choices): ")
	s.Send("1, 2, 3\r")
	s.Expect("toppings: 1 to 2 choices")
	s.Send("cheese, 3\r")
	s.Expect("count (integer; from 1 to 5): ")
	s.Send("many\r")
	s.Expect("count: a whole number")
	s.Send("9\r")
	s.Expect("count: from 1 to 5")
	s.Send("3\r")
	s.Expect("Thanks.")
	s.Expect("harvey> ")
	if r := fakeollama.ToolResults(f.ChatRequests())["a"]; !strings.Contains(r, "got Ada l [cheese basil] 3") {
		t.Errorf("the call's result: %s", r)
	}
	s.Send("\x04")
	s.Wait()
}

func TestMCPOAuthLoginThroughPTY(t *testing.T) {
	t.Parallel()
	bin := e2e.Build(t)
	o := newOAuthServer(t, 3*time.Second)
	cfg, data := t.TempDir(), t.TempDir()
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    g:\n      url: %s/mcp\n      read_only: [whoami]\n", o.URL))
	env := []string{"NO_COLOR=1", "XDG_CONFIG_HOME=" + cfg, "XDG_DATA_HOME=" + data, "HARVEY_NO_BROWSER=1"}
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "g__whoami", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "Logged in."))
	ws := t.TempDir()
	s := ptytest.StartWith(t, bin, ws, env, 200, "--ollama", f.URL(), "--model", "llama3.2")
	s.Expect("MCP server g asks you to log in (OAuth). Log in now? [y/N] ")
	s.Send("y\r")
	s.Expect("MCP server g: log in at this address:")
	screen := s.Expect("paste the address your browser was sent to")
	authURL := ""
	for _, l := range strings.Split(screen, "\n") {
		if i := strings.Index(l, o.URL+"/authorize?"); i >= 0 {
			authURL = strings.TrimSpace(l[i:])
		}
	}
	if authURL == "" {
		t.Fatalf("no address shown:\n%s", screen)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(authURL)
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("the authorization endpoint: %v %v", resp, err)
	}
	s.Send(resp.Header.Get("Location") + "\r")
	s.Expect("logged in to MCP server g")
	s.Expect("harvey> ")
	s.Send("who am I?\r")
	s.Expect("Logged in.")
	s.Expect("harvey> ")
	s.Send("/audit\r")
	screen += s.Expect("harvey> ") // the audit log, searched for tokens below
	s.Send("\x04")
	s.Wait()
	if r := fakeollama.ToolResults(f.ChatRequests())["w"]; !strings.Contains(r, "you are logged in") {
		t.Fatalf("the call: %s", r)
	}
	files, _ := filepath.Glob(filepath.Join(data, "harvey", "mcp-oauth", "g-*.json"))
	if len(files) != 1 {
		t.Fatalf("no token kept: %v", files)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("the token file is %v", fi.Mode().Perm())
	}
	// The next session, headless, after the token expired: refreshed.
	time.Sleep(3500 * time.Millisecond)
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w2", Name: "g__whoami", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "Still logged in."))
	h := func(args ...string) (string, string, int) { return e2e.RunEnv(t, bin, t.TempDir(), "", env, args...) }
	out, errOut, code := h("-p", "who am I now?", "--model", "llama3.2", "--ollama", f.URL(), "--output", "stream-json")
	if code != 0 || !strings.Contains(out, "Still logged in.") || o.refreshes.Load() == 0 {
		t.Fatalf("the kept token, refreshed (%d refreshes): exit %d %s %s", o.refreshes.Load(), code, out, errOut)
	}
	journal := ""
	for _, req := range f.ChatRequests() {
		journal += e2e.MustJSON(req)
	}
	o.mu.Lock()
	issued := append([]string(nil), o.issued...)
	o.mu.Unlock()
	filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error { // the journal, history, recordings
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			journal += string(b)
		}
		return nil
	})
	for _, tok := range issued {
		if strings.Contains(out+errOut+journal+screen, tok) {
			t.Fatalf("a token reached an output, a file of the workspace or the model")
		}
	}
	// logout forgets it; then headless says how to log in.
	if out, _, code := h("mcp", "logout", "g"); code != 0 || !strings.Contains(out, "forgot the token") {
		t.Fatalf("logout: %d %s", code, out)
	}
	out, errOut, _ = h("mcp", "list")
	if !strings.Contains(out+errOut, "needs you to log in (OAuth): run harvey mcp login g") {
		t.Fatalf("headless without a token: %s %s", out, errOut)
	}
	// harvey mcp login, the address pasted on its stdin.
	cmd := exec.Command(bin, "mcp", "login", "g")
	cmd.Env = append(append(secrets.Environ(os.Environ()), "OLLAMA_HOST="), env...)
	stdin, _ := cmd.StdinPipe()
	stderr, _ := cmd.StderrPipe()
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var said strings.Builder
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
		if i := strings.Index(sc.Text(), o.URL+"/authorize?"); i >= 0 {
			resp, err := noRedirect.Get(strings.TrimSpace(sc.Text()[i:]))
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(stdin, resp.Header.Get("Location")+"\n")
		}
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(said.String(), "logged in to MCP server g") {
		t.Fatalf("harvey mcp login: %v\n%s%s", err, stdout.String(), said.String())
	}
	if out, errOut, code := h("mcp", "list"); code != 0 || !strings.Contains(out, "g: running, 1 tool") {
		t.Fatalf("after harvey mcp login: %d %s %s", code, out, errOut)
	}
}
