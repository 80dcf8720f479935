// The path gate (internal/wspath) against hostile input: the bad-input suite of
// security.md, the read cap, slash commands and tools agreeing, a symlink
// swap race (the fuzz target is internal/wspath's FuzzResolve).
package harvey

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wsfile"
)

const secret = "TOPSECRET-7f3a9c"

// hostileWorkspace builds a workspace beside an "outside" directory holding a
// secret, with agents/harvey.yaml holding the secret too.
func hostileWorkspace(t *testing.T) (ws *Workspace, dir, outside string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o644)
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte("model: "+secret+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("fine\n"), 0o644)
	return ws, dir, outside
}

// snapshot returns the content of every file under dirs, to prove nothing changed.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	m := map[string]string{}
	for _, d := range dirs {
		filepath.Walk(d, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				m[p] = string(b)
			} else if err == nil {
				m[p] = info.Mode().String()
			}
			return nil
		})
	}
	return m
}

// The bad-input suite of security.md §9, for every path-taking operation.
func TestBadInputSuite(t *testing.T) {
	ws, dir, outside := hostileWorkspace(t)
	mk := func(f func()) func() { return f }
	setups := map[string]func(){
		"link-etc":  mk(func() { os.Symlink("/etc/passwd", filepath.Join(dir, "link-etc")) }),
		"link-up":   mk(func() { os.Symlink("../outside/secret.txt", filepath.Join(dir, "link-up")) }),
		"link-proc": mk(func() { os.Symlink("/proc/self/root/etc/passwd", filepath.Join(dir, "link-proc")) }),
		"loop":      mk(func() { os.Symlink("loop", filepath.Join(dir, "loop")) }),
		"dangling":  mk(func() { os.Symlink("../../.bashrc-harvey-test", filepath.Join(dir, "dangling")) }),
		"subtmp":    mk(func() { os.Symlink(outside, filepath.Join(dir, "subtmp")) }),
		"hard":      mk(func() { os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "hard")) }),
		"inner":     mk(func() { os.Symlink("agents/harvey.yaml", filepath.Join(dir, "inner")) }),
		"src": mk(func() {
			os.MkdirAll(filepath.Join(dir, "src"), 0o755)
			os.Symlink("../agents", filepath.Join(dir, "src", "cfg"))
		}),
		"fifo": mk(func() { syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644) }),
		"envfiles": mk(func() {
			os.WriteFile(filepath.Join(dir, ".env"), []byte(secret), 0o644)
			os.MkdirAll(filepath.Join(dir, "config"), 0o755)
			os.WriteFile(filepath.Join(dir, "config", ".env.production"), []byte(secret), 0o644)
			os.WriteFile(filepath.Join(dir, ".env.example"), []byte("X=1\n"), 0o644)
		}),
		"keys": mk(func() {
			os.WriteFile(filepath.Join(dir, "id_ed25519"), []byte(secret), 0o644)
			os.WriteFile(filepath.Join(dir, "server.PEM"), []byte(secret), 0o644)
		}),
		"envlink": mk(func() { os.Symlink(".env", filepath.Join(dir, "notes-env")) }),
		"privkey-note": mk(func() {
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"+secret+"\n-----END OPENSSH PRIVATE KEY-----\n"), 0o644)
		}),
		"ansi": mk(func() { os.WriteFile(filepath.Join(dir, "ansi.txt"), []byte("a\x1b]52;c;SGVsbG8=\x07b\x1b[2J"), 0o644) }),
	}
	for _, s := range setups {
		s()
	}
	before := snapshot(t, outside, filepath.Join(dir, "agents"))

	cases := []struct {
		path   string
		write  bool
		reason string // substring of the refusal; "" = allowed
	}{
		{"../x", false, "outside the workspace"},
		{"a/../../x", false, "outside the workspace"},
		{"/etc/passwd", false, "absolute paths"},
		{`C:\Windows\win.ini`, false, "absolute paths"},
		{`\\srv\share\x`, false, "absolute paths"},
		{"~/.ssh/id_rsa", false, "~ is not expanded"},
		{"", false, "empty"},
		{".", false, "is a directory"},
		{"a\x00b", false, "NUL"},
		{strings.Repeat("a", 5000), false, "too long"},
		{strings.Repeat("a", 300), false, "too long"},
		{strings.Repeat("a/", 3000) + "b", false, "too"},
		{strings.Repeat("a/", 100) + "b", false, "too deep"},
		{"link-etc", false, "symlink leads outside"},
		{"link-up", false, "symlink leads outside"},
		{"link-proc", false, "symlink leads outside"},
		{"loop", false, "too many levels"},
		{"dangling", true, "symlink leads outside"},
		{"subtmp/new.txt", true, "symlink leads outside"},
		{"hard", true, "hard links"},
		{"hard", false, "hard links"},
		{"agents/harvey.yaml", false, "agents/"},
		{"AGENTS/harvey.yaml", false, "agents/"},
		{"Agents/x", false, "agents/"},
		{"./agents//harvey.yaml", false, "agents/"},
		{"agents/./harvey.yaml", false, "agents/"},
		{"x/../agents/harvey.yaml", false, "agents/"},
		{"agents.", false, "agents/"},
		{"inner", false, "agents/"},
		{"inner", true, "agents/"},
		{"src/cfg/harvey.yaml", false, "agents/"},
		{"agents/new.yaml", true, "agents/"},
		{"agents", true, "agents/"},
		{".env", false, "secret file"},
		{".ENV", false, "secret file"},
		{"config/.env.production", false, "secret file"},
		{"id_ed25519", false, "secret file"},
		{"server.PEM", false, "secret file"},
		{".git-credentials", false, "secret file"},
		{".npmrc", false, "secret file"},
		{"creds.p12", false, "secret file"},
		{"notes-env", false, "secret file"},
		{".env.example", false, ""},
		{"fifo", false, "not a regular file"},
		{".git/config", true, ".git/"},
		{".git/hooks/pre-commit", true, ".git/"},
		{"ok.txt", false, ""},
		{"newdir/new.txt", true, ""},
	}
	for _, c := range cases {
		name := c.path
		if len(name) > 40 {
			name = name[:40]
		}
		op := "read"
		if c.write {
			op = "write"
		}
		t.Run(op+":"+name, func(t *testing.T) {
			done := make(chan struct{})
			var err error
			var text string
			go func() {
				defer close(done)
				if c.write {
					_, _, err = writeWorkspaceFile(ws, c.path, "pwned")
				} else {
					var rr *wsfile.Result
					rr, err = wsfile.Read(ws.Tree, c.path, 0, 0, 0)
					if rr != nil {
						text = rr.Text
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				t.Fatal("hung (FIFO?)")
			}
			if c.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("err = %v, want %q", err, c.reason)
			}
			if strings.Contains(text, secret) {
				t.Fatal("secret reached the result")
			}
		})
	}
	// Content sniffing redacts keys in ordinary files.
	rr, err := wsfile.Read(ws.Tree, "notes.txt", 0, 0, 0)
	if err != nil || strings.Contains(rr.Text, secret) || !strings.Contains(rr.Text, "[REDACTED secret]") {
		t.Fatalf("private key not redacted: %v %+v", err, rr)
	}
	// Terminal escapes are made harmless for display.
	rr, _ = wsfile.Read(ws.Tree, "ansi.txt", 0, 0, 0)
	if shown := termtext.Sanitize(rr.Text); strings.ContainsRune(shown, 0x1b) || strings.ContainsRune(shown, 0x07) {
		t.Fatalf("escape survived: %q", shown)
	}
	// Listing and searching never show agents/ or denied files.
	list, _, _ := wsfile.List(ws.Tree, ".", 0)
	if strings.Contains(list, "agents") {
		t.Fatalf("agents/ listed: %s", list)
	}
	hits, _, _ := searchWorkspace(context.Background(), ws, "TOPSECRET|model", ".", config.DefaultMaxOutputBytes)
	if strings.Contains(hits, secret) {
		t.Fatalf("search leaked: %s", hits)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "..", ".bashrc-harvey-test")); err == nil {
		t.Fatal("file created outside through a dangling link")
	}
	after := snapshot(t, outside, filepath.Join(dir, "agents"))
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("%s changed", k)
		}
	}
	if len(after) != len(before) {
		t.Fatalf("files appeared outside or in agents/: %v", after)
	}
}

// /read and read_file refuse the same inputs with the same message.
func TestSlashReadAndToolAgree(t *testing.T) {
	env := newTestEnv(t, nil, "")
	os.WriteFile(filepath.Join(env.dir, ".env"), []byte("A=1"), 0o644)
	for _, p := range []string{"../x", "agents/harvey.yaml", ".env", "missing.txt", "/etc/passwd"} {
		_, toolErr := invokeTool(env.a, "read_file", context.Background(), map[string]any{"path": p})
		cmdErr := env.a.Dispatch(context.Background(), "/read "+p, env.out)
		if toolErr == nil || cmdErr == nil || toolErr.Error() != cmdErr.Error() {
			t.Fatalf("%s: tool %v, command %v", p, toolErr, cmdErr)
		}
	}
}

// A symlink flipped between an inside and an outside target while read_file
// runs: zero outside reads.
func TestSymlinkSwapRace(t *testing.T) {
	t.Parallel()
	ws, dir, outside := hostileWorkspace(t)
	os.MkdirAll(filepath.Join(dir, "real"), 0o755)
	os.WriteFile(filepath.Join(dir, "real", "f"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(outside, "f"), []byte(secret), 0o644)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d := filepath.Join(dir, "d")
		tmp := filepath.Join(dir, "d.tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			target := "real"
			if i%2 == 1 {
				target = "../outside"
			}
			os.Symlink(target, tmp)
			os.Rename(tmp, d)
		}
	}()
	var leaks, reads atomic.Int64
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		rr, err := wsfile.Read(ws.Tree, "d/f", 0, 0, 0)
		if err == nil {
			reads.Add(1)
			if strings.Contains(rr.Text, secret) {
				leaks.Add(1)
			}
		}
	}
	close(stop)
	wg.Wait()
	if leaks.Load() != 0 {
		t.Fatalf("%d outside reads", leaks.Load())
	}
	t.Logf("%d successful inside reads, 0 outside", reads.Load())
}
