// Feature: crashes and interrupted writes (a killed process during
// write_file, config saves, recordings, the session journal); spans
// internal/wsfile, config.go, internal/recorder and resume.go.
package harvey

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/recorder"
)

// Crash safety: a Harvey process killed with SIGKILL in the middle of
// writing leaves each file as the old version or the new one, never half.
// The child is this test binary running Harvey's own code paths in a loop
// (write_file's atomic write, a config save, a session recording); the
// parent kills it at a random moment and inspects what is on disk.

// crashHelper is the child (e2e.Helpers "crash", argument MODE:DIR): it
// writes in a loop until it is killed.
func crashHelper(arg string) int {
	mode, dir, _ := strings.Cut(arg, ":")
	ws, err := openWorkspace(dir)
	if err != nil {
		os.Exit(3)
	}
	ready := func(i int) {
		if i == 1 {
			os.Stdout.WriteString("ready\n")
		}
	}
	switch mode {
	case "write":
		for i := 0; ; i++ {
			content := bytes.Repeat([]byte{byte('a' + i%2)}, 8<<20)
			if _, _, err := writeWorkspaceFile(ws, "big.txt", string(content)); err != nil {
				os.Exit(4)
			}
			ready(i)
		}
	case "config":
		cf, _ := configfile.Load(ws.Tree)
		for i := 0; ; i++ {
			cf.Model = fmt.Sprintf("model-%d-%s", i, strings.Repeat("x", i%50))
			cf.AllowedCommands = make([]string, 200+i%100)
			for j := range cf.AllowedCommands {
				cf.AllowedCommands[j] = fmt.Sprintf("cmd%d", i)
			}
			if err := cf.Save(ws.Tree, "model", "allowed_commands"); err != nil {
				os.Exit(4)
			}
			ready(i)
		}
	case "journal":
		cf, _ := configfile.Load(ws.Tree)
		a := newAgent(ws, cf, newLineReader(strings.NewReader("")), io.Discard, io.Discard)
		for i := 0; ; i++ {
			a.AddMessage("user", fmt.Sprintf("question %d %s", i, strings.Repeat("q", i%500)))
			a.AddMessage("assistant", fmt.Sprintf("answer %d %s", i, strings.Repeat("a", 4000)))
			a.saveSession(a.ModelName)
			ready(i)
		}
	case "record":
		r, err := recorder.Start(ws.Tree, "crash.md", "llama3.2", config.DefaultMaxOutputBytes)
		if err != nil {
			os.Exit(4)
		}
		for i := 0; ; i++ {
			r.User(fmt.Sprintf("question %d", i))
			r.ToolCall("read_file", "{}", strings.Repeat(fmt.Sprintf("result %d ", i), 2000), false)
			r.Assistant(fmt.Sprintf("answer %d", i), "stats")
			ready(i)
		}
	}
	return 5
}

func crashOnce(t *testing.T, mode, dir string) {
	t.Helper()
	cmd := e2e.HelperCmd("crash", mode+":"+dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%s helper did not start: %q", mode, line)
	}
	time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

func TestCrashDuringWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for round := 0; round < 4; round++ {
		crashOnce(t, "write", dir)
		b, err := os.ReadFile(filepath.Join(dir, "big.txt"))
		if err != nil || len(b) != 8<<20 || (!bytes.Equal(b, bytes.Repeat([]byte{'a'}, 8<<20)) && !bytes.Equal(b, bytes.Repeat([]byte{'b'}, 8<<20))) {
			t.Fatalf("round %d: big.txt is %d bytes, neither version (%v)", round, len(b), err)
		}
	}
	// A temp file left by a killed write is cleaned up by a later write to
	// the same file once it is stale.
	temps, _ := filepath.Glob(filepath.Join(dir, ".big.txt.harvey-*.tmp"))
	t.Logf("%d kills landed between creating and renaming a temp file", len(temps))
	old := time.Now().Add(-2 * time.Minute)
	for _, p := range temps {
		os.Chtimes(p, old, old)
	}
	ws, _ := openWorkspace(dir)
	defer ws.Close()
	if _, _, err := writeWorkspaceFile(ws, "big.txt", "done\n"); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".big.txt.harvey-*.tmp")); len(left) != 0 {
		t.Fatalf("stale temp files left: %v", left)
	}
}

func TestCrashDuringConfigSave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for round := 0; round < 4; round++ {
		crashOnce(t, "config", dir)
		ws, err := openWorkspace(dir)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := configfile.Load(ws.Tree)
		ws.Close()
		if err != nil {
			t.Fatalf("round %d: config does not load after a crash: %v", round, err)
		}
		// The file as saved (a kill may come before Harvey records that it
		// wrote it, so the trust rule may hold allowed_commands back).
		cf.Config = cf.Workspace()
		var i int
		var rest string
		if n, _ := fmt.Sscanf(cf.Model, "model-%d-%s", &i, &rest); n < 1 {
			t.Fatalf("round %d: model = %q", round, cf.Model)
		}
		want := fmt.Sprintf("cmd%d", i)
		if len(cf.AllowedCommands) != 200+i%100 || cf.AllowedCommands[len(cf.AllowedCommands)-1] != want {
			t.Fatalf("round %d: model and allowed_commands come from different saves (%s, %d entries)", round, cf.Model, len(cf.AllowedCommands))
		}
	}
}

// A kill can cut the turn being appended (a large write is not atomic);
// the next Harvey start cuts the file back to its last complete turn.
func TestCrashDuringRecording(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	crashOnce(t, "record", dir)
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	a, err := Start(t.Context(), Options{Dir: dir, OllamaURL: "http://127.0.0.1:1", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	ws.Close()
	b, err := os.ReadFile(filepath.Join(dir, "agents", "sessions", "crash.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	head, turns, ok := strings.Cut(s, "### Turn ")
	if !ok || !strings.HasPrefix(head, "# Harvey session") {
		t.Fatalf("no complete turn: %.300q", s)
	}
	blocks := strings.Split("### Turn "+turns, "### Turn ")[1:]
	for i, blk := range blocks {
		want := fmt.Sprintf("%d\n\n**User:** question %d\n\n", i+1, i)
		last := i == len(blocks)-1
		if !strings.HasPrefix(blk, want) || !strings.HasSuffix(blk, "_stats_\n\n"+recorder.EndMark) {
			if last {
				t.Fatalf("the last turn was cut in half: %.200q … %.100q", blk, blk[max(0, len(blk)-100):])
			}
			t.Fatalf("turn %d is damaged", i+1)
		}
	}
}

// The session journal appends a turn instead of rewriting the file, and a
// Harvey killed mid-append leaves a journal that --continue restores
// exactly, up to the last complete message.
func TestSessionJournal(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, nil, "")
	for i := 0; i < 3; i++ {
		env.a.AddMessage("user", fmt.Sprint("q", i))
		env.a.AddMessage("assistant", fmt.Sprint("a", i))
		env.a.saveSession(env.a.ModelName)
	}
	b, _ := os.ReadFile(filepath.Join(env.dir, "agents", "sessions", "last.jsonl"))
	if n := strings.Count(string(b), `"op":"reset"`); n != 1 || strings.Count(string(b), `"op":"add"`) != 6 {
		t.Fatalf("journal: %d resets:\n%s", n, b)
	}
	before := len(b)
	env.a.saveSession(env.a.ModelName) // nothing changed: no write
	if b2, _ := os.ReadFile(filepath.Join(env.dir, "agents", "sessions", "last.jsonl")); len(b2) != before {
		t.Fatal("an unchanged conversation was written again")
	}
	for round := 0; round < 5; round++ {
		dir := t.TempDir()
		crashOnce(t, "journal", dir)
		ws, err := openWorkspace(dir)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := configfile.Load(ws.Tree)
		a := newAgent(ws, cf, newLineReader(strings.NewReader("")), io.Discard, io.Discard)
		n, _, err := a.resumeSession()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, m := range a.History[1:] {
			want := fmt.Sprintf("question %d %s", i/2, strings.Repeat("q", (i/2)%500))
			if i%2 == 1 {
				want = fmt.Sprintf("answer %d %s", i/2, strings.Repeat("a", 4000))
			}
			if m.Content != want {
				t.Fatalf("round %d: message %d of %d differs", round, i, n)
			}
		}
		ws.Close()
	}
}
