// Feature: no command outlives its check where commands have no PID
// namespace (issue 53): in Landlock-only mode a command that signals its
// launcher or Harvey is refused, one that runs past its timeout is ended
// with everything it started, and when a launcher dies anyway (the OOM
// killer, say) Harvey ends what it left. Each case leaves a setsid process
// that would, seconds later, write core.fsmonitor into .git/config (which
// the user's next git status runs) and touch a marker.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/kernelsim"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// lateWriter is a command that leaves a process behind: after delay it
// plants core.fsmonitor in .git/config and touches marker.
func lateWriter(marker string, delay int) string {
	return fmt.Sprintf("setsid sh -c 'sleep %d; git config core.fsmonitor /tmp/planted-%s; touch %s' > /dev/null 2>&1 < /dev/null &", delay, filepath.Base(marker), marker)
}

func TestEndToEndLandlockOnlyNoSurvivors(t *testing.T) {
	simulated(t)
	bin := Build(t)
	kernel := string(kernelsim.NoUserNS)
	// Linux 6.12's Landlock (ABI 6) scopes signals to the command's own
	// domain; Ubuntu 24.04's 6.8 (ABI 4) and 6.10 (ABI 5) do not, and
	// there the launcher's seccomp filter alone refuses them.
	for _, abi := range []string{"", "4", "5"} {
		t.Run("signals-abi"+abi, func(t *testing.T) {
			t.Parallel()
			f := newModeFixture(t)
			f.env = append(f.env, "HARVEY_TEST_LANDLOCK_ABI="+abi)
			testSignalsRefused(t, bin, kernel, f)
		})
	}
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		f := newModeFixture(t)
		config := f.gitConfig(t)
		marker := filepath.Join(f.root, "timeout-marker")
		fo := fakeollama.New(t, "llama3.2:latest")
		fo.Script(fakeollama.ToolReply("llama3.2",
			fakeollama.Call{ID: "slow", Name: "run_command", Args: map[string]any{"command": lateWriter(marker, 3) + " sleep 60", "timeout": 1}},
		), fakeollama.TextReply("llama3.2", "Done."))
		start := time.Now()
		out, errOut, code := RunKernel(t, kernel, bin, f.dir, "", f.env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
		if code != 0 || !strings.Contains(out, "Done.") {
			t.Fatalf("exit %d: %s\n%s", code, out, errOut)
		}
		if r := fakeollama.ToolResults(fo.ChatRequests())["slow"]; !strings.Contains(r, "timed out") {
			t.Errorf("not timed out: %q", r)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("the turn took %s", d)
		}
		f.noSurvivor(t, marker, config, 4)
	})
	t.Run("launcher-dies", func(t *testing.T) {
		t.Parallel()
		f := newModeFixture(t)
		config := f.gitConfig(t)
		marker := filepath.Join(f.root, "dies-marker")
		ready := filepath.Join(f.dir, "ready")
		fo := fakeollama.New(t, "llama3.2:latest")
		fo.Script(fakeollama.ToolReply("llama3.2",
			fakeollama.Call{ID: "long", Name: "run_command", Args: map[string]any{"command": lateWriter(marker, 3) + " touch ready; sleep 60", "timeout": 120}},
		), fakeollama.TextReply("llama3.2", "Done."))
		w, out, errb := startUntilReady(t, bin, kernel, f, fo, ready)
		// What the OOM killer would do: the launcher is gone, its command
		// and the setsid child are not. (Harvey's spare launcher, waiting
		// for the next command, has no child.)
		var launchers []int
		for _, l := range childrenWith(sessionOf(t, w.Process.Pid), "__harvey_sandbox") {
			if len(childrenWith(l, "")) > 0 {
				launchers = append(launchers, l)
			}
		}
		if len(launchers) != 1 {
			w.Process.Kill()
			t.Fatalf("launchers of Harvey: %v", launchers)
		}
		syscall.Kill(launchers[0], syscall.SIGKILL)
		killed := time.Now()
		if err := w.Wait(); err != nil {
			t.Fatalf("%v: %s\n%s", err, out.String(), errb.String())
		}
		// Harvey ends what the launcher left at once: it does not wait for
		// the command (sleep 60) to end by itself.
		if d := time.Since(killed); d > 20*time.Second {
			t.Errorf("Harvey ended %s after its launcher was killed", d)
		}
		f.noSurvivor(t, marker, config, 4)
	})
}

// startUntilReady starts Harvey headless under kernel in f's workspace with
// fo as its model, and returns once its command has made ready (the
// command runs on), with its output so far.
func startUntilReady(t *testing.T, bin, kernel string, f *modeFixture, fo *fakeollama.Server, ready string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
	cmd.Dir = f.dir
	cmd.Env = append(append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST="), f.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	w := UnderKernel(kernel, cmd)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return w, &out, &errb
		}
		if time.Now().After(deadline) {
			w.Process.Kill()
			t.Fatalf("the command never started: %s\n%s", out.String(), errb.String())
		}
	}
}

// gitConfig is the workspace's .git/config as it is now.
func (f *modeFixture) gitConfig(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noSurvivor waits past the late writer's delay and checks that it never
// ran: no marker, .git/config as it was, no process left, and the user's
// git status runs nothing.
func (f *modeFixture) noSurvivor(t *testing.T, marker string, config []byte, wait int) {
	t.Helper()
	WaitGone(t, filepath.Base(marker))
	time.Sleep(time.Duration(wait) * time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a process the command left ran after it")
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, ".git", "config")); !bytes.Equal(b, config) {
		t.Errorf(".git/config changed after the command:\n%s", b)
	}
	f.git(t, "status --short")
}

// sessionOf is the session that the harvey at pid, its guardian
// (internal/guardian), runs: its child that is no launcher.
func sessionOf(t *testing.T, guardian int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		for _, k := range childrenWith(guardian, "") {
			if cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k)); !bytes.Contains(cl, []byte("__harvey_sandbox")) {
				return k
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("harvey (pid %d) runs no session", guardian)
		}
	}
}

// childrenWith lists the children of pid whose command line contains token.
func childrenWith(pid int, token string) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			k, _ := strconv.Atoi(f)
			if cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k)); bytes.Contains(cl, []byte(token)) {
				out = append(out, k)
			}
		}
	}
	return out
}

// testSignalsRefused: a command signals its launcher, its launcher's
// group, Harvey and Harvey's group, by kill and by pidfd; every one is
// refused and what it left never runs.
func testSignalsRefused(t *testing.T, bin, kernel string, f *modeFixture) {
	config := f.gitConfig(t)
	marker := filepath.Join(f.root, "signals-marker")
	fo := fakeollama.New(t, "llama3.2:latest")
	harveyPid := `$(awk '{print $4}' /proc/$PPID/stat)`
	fo.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "job", Name: "run_command", Args: map[string]any{"command": "sleep 60", "background": true}}),
		// Every other launcher of the session (the job's, the spare) and its
		// group: a command ends only commands.
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "others", Name: "run_command", Args: map[string]any{"command": "h=$(awk '{print $4}' /proc/$PPID/stat); n=0; for p in $(pgrep -P $h -f __harvey_sandbox); do [ $p = $PPID ] && continue; n=$((n+1)); kill -9 $p 2>/dev/null && echo killed-$p; kill -9 -$p 2>/dev/null && echo killed-group-$p; done; echo tried=$n"}},
			fakeollama.Call{ID: "still", Name: "job_output", Args: map[string]any{"id": 1}}),
		fakeollama.ToolReply("llama3.2",
			fakeollama.Call{ID: "launcher", Name: "run_command", Args: map[string]any{"command": lateWriter(marker, 2) + " kill -9 $PPID; echo kill-launcher=$?; kill -STOP $PPID; echo stop-launcher=$?; kill -9 -$PPID; echo kill-group=$?; kill -9 0; echo survived"}},
			fakeollama.Call{ID: "harvey", Name: "run_command", Args: map[string]any{"command": "kill -9 " + harveyPid + "; echo kill-harvey=$?; kill -9 -$(awk '{print $5}' /proc/" + harveyPid + "/stat); echo kill-harvey-group=$?"}},
			// kill(2) of any thread's id signals its whole process.
			fakeollama.Call{ID: "threads", Name: "run_command", Args: map[string]any{"command": threadKills("launcher", "$PPID") + threadKills("harvey", harveyPid)}},
			fakeollama.Call{ID: "python", Name: "run_command", Args: map[string]any{"command": "command -v python3 >/dev/null || { echo no-python; exit 0; }; python3 -c 'import os,signal; p=os.getppid()\ntry:\n  os.kill(p, 9); print(\"killed\")\nexcept PermissionError: print(\"refused\")\ntry:\n  fd=os.pidfd_open(p); signal.pidfd_send_signal(fd, 9); print(\"pidfd-killed\")\nexcept OSError as e: print(\"pidfd-refused\", e.errno)'"}},
		), fakeollama.TextReply("llama3.2", "Done."))
	out, errOut, code := RunKernel(t, kernel, bin, f.dir, "", f.env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
	if code != 0 || !strings.Contains(out, "Done.") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	res := fakeollama.ToolResults(fo.ChatRequests())
	if r := res["others"]; strings.Contains(r, "killed") || strings.Contains(r, "tried=0") {
		t.Errorf("a command reached another launcher of the session: %q", r)
	}
	if r := res["still"]; !strings.Contains(r, "job 1 running") {
		t.Errorf("the job did not survive the command: %q", r)
	}
	for _, want := range []string{"kill-launcher=1", "stop-launcher=1", "kill-group=1"} {
		if !strings.Contains(res["launcher"], want) {
			t.Errorf("want %s: %q", want, res["launcher"])
		}
	}
	for _, want := range []string{"kill-harvey=1", "kill-harvey-group=1"} {
		if !strings.Contains(res["harvey"], want) {
			t.Errorf("want %s: %q", want, res["harvey"])
		}
	}
	for _, who := range []string{"launcher", "harvey"} {
		if !strings.Contains(res["threads"], who+"-thread-kills=0 of ") || strings.Contains(res["threads"], who+"-thread-kills=0 of 0\n") {
			t.Errorf("%s's threads: %q", who, res["threads"])
		}
	}
	if r := res["python"]; !strings.Contains(r, "no-python") && (!strings.Contains(r, "refused") || strings.Contains(r, "killed")) {
		t.Errorf("python's kill and pidfd_send_signal: %q", r)
	}
	f.noSurvivor(t, marker, config, 3)
}

// threadKills is a shell line that sends SIGKILL to every thread of
// process pid but its leader, and says how many kills went through of how
// many threads it tried.
func threadKills(who, pid string) string {
	return `p=` + pid + `; n=0; m=0; for tid in $(ls /proc/$p/task); do [ "$tid" = "$p" ] && continue; m=$((m+1)); kill -9 $tid 2>/dev/null && n=$((n+1)); done; echo ` + who + `-thread-kills=$n of $m; `
}

// Landlock only: a command that replaces agents/ with a link into the
// workspace (where commands write) gets agents/ back as Harvey's own
// directory, its files restored, and the result says so.
func TestEndToEndLandlockOnlyAgentsLink(t *testing.T) {
	simulated(t)
	bin := Build(t)
	f := newModeFixture(t)
	os.MkdirAll(filepath.Join(f.dir, "agents"), 0o700)
	WriteFile(t, f.dir, "agents/notes.md", "Harvey's own notes\n")
	fo := fakeollama.New(t, "llama3.2:latest")
	fo.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "link", Name: "run_command", Args: map[string]any{"command": "mkdir -p elsewhere && mv agents agents.old && ln -s elsewhere agents && echo 'model: planted' > agents/harvey.yaml && echo linked"}},
	), fakeollama.TextReply("llama3.2", "Done."))
	out, errOut, code := RunKernel(t, string(kernelsim.NoUserNS), bin, f.dir, "", f.env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
	if code != 0 || !strings.Contains(out, "Done.") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	r := fakeollama.ToolResults(fo.ChatRequests())["link"]
	if !strings.Contains(r, "linked") || !strings.Contains(r, "replaced with a link agents/") {
		t.Errorf("the result does not say agents/ was put back: %q", r)
	}
	fi, err := os.Lstat(filepath.Join(f.dir, "agents"))
	if err != nil || !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("agents/ is not a directory again: %v %v", fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(f.dir, "agents", "notes.md")); err != nil || string(b) != "Harvey's own notes\n" {
		t.Errorf("agents/notes.md not restored: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "agents", "harvey.yaml")); err == nil {
		t.Error("the config written through the link is in agents/")
	}
}

// The check is durable: Harvey and its guardian both killed at once while
// a command that planted core.fsmonitor still runs leave a journal, and the
// next harvey sandbox in that workspace undoes the change and says so
// before anything else. (Harvey alone killed: its guardian runs the check,
// TestEndToEndWhateverEndsHarvey.)
func TestEndToEndCheckSurvivesHarvey(t *testing.T) {
	simulated(t)
	bin := Build(t)
	f := newModeFixture(t)
	config := f.gitConfig(t)
	data := filepath.Join(f.root, "data")
	f.env = append(f.env, "XDG_DATA_HOME="+data)
	fo := fakeollama.New(t, "llama3.2:latest")
	fo.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "plant", Name: "run_command", Args: map[string]any{"command": "git config core.fsmonitor /tmp/planted-durable && touch ready && sleep 60", "timeout": 120}},
	), fakeollama.TextReply("llama3.2", "Done."))
	w, _, _ := startUntilReady(t, bin, string(kernelsim.NoUserNS), f, fo, filepath.Join(f.dir, "ready"))
	// Stopped first, the session cannot run its own end when its guardian
	// dies (the parent-death signal waits); then both are killed.
	session := sessionOf(t, w.Process.Pid)
	syscall.Kill(session, syscall.SIGSTOP)
	w.Process.Kill()
	for alive(w.Process.Pid) {
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(session, syscall.SIGKILL)
	w.Wait()
	if b, _ := os.ReadFile(filepath.Join(f.dir, ".git", "config")); !strings.Contains(string(b), "fsmonitor") {
		t.Fatalf("the command did not plant core.fsmonitor:\n%s", b)
	}
	WaitGone(t, "planted-durable")
	out, errOut, code := RunKernel(t, string(kernelsim.NoUserNS), bin, f.dir, "", f.env, "sandbox")
	if code != 0 || !strings.HasPrefix(out, "[harvey: Harvey stopped while a command ran") || !strings.Contains(out, "config") {
		t.Errorf("harvey sandbox did not run and report the check first: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, ".git", "config")); !bytes.Equal(b, config) {
		t.Errorf(".git/config is still changed:\n%s", b)
	}
	if left, _ := filepath.Glob(filepath.Join(data, "harvey", "pending", "*")); len(left) > 0 {
		t.Errorf("journals left: %v", left)
	}
	f.git(t, "status --short")
}

// Landlock only: Harvey keeps a launcher started ahead for the next
// command (sandbox.StartSpared). While a command runs, that spare waits
// beside its launcher with no child, not dumpable (a command of the same
// user cannot trace it or read its memory); when Harvey is killed, the
// spare, the launcher and what the command left all end, and the user's
// next git finds nothing planted.
func TestEndToEndLandlockOnlySpareLauncher(t *testing.T) {
	simulated(t)
	bin := Build(t)
	f := newModeFixture(t)
	config := f.gitConfig(t)
	marker := filepath.Join(f.root, "spare-marker")
	ready := filepath.Join(f.dir, "ready")
	fo := fakeollama.New(t, "llama3.2:latest")
	fo.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "first", Name: "run_command", Args: map[string]any{"command": "echo first"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "long", Name: "run_command", Args: map[string]any{"command": lateWriter(marker, 3) + " touch ready; sleep 60", "timeout": 120}}),
		fakeollama.TextReply("llama3.2", "Done."))
	w, _, _ := startUntilReady(t, bin, string(kernelsim.NoUserNS), f, fo, ready)
	defer w.Process.Kill()
	if r := fakeollama.ToolResults(fo.ChatRequests())["first"]; !strings.Contains(r, "first") {
		t.Fatalf("the first command: %q", r)
	}
	var running, waiting []int
	deadline := time.Now().Add(5 * time.Second)
	for len(waiting) == 0 && time.Now().Before(deadline) {
		running, waiting = nil, nil
		for _, l := range childrenWith(sessionOf(t, w.Process.Pid), "__harvey_sandbox") {
			if len(childrenWith(l, "")) > 0 {
				running = append(running, l)
			} else {
				waiting = append(waiting, l)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(running) != 1 || len(waiting) != 1 {
		t.Fatalf("launchers of Harvey: running a command %v, waiting %v", running, waiting)
	}
	spare := waiting[0]
	if os.Getuid() != 0 {
		// Not dumpable: its /proc files are root's, not the user's. A spare
		// seen the moment it was started may not have made itself so yet
		// (the Go runtime starts first): it must within a second.
		var st syscall.Stat_t
		var err error
		for end := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
			if err = syscall.Stat(fmt.Sprintf("/proc/%d/mem", spare), &st); (err == nil && st.Uid == 0) || time.Now().After(end) {
				break
			}
		}
		if err != nil || st.Uid != 0 {
			t.Errorf("the waiting spare's memory is the user's to read (owner %d, %v)", st.Uid, err)
		}
	}
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()
	for _, pid := range []int{spare, running[0]} {
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("launcher %d outlived Harvey", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	f.noSurvivor(t, marker, config, 4)
}

// alive reports whether pid is a process that has not ended (a zombie
// has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// Landlock only, a job that rewrites core.fsmonitor while it runs (issue
// 75): where .git is writable to commands, the job's check runs while it
// runs; the change is undone within a second each time, the job is named
// to the user and in what the model reads, and a job that does it again is
// stopped. .git/config ends as it was.
func TestEndToEndLandlockOnlyJobCannotKeepGitChanged(t *testing.T) {
	simulated(t)
	bin := Build(t)
	f := newModeFixture(t)
	config := f.gitConfig(t)
	cfgPath := filepath.Join(f.dir, ".git", "config")
	fo := fakeollama.New(t, "llama3.2:latest")
	fo.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "job", Name: "run_command", Args: map[string]any{"command": "while :; do git config core.fsmonitor /tmp/planted-by-job; touch ready; sleep 0.2; done", "background": true}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "wait", Name: "run_command", Args: map[string]any{"command": "sleep 4"}},
			fakeollama.Call{ID: "read", Name: "job_output", Args: map[string]any{"id": 1}}),
		fakeollama.TextReply("llama3.2", "Done."))
	w, _, errb := startUntilReady(t, bin, string(kernelsim.NoUserNS), f, fo, filepath.Join(f.dir, "ready"))
	// Watch .git/config: a planted line never stays a second.
	var since time.Time
	longest := time.Duration(0)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(cfgPath)
		switch planted := strings.Contains(string(b), "planted-by-job"); {
		case planted && since.IsZero():
			since = time.Now()
		case !planted && !since.IsZero():
			longest, since = max(longest, time.Since(since)), time.Time{}
		}
	}
	if !since.IsZero() {
		longest = max(longest, time.Since(since))
	}
	if longest >= time.Second {
		t.Errorf("the job's core.fsmonitor stood %s", longest)
	}
	if err := w.Wait(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "⚑ while job 1 ran, .git or agents/ changed") || !strings.Contains(errb.String(), "job 1 did it again and is stopped") {
		t.Errorf("the user was not told which job, or it was not stopped:\n%s", errb.String())
	}
	// What the model read of the job (its start's first second, its
	// output after) says it, and that it was stopped.
	res := fakeollama.ToolResults(fo.ChatRequests())
	if r := res["job"] + res["read"]; !strings.Contains(r, "while job 1 ran, .git or agents/ changed") || !strings.Contains(r, "stopped") {
		t.Errorf("the model was not told: %q", r)
	}
	if b, _ := os.ReadFile(cfgPath); !bytes.Equal(b, config) {
		t.Errorf(".git/config changed:\n%s", b)
	}
}
