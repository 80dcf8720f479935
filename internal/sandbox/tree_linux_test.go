//go:build linux

// Feature: a whole tree of processes ends at once (EndTree), however deep or
// fast it forks (issue 75): a 3,000-deep chain, each process the parent of
// the next, and a loop that forks without end.
package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// treeHelperEnv makes the test binary a subreaper that starts a tree, ends
// it with EndTree and says what is left (endTreeHelper).
const treeHelperEnv = "HARVEY_TEST_ENDTREE"

// treeHelper runs endTreeHelper where the environment asks for it.
func treeHelper() (int, bool) {
	v, ok := os.LookupEnv(treeHelperEnv)
	if !ok {
		return 0, false
	}
	script, ready, _ := strings.Cut(v, "\x01")
	return endTreeHelper(script, ready), true
}

// endTreeHelper: become the subreaper, start sh -c script (its own
// session), wait for ready to exist, end the tree, and print how many it
// killed and how many processes are left under this one.
func endTreeHelper(script, ready string) int {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println("start:", err)
		return 1
	}
	go cmd.Wait()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("never ready")
			return 1
		}
	}
	before := len(treeUnder(os.Getpid(), nil))
	start := time.Now()
	killed := EndTree(nil)
	fmt.Printf("before=%d killed=%d left=%d in %s\n", before, killed, len(treeUnder(os.Getpid(), nil)), time.Since(start).Round(time.Millisecond))
	return 0
}

func runTreeHelper(t *testing.T, script, ready string) (before, killed, left int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), treeHelperEnv+"="+script+"\x01"+ready)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "before=") {
		t.Fatalf("helper: %v: %s", err, out)
	}
	if _, err := fmt.Sscanf(string(out), "before=%d killed=%d left=%d", &before, &killed, &left); err != nil {
		t.Fatalf("helper said %q: %v", out, err)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	return before, killed, left
}

// A chain of 1,200 processes, each the parent of the next: deeper than
// a loop that ends one level a round, bounded at 1,000 rounds, reached
// (the e2e tests end chains of 3,000 through the built binary).
func TestEndTreeEndsADeepChain(t *testing.T) {
	t.Parallel() // its shells take seconds to start
	dir := t.TempDir()
	const depth = 1200
	chain := filepath.Join(dir, "chain.sh")
	ready := filepath.Join(dir, "ready")
	// Each level starts the next and waits for it; the last says ready.
	os.WriteFile(chain, []byte(`n=$1
if [ "$n" -gt 0 ]; then sh "$0" $((n-1)) & wait; else touch `+ready+`; sleep 600; fi
`), 0o755)
	before, killed, left := runTreeHelper(t, fmt.Sprintf("sh %s %d", chain, depth), ready)
	if before < depth {
		t.Fatalf("the chain had %d processes, want %d", before, depth)
	}
	if left != 0 || killed < depth {
		t.Errorf("killed %d of %d, %d left", killed, before, left)
	}
}

// A loop that forks as fast as it can, each child forking on: the tree
// grows while it is ended.
func TestEndTreeEndsAForkingLoop(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	script := `(while :; do (sleep 600 &) ; sh -c 'sleep 600 & sleep 600' & done) & sleep 0.3; touch ` + ready + `; sleep 600`
	before, _, left := runTreeHelper(t, script, ready)
	if before < 10 {
		t.Fatalf("the loop forked only %d processes", before)
	}
	if left != 0 {
		t.Errorf("%d processes left of the forking loop", left)
	}
}

// Only the branches pick accepts end: a sibling it refuses lives on.
func TestEndTreeSparesWhatPickRefuses(t *testing.T) {
	keep := exec.Command("sleep", "60")
	if err := keep.Start(); err != nil {
		t.Fatal(err)
	}
	defer keep.Process.Kill()
	end := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	if err := end.Start(); err != nil {
		t.Fatal(err)
	}
	defer end.Process.Kill()
	time.Sleep(100 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- end.Wait() }()
	// EndTree reaps what it killed (end itself too): Wait returns either way.
	n := EndTree(func(pid int) bool { return pid == end.Process.Pid })
	if n < 3 {
		t.Errorf("killed %d, want end and its two sleeps", n)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the picked branch still runs")
	}
	if p, ok := statOf(keep.Process.Pid); !ok || p.state == 'Z' {
		t.Error("the branch pick refused was killed")
	}
}
