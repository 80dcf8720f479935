//go:build linux

package sandbox

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The signal filter as a command meets it: from a thread confined with it
// (this test process plays both the launcher and Harvey), a shell cannot
// signal the test process by its pid, by any of its threads' ids, or by a
// file it owns with a lethal F_SETSIG, nor a program of Harvey's that is
// no command (another job's launcher), by its pid or its group; it can
// still signal a process of its own and an unrelated one, and choose a
// real-time signal for a file.
// Without the supervisor, every thread-id kill below would end the test.
func TestSignalFilterRefusesEveryId(t *testing.T) {
	if len(sigArches) == 0 {
		t.Skip("no seccomp numbers for this architecture")
	}
	// A program of Harvey's that is no command (another job's launcher, the
	// spare): under Harvey, outside the protected groups.
	mine := exec.Command("sleep", "30")
	mine.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	defer mine.Process.Kill()
	// An unrelated process: its parent gone, it is not under Harvey.
	unrelated := exec.Command("sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!")
	unrelated.SysProcAttr = &unix.SysProcAttr{Setpgid: true} // outside the protected groups
	b, err := unrelated.Output()
	if err != nil {
		t.Fatal(err)
	}
	otherPid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	defer unix.Kill(otherPid, unix.SIGKILL)
	var threads []string
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", os.Getpid()))
	for _, task := range tasks {
		if task.Name() != strconv.Itoa(os.Getpid()) {
			threads = append(threads, task.Name())
		}
	}
	if len(threads) == 0 {
		t.Fatal("a Go test process with one thread")
	}
	// Signal 0 asks the kernel whether the signal would be delivered:
	// refused is EPERM, allowed is 0. The thread-id kills use SIGKILL
	// (were one let through, the test would die, which fails it too).
	script := fmt.Sprintf(`
n=0; for tid in %s; do kill -9 $tid 2>/dev/null && n=$((n+1)); done; echo thread-kills=$n
kill -0 %d 2>/dev/null; echo pid=$?
kill -0 %d 2>/dev/null; echo other=$?
kill -0 %d 2>/dev/null; echo mine=$?
kill -0 -%d 2>/dev/null; echo mine-group=$?
sleep 5 & kill -0 $! 2>/dev/null; echo own=$?; kill $!
command -v python3 >/dev/null || { echo fcntl-lethal=1 fcntl-rt=0; exit 0; }
python3 -c '
import fcntl, os
r, w = os.pipe()
fcntl.fcntl(r, fcntl.F_SETOWN, %d)
for name, sig in (("lethal", 9), ("rt", 40)):
    try:
        fcntl.fcntl(r, 10, sig); print("fcntl-%%s=0" %% name)
    except PermissionError:
        print("fcntl-%%s=1" %% name)
'
`, strings.Join(threads, " "), os.Getpid(), otherPid, mine.Process.Pid, mine.Process.Pid, os.Getpid())
	c := exec.Command("/bin/sh", "-c", script)
	c.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	out, err := runProtected(c, nil, 20*time.Second)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"thread-kills=0", "pid=1", "other=0", "mine=1", "mine-group=1", "own=0", "fcntl-lethal=1", "fcntl-rt=0"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("want %s:\n%s", want, out)
		}
	}
}

// runProtected runs c as a command's launcher would, forked from a thread
// of its own with no_new_privs and the filter (np: with the network's
// rules; this test process plays the launcher and Harvey), and returns
// what it printed.
func runProtected(c *exec.Cmd, np *netPolicy, within time.Duration) (string, error) {
	var buf strings.Builder
	c.Stdout, c.Stderr = &buf, &buf
	var err error
	onThreadOfItsOwn(func() {
		if err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return
		}
		if err = protectFromCommand(os.Getpid(), np); err != nil {
			return
		}
		err = c.Start()
	})
	if err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err = <-done:
	case <-time.After(within):
		c.Process.Kill()
		err = fmt.Errorf("the command hung")
	}
	return buf.String(), err
}

// Once a command and everything it started have ended, the kernel answers
// every receive on its filter's listener at once (ENOENT): the supervisor
// ends then, rather than spinning on a core until the launcher exits (it
// did, and a command's launcher cost a Landlock-only command about a
// quarter of its time). Its network supervisor (np) the same.
func TestSupervisorEndsWithItsCommand(t *testing.T) {
	if len(sigArches) == 0 {
		t.Skip("no seccomp numbers for this architecture")
	}
	for _, np := range []*netPolicy{nil, {session: netip.MustParseAddr("127.0.0.1")}} {
		before := supervisors.Load()
		c := exec.Command("/bin/sh", "-c", "sleep 0.1 & echo started")
		c.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
		out, err := runProtected(c, np, 20*time.Second)
		if err != nil || !strings.Contains(out, "started") {
			t.Fatalf("%v: %s", err, out)
		}
		deadline := time.Now().Add(5 * time.Second)
		for supervisors.Load() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := supervisors.Load(); n > before {
			t.Fatalf("network %v: %d supervisors still run 5 s after their command ended (%d before it)", np != nil, n, before)
		}
	}
}
