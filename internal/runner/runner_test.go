// Child processes: their process group, the command policy of safe mode.
package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunnerKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	res := RunArgv(context.Background(), dir, []string{"sh", "-c", "sleep 30 & echo $! > pid; sleep 30"}, BaseEnv(), time.Second, 1000)
	if !res.TimedOut || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout not enforced: %+v in %s", res, time.Since(start))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pid"))
	pid := strings.TrimSpace(string(b))
	time.Sleep(100 * time.Millisecond)
	if pid != "" {
		// a zombie (killed, not yet reaped by init) counts as dead
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Fatalf("grandchild %s survived: %s", pid, st)
		}
	}
	// stdin is /dev/null: cat ends at once; output is capped while streaming.
	res = RunArgv(context.Background(), dir, []string{"cat"}, BaseEnv(), 5*time.Second, 1000)
	if res.TimedOut || res.ExitCode != 0 {
		t.Fatalf("cat: %+v", res)
	}
	res = RunArgv(context.Background(), dir, []string{"yes"}, BaseEnv(), 20*time.Second, 1000)
	if len(res.Output) != 1000 || !res.Flooded {
		t.Fatalf("yes: %d bytes, flooded %v", len(res.Output), res.Flooded)
	}
}

func TestSafeModePlan(t *testing.T) {
	p := CommandPolicy{SafeMode: true, Allowed: []string{"ls", "echo"}}
	if argv, err := p.Plan(`echo "a b"`); err != nil || len(argv) != 2 || argv[1] != "a b" {
		t.Fatalf("%v %v", argv, err)
	}
	for _, bad := range []string{"ls; rm -rf ~", "ls && curl x", "echo $(id)", "rm x", "cat < /etc/passwd", "/bin/ls"} {
		if _, err := p.Plan(bad); err == nil {
			t.Fatalf("%q allowed in safe mode", bad)
		}
	}
	p.SafeMode = false
	if argv, _ := p.Plan("echo hi | tr a-z A-Z"); argv[0] != "sh" {
		t.Fatalf("shell line: %v", argv)
	}
}
