//go:build linux

// Feature: a new user's first session through a pseudo-terminal (40 columns,
// a slow fake model); spans startup.go, terminal.go, lineeditor.go and
// models.go.
package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/lazyre"
	"github.com/harvey-agent/harvey/internal/ptytest"
)

// The first-run path walked as a new user walks it, on a 40-column
// terminal with colour: no Ollama at all, then a slow one with two models
// and a menu answered after 4 s, a write approved, one declined with a
// reason, Ctrl-C and Ctrl-D at an approval. The screen is checked at each
// step.
func TestFirstRunWalkThroughPTY(t *testing.T) {
	t.Parallel()
	bin := Build(t)
	dir := t.TempDir()
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + t.TempDir() + ":/usr/bin:/bin", "COLUMNS=", "NO_COLOR="}

	// 1. No Ollama installed and none answering: the hint names what to
	// install and the one command to get a model; commands still work.
	s := ptytest.StartWith(t, bin, dir, env, 40, "--ollama", "http://127.0.0.1:1")
	s.Expect("Ollama is not installed here")
	s.Expect("ollama pull llama3.2")
	s.Expect("harvey> ")
	s.Send("/help all\r")
	help := plainScreen(s.Expect("harvey> "))
	for _, l := range strings.Split(help, "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(l, "\r ")); n > 40 {
			t.Fatalf("/help line of %d columns on a 40-column terminal: %q", n, l)
		}
	}
	if !strings.Contains(help, "/git status|diff|log|show|blame") {
		t.Fatalf("/help = %q", help)
	}
	s.Send("/git st\t")
	s.Expect("status")
	s.Send("\x15") // Ctrl-U: clear the line
	// Home and End as tmux sends them: "ello", Home, "h", End, " there".
	s.Send("ello\x1b[1~h\x1b[4~ there\r")
	s.Expect("Ollama is not installed here") // none installed: the prompt says what to install
	s.Expect("harvey> ")
	s.Send("/exit\r")
	s.Wait()
	if h, _ := os.ReadFile(filepath.Join(dir, "agents", "history")); !strings.Contains(string(h), "\nhello there\n") {
		t.Fatalf("Home/End: the line was not \"hello there\": history %q", h)
	}

	// 2. A slow Ollama with two models: the menu shows what each is; the
	// answer, given after 4 s, still connects, and the choice is saved.
	f := fakeollama.New(t, "llama3.2:latest", "mistral:latest")
	f.Mu.Lock()
	f.APIDelay = 300 * time.Millisecond
	f.Mu.Unlock()
	s = ptytest.StartWith(t, bin, dir, env, 40, "--ollama", f.URL())
	s.Expect("1) llama3.2:latest")
	s.Expect("calls tools")
	s.Expect("Choose a model [1]: ")
	time.Sleep(4 * time.Second)
	s.Send("1\r")
	out := s.Expect("harvey> ")
	if strings.Contains(out, "did not answer in time") || !strings.Contains(plainScreen(out), "llama3.2:latest (tool mode") {
		t.Fatalf("after a late answer: %q", plainScreen(out))
	}
	if b, err := os.ReadFile(filepath.Join(home, ".config", "harvey", "harvey.yaml")); err != nil || !strings.Contains(string(b), "model: llama3.2:latest") {
		t.Fatalf("choice not saved: %q %v", b, err)
	}

	// A slow reply: the spinner redraws one line in place, never wider
	// than the terminal (a wrapped line would leave a copy per frame).
	f.Script(fakeollama.Reply{Lines: append([]string{fakeollama.ContentLine("llama3.2", "Hello")}, fakeollama.TextReply("llama3.2", " from a slow model.").Lines...), First: 2500 * time.Millisecond, Gap: 100 * time.Millisecond})
	s.Send("hi\r")
	out = s.Expect("Hello")
	if i := strings.IndexAny(out, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"); i < 0 || strings.Contains(out[i:], "\n") {
		t.Fatalf("no spinner, or one that printed new lines: %q", out)
	}
	frames := 0
	for _, seg := range strings.Split(out, "\r") {
		seg = plainScreen(seg)
		if strings.ContainsAny(seg, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
			frames++
			if n := utf8.RuneCountInString(seg); n >= 40 {
				t.Fatalf("a spinner frame of %d columns: %q", n, seg)
			}
		}
	}
	if frames < 5 {
		t.Fatalf("%d spinner frames in 2.5 s: %q", frames, out)
	}
	s.Expect("from a slow model.")
	s.Expect("harvey> ")

	// 3. A write approved with y.
	write := func(id, name, content string) fakeollama.Reply {
		return fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: id, Name: "write_file", Args: map[string]any{"path": name, "content": content}})
	}
	f.Script(write("w1", "notes.txt", "first\n"), fakeollama.TextReply("llama3.2", "Saved the notes."))
	s.Send("save notes\r")
	s.Expect("+first")
	s.Expect("Allow write_file? [y/n/a] ")
	s.Send("y\r")
	s.Expect("Saved the notes.")
	s.Expect("harvey> ")
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "first\n" {
		t.Fatalf("notes.txt = %q", b)
	}

	// 4. One declined with a reason: the model is told the user's words.
	f.Script(write("w2", "style.txt", "spaces\n"), fakeollama.TextReply("llama3.2", "Understood, tabs."))
	s.Send("write the style\r")
	s.Expect("Allow write_file? [y/n/a] ")
	s.Send("n use tabs\r")
	s.Expect("Understood, tabs.")
	s.Expect("harvey> ")
	reqs := f.ChatRequests()
	m := fakeollama.MessagesOf(reqs[len(reqs)-1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, `saying: "use tabs"`) {
		t.Fatalf("the model was told %q", c)
	}

	// 5. Ctrl-C at an approval: no, and the turn stops (the model is not
	// asked again); the session goes on.
	before := len(f.ChatRequests())
	f.Script(write("w3", "c.txt", "c\n"), fakeollama.TextReply("llama3.2", "should not be asked for"))
	s.Send("write c\r")
	s.Expect("Allow write_file? [y/n/a] ")
	s.Send("\x03")
	s.Expect("^C")
	s.Expect("cancelled")
	s.Expect("harvey> ")
	if n := len(f.ChatRequests()); n != before+1 {
		t.Fatalf("%d requests after Ctrl-C at the approval (want %d)", n, before+1)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.txt")); err == nil {
		t.Fatal("written after Ctrl-C")
	}

	// 6. Ctrl-D at an approval: no answer, so no; the session goes on.
	f.Mu.Lock()
	f.Replies = nil // the reply Ctrl-C kept the model from being asked for
	f.Mu.Unlock()
	f.Script(write("w4", "d.txt", "d\n"), fakeollama.TextReply("llama3.2", "Not written."))
	s.Send("write d\r")
	s.Expect("Allow write_file? [y/n/a] ")
	s.Send("\x04")
	s.Expect("Not written.")
	s.Expect("harvey> ")
	if _, err := os.Stat(filepath.Join(dir, "d.txt")); err == nil {
		t.Fatal("written after Ctrl-D")
	}
	s.Send("/status\r")
	s.Expect("llama3.2:latest")
	s.Expect("harvey> ")
	s.Send("/exit\r")
	if err := s.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

var ansiRE = lazyre.New(`\x1b\[[0-9;?]*[A-Za-z]`)

// plainScreen is terminal output without escape sequences and carriage
// returns, as a person reads it.
func plainScreen(s string) string {
	return strings.ReplaceAll(ansiRE().ReplaceAllString(s, ""), "\r", "")
}
