//go:build linux

package sandbox

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stderrOf runs f with os.Stderr captured (the launcher says its refusals
// there).
func stderrOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = saved }()
	got := make(chan string)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	f()
	w.Close()
	os.Stderr = saved
	return <-got
}

// A command that cannot start ends as a shell's would: 126 for a program
// it may not execute or a directory it cannot enter, 127 for one that is
// not there, each with one line naming it.
func TestStartErrorsAreTheShellsStatuses(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "notes.txt")
	os.WriteFile(plain, []byte("not a program\n"), 0o644)
	cases := []struct {
		argv []string
		dir  string
		code int
		says string
	}{
		{[]string{plain}, dir, 126, "not allowed to execute here"},
		{[]string{filepath.Join(dir, "missing")}, dir, 127, "no such file or directory"},
		{[]string{"/bin/true"}, filepath.Join(dir, "gone"), 126, "chdir"},
	}
	for _, c := range cases {
		cmd := exec.Command(c.argv[0])
		cmd.Dir = c.dir
		err := cmd.Start()
		if err == nil {
			cmd.Wait()
			t.Fatalf("%v started", c.argv)
		}
		var code int
		said := stderrOf(t, func() { code = startError(Spec{Argv: c.argv}, err) })
		if code != c.code || !strings.Contains(said, c.says) || strings.Count(said, "\n") != 1 {
			t.Errorf("%v in %s: exit %d, said %q", c.argv, c.dir, code, said)
		}
	}
	if startError(Spec{}, nil) != 0 {
		t.Error("a start that worked is an error")
	}
}

// The program is looked up in the command's own PATH, as its shell would:
// not Harvey's, no relative entries (a repository's ./bin), executables
// only.
func TestLookPathInUsesTheCommandsPath(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(a, "tool"), []byte("data"), 0o644)
	os.WriteFile(filepath.Join(b, "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.Mkdir(filepath.Join(b, "dir"), 0o755)
	env := []string{"HOME=/h", "PATH=bin:" + a + "::" + b}
	if got := lookPathIn("tool", env); got != filepath.Join(b, "tool") {
		t.Errorf("tool: %q", got)
	}
	for _, prog := range []string{"dir", "nothere", "./tool", "/usr/bin/env"} {
		if got := lookPathIn(prog, env); got != prog {
			t.Errorf("%s: %q", prog, got)
		}
	}
	if got := lookPathIn("tool", []string{"HOME=/h"}); got != "tool" {
		t.Errorf("no PATH: %q", got)
	}
}

// A git configuration a command creates where there was none (.git/config
// of a repository that had none, a commondir) is removed after it, and
// said; one that was there before is the read-only mount's, not this
// check's; hooks/ is made before the command.
func TestNewGitFilesAreRemovedAfterTheCommand(t *testing.T) {
	git := filepath.Join(t.TempDir(), ".git")
	os.MkdirAll(git, 0o755)
	os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	protected := []string{filepath.Join(git, "HEAD"), filepath.Join(git, "config"), filepath.Join(git, "commondir"), filepath.Join(git, "hooks")}
	watched := newFiles(protected)
	if strings.Join(watched, ",") != filepath.Join(git, "config")+","+filepath.Join(git, "commondir") {
		t.Fatalf("watched %v", watched)
	}
	os.WriteFile(filepath.Join(git, "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
	said := stderrOf(t, func() { removeNewFiles(watched) })
	if _, err := os.Lstat(filepath.Join(git, "config")); err == nil {
		t.Error("the config the command made is still there")
	}
	if !strings.Contains(said, "removed "+filepath.Join(git, "config")) || strings.Contains(said, "commondir") {
		t.Errorf("said %q", said)
	}
	if _, err := os.Stat(filepath.Join(git, "HEAD")); err != nil {
		t.Error("a file that was there before went")
	}
}

// The launcher refuses to run a command it cannot confine, and an inner
// stage that is not in namespaces of its own, saying so; it never runs
// the command unconfined.
func TestLaunchStageRefusesWhatItCannotConfine(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		says string
	}{
		{Spec{NoNS: true, NoLandlock: true, Argv: []string{"true"}}, "nothing to confine the command with"},
		{Spec{Inner: true, Argv: []string{"true"}}, "not in namespaces of its own"},
	} {
		var code int
		var done bool
		said := stderrOf(t, func() { code, done = launchStage(c.spec) })
		if code != 126 || !done || !strings.Contains(said, c.says) {
			t.Errorf("%+v: %d %v %q", c.spec, code, done, said)
		}
	}
	if _, done := launchStage(Spec{NoNS: true, Argv: []string{"true"}}); done {
		t.Error("Landlock alone was not left to confine the command in this process")
	}
}

// Relay carries a tunnel both ways until each side ends (the bytes read
// before it began first), then closes both: the proxy's CONNECT and a
// published port are whole, and end.
func TestRelayCarriesBothWaysAndEnds(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() { // the upstream: reads to the end, then answers what it got
		c, err := up.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		c.Write([]byte("got " + string(b)))
		c.Close()
	}()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	relayed := make(chan struct{})
	go func() {
		client, err := front.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", up.Addr().String())
		if err != nil {
			client.Close()
			return
		}
		Relay(client, io.MultiReader(strings.NewReader("early "), client), u)
		close(relayed)
	}()
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("late"))
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if string(b) != "got early late" || err != nil {
		t.Errorf("relayed %q %v", b, err)
	}
	select {
	case <-relayed:
	case <-time.After(10 * time.Second):
		t.Error("Relay did not end with its two sides")
	}
}

// An installer home the user cannot read (another account's PYENV_ROOT,
// inherited through su: here root's home) is left out of the command's
// view in every mode: the command runs, and cannot read it. As root
// every tree is readable; .ci/as-user runs this as an ordinary account.
func TestLauncherSkipsATreeYouCannotRead(t *testing.T) {
	s := Available()
	if !s.Enforced() {
		t.Skip("no sandbox here: " + s.Why)
	}
	locked := "/root/.pyenv" // EACCES to open, whether it is there or not
	if _, err := os.Stat(locked); !errors.Is(err, os.ErrPermission) {
		t.Skipf("%s is not out of reach here (root, or a home left open): %v", locked, err)
	}
	ws := t.TempDir()
	for _, noNS := range []bool{false, true} {
		if !noNS && !s.NS || noNS && s.Landlock == 0 {
			continue
		}
		spec := Spec{Dir: ws, Workspace: ws, RW: []string{ws}, RO: []string{"/usr", "/bin", "/lib", "/lib64", "/etc", locked}, NoNS: noNS}
		out, _ := run(t, spec, "echo ran; ls -A "+locked+" | head -3")
		if !strings.HasPrefix(out, "ran\n") || strings.Contains(out, "harvey sandbox") {
			t.Errorf("without namespaces %v: %q", noNS, out)
		}
		if rest := strings.TrimPrefix(out, "ran\n"); rest != "" && !strings.Contains(rest, "ermission denied") && !strings.Contains(rest, "No such file") {
			t.Errorf("without namespaces %v, the command listed %s: %q", noNS, locked, rest)
		}
	}
}
