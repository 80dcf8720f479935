//go:build linux

package kernelsim

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// TestMain: started with KERNELSIM_EXEC=K, the test binary puts itself
// under kernel K's filter and runs itself again as KERNELSIM_REPORT, which
// says what the kernel answered.
func TestMain(m *testing.M) {
	if k := os.Getenv("KERNELSIM_EXEC"); k != "" {
		os.Unsetenv("KERNELSIM_EXEC")
		err := Exec(Kernel(k), os.Args[:1], append(os.Environ(), "KERNELSIM_REPORT=1"))
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	if os.Getenv("KERNELSIM_REPORT") != "" {
		report()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// report prints what Landlock's probe and a new user namespace answer.
func report() {
	_, err := llsys.LandlockGetABIVersion()
	os.Stdout.WriteString("landlock=" + errName(err) + "\n")
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &unix.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
	os.Stdout.WriteString("userns=" + errName(cmd.Run()) + "\n")
	cmd = exec.Command("/bin/true")
	os.Stdout.WriteString("plain=" + errName(cmd.Run()) + "\n")
}

func errName(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, unix.ENOSYS):
		return "ENOSYS"
	case errors.Is(err, unix.EPERM):
		return "EPERM"
	}
	return err.Error()
}

// Each kernel answers as it should, and only where it should: a process
// without CLONE_NEWUSER still starts.
func TestFilterAnswers(t *testing.T) {
	if _, err := Filter(NoLandlock); err != nil {
		t.Skip(err)
	}
	real := run(t, "")
	if !strings.Contains(real, "landlock=ok") || !strings.Contains(real, "userns=ok") {
		t.Skipf("this kernel itself lacks Landlock or user namespaces:\n%s", real)
	}
	for k, want := range map[Kernel][]string{
		NoLandlock: {"landlock=ENOSYS", "userns=ok", "plain=ok"},
		NoUserNS:   {"landlock=ok", "userns=EPERM", "plain=ok"},
		Neither:    {"landlock=ENOSYS", "userns=EPERM", "plain=ok"},
	} {
		out := run(t, k)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: want %s in\n%s", k, w, out)
			}
		}
	}
}

func run(t *testing.T, k Kernel) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	if k == "" {
		cmd.Env = append(os.Environ(), "KERNELSIM_REPORT=1")
	} else {
		cmd.Env = append(os.Environ(), "KERNELSIM_EXEC="+string(k))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", k, err, out)
	}
	return string(out)
}
