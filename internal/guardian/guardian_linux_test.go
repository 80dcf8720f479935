//go:build linux

// Feature: the session's guardian (issue 75). The test binary plays both:
// started with guardRole, it is the harvey a shell starts (Main); its
// child, the session, plays sessionRole. The session leaves processes, a
// private directory, a process it keeps on purpose and a journaled change
// to .git, then dies as the OOM killer ends it; the guardian ends what it
// left (not what it kept), runs the check, removes the directory, says so,
// and exits 137. SIGTERM to the guardian reaches the session, which ends as
// it likes.
package guardian

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/outputstore"
)

const (
	guardRole   = "HARVEY_TEST_GUARD"   // this process is the guardian
	sessionRole = "HARVEY_TEST_SESSION" // what the session does
)

func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(envKey); ok {
		os.Exit(session(os.Getenv(sessionRole)))
	}
	if os.Getenv(guardRole) != "" {
		code, ok := Main()
		if !ok {
			fmt.Fprintln(os.Stderr, "no guardian")
			os.Exit(99)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// session plays the session's part of role.
func session(role string) int {
	g := Guarded()
	if g == 0 || os.Getenv(envKey) != "" {
		fmt.Println("not guarded, or the mark is still in the environment")
		return 2
	}
	tag := os.Getenv("TAG")
	switch role {
	case "killed":
		// A tree that would outlive it: a child, and a setsid grandchild.
		left := exec.Command("sh", "-c", "setsid sh -c 'sleep 600; : "+tag+"' & sleep 600; : "+tag)
		left.Start()
		kept := exec.Command("sh", "-c", "sleep 600; : kept-"+tag)
		kept.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		kept.Start()
		Keep(kept.Process.Pid)
		os.MkdirAll(filepath.Join(os.TempDir(), datadir.TempPrefix("tmp")+"x", "file"), 0o700)
		// The session's kept outputs (read_output), in its runtime directory.
		outputstore.New().Command("go test ./...").Write([]byte("FAIL: kept\n"))
		ws := os.Getenv("WS")
		guard.Command(ws, "a hostile job") // journaled, never checked here
		exec.Command("git", "-C", ws, "config", "core.fsmonitor", "/tmp/planted").Run()
		fmt.Printf("kept %d\n", kept.Process.Pid)
		time.Sleep(200 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "term":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		fmt.Println("ready")
		<-sigs
		fmt.Println("ended on SIGTERM")
		return 0
	case "exit":
		return 7
	}
	return 0
}

func guardian(t *testing.T, role string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{guardRole + "=1", sessionRole + "=" + role}, env...)...)
	return cmd
}

func TestGuardianEndsWhatAKilledSessionLeft(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws, tmp, data := t.TempDir(), t.TempDir(), t.TempDir()
	if out, err := exec.Command("git", "-C", ws, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	before, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
	tag := fmt.Sprintf("guardian-test-%d", time.Now().UnixNano())
	cmd := guardian(t, "killed", "TAG="+tag, "WS="+ws, "TMPDIR="+tmp, "XDG_DATA_HOME="+data, "XDG_RUNTIME_DIR="+tmp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 137 {
		t.Fatalf("exit %v: %s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "the session was ended by SIGKILL; the 4 processes it left were ended") ||
		!strings.Contains(errb.String(), "a hostile job") || !strings.Contains(errb.String(), "1 change undone") {
		t.Errorf("the guardian did not say what it did:\n%s", errb.String())
	}
	if ps := pgrep(tag); len(ps) != 1 {
		t.Errorf("processes of the session left, or the kept one ended: %v", ps)
	}
	var kept int
	fmt.Sscanf(out.String(), "kept %d", &kept)
	if kept == 0 || !alive(kept) {
		t.Errorf("the process the session kept (%d) was ended", kept)
	}
	syscall.Kill(kept, syscall.SIGKILL)
	if after, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); !bytes.Equal(after, before) {
		t.Errorf(".git/config was not put back:\n%s", after)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "harvey-*")); len(left) > 0 {
		t.Errorf("private directories left: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(data, "harvey", "pending", "*")); len(left) > 0 {
		t.Errorf("journals left: %v", left)
	}
}

func TestGuardianPassesSIGTERMAndTheExitStatus(t *testing.T) {
	cmd := guardian(t, "term")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Process.Kill()
		t.Fatalf("the session never started: %q", lines.Text())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if !lines.Scan() || lines.Text() != "ended on SIGTERM" {
		t.Errorf("the session did not hear SIGTERM: %q", lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the guardian: %v", err)
	}
	if code := exitOf(guardian(t, "exit").Run()); code != 7 {
		t.Errorf("the session's exit status 7 came back as %d", code)
	}
}

func exitOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return 0
}

// pgrep lists the processes whose command line holds s.
func pgrep(s string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(s)) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
