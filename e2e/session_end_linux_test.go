// Feature: nothing outlives Harvey, however it ends (issue 75). A job or a
// stdio MCP server plants a gitlink whose nested repository names a
// core.fsmonitor; Harvey is then ended as people end it — the terminal
// closed (SIGHUP to its process group), `kill` (SIGTERM), SIGKILL of the
// session (what the OOM killer does). Whichever: no process of the job is
// left, the index holds no gitlink, and the user's next git status runs
// nothing, in each kernel mode. SIGKILL leaves the end to the session's
// guardian, which says what it did.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/kernelsim"
	"github.com/harvey-agent/harvey/internal/ptytest"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// plantGitlink is a script that makes a nested repository sub whose config
// runs fsmon, puts it in the workspace's index as a gitlink, and says so
// (planted-TAG).
func plantGitlink(tag, fsmon string) string {
	return `mkdir -p sub && git -C sub init -q && git -C sub -c user.name=t -c user.email=t@t commit -q --allow-empty -m x && ` +
		`git -C sub config core.fsmonitor ` + fsmon + ` && git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub && touch planted-` + tag + "\n"
}

func TestEndToEndWhateverEndsHarvey(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	for _, kernel := range Kernels() {
		for _, end := range []string{"sighup", "sigterm", "sigkill"} {
			t.Run(kernel+"/job/"+end, func(t *testing.T) {
				t.Parallel()
				endHarvey(t, bin, kernel, "job", end)
			})
		}
		t.Run(kernel+"/server/sigkill", func(t *testing.T) {
			t.Parallel()
			endHarvey(t, bin, kernel, "server", "sigkill")
		})
	}
}

func endHarvey(t *testing.T, bin, kernel, planter, end string) {
	dir, gitEnv := GitFixture(t)
	tmp := t.TempDir()
	marker, fsmon := plantScript(t, tmp)
	tag := fmt.Sprintf("harvey-end-%d", time.Now().UnixNano())
	WriteFile(t, dir, "plant.sh", plantGitlink(tag, fsmon))
	// The planter lives on; its own command line names the tag.
	WriteFile(t, dir, tag+".sh", "sh plant.sh\nwhile :; do sleep 1; done\n")
	cfgHome := filepath.Join(tmp, "config")
	config := fmt.Sprintf("sandbox:\n  readable: [%q, %q]\n", filepath.Dir(os.Args[0]), tmp)
	f := fakeollama.New(t, "llama3.2:latest")
	var first fakeollama.Call
	switch planter {
	case "job":
		first = fakeollama.Call{ID: "start", Name: "run_command", Args: map[string]any{"command": "sh " + tag + ".sh", "background": true}}
	case "server":
		// The server plants after its start, while the session runs.
		config += fmt.Sprintf("mcp:\n  servers:\n    t:\n      command: [sh, -c, %q, %q]\n      env: {HARVEY_TEST_HELPER: mcp-server}\n      models: [\"*\"]\n",
			"(sleep 1; sh "+tag+".sh) & exec \"$0\"", os.Args[0])
		first = fakeollama.Call{ID: "start", Name: "t__echo", Args: map[string]any{"text": "hi"}}
	}
	WriteFile(t, cfgHome, "harvey/harvey.yaml", config)
	f.Script(fakeollama.ToolReply("llama3.2", first),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "wait", Name: "run_command", Args: map[string]any{"command": "sleep 120", "timeout": 200}}),
		fakeollama.TextReply("llama3.2", "Done."))
	cmd := exec.Command(bin, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", f.URL())
	cmd.Dir = dir
	cmd.Env = append(append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST="),
		"XDG_CONFIG_HOME="+cfgHome, "XDG_DATA_HOME="+filepath.Join(tmp, "data"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	w := UnderKernel(kernel, cmd)
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, as a shell's job is
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "planted-"+tag)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			w.Process.Kill()
			w.Wait()
			t.Fatalf("nothing was planted: %s\n%s", out.String(), errb.String())
		}
	}
	// (Landlock only, a job's check also runs while it runs: the gitlink
	// may be gone already, undone within half a second.)
	if ls := GitSh(t, dir, gitEnv, "git ls-files -s sub"); !strings.Contains(ls, "160000") && kernel != string(kernelsim.NoUserNS) {
		t.Fatalf("the gitlink is not in the index: %q", ls)
	}
	switch end {
	case "sighup": // the terminal closed: its foreground group hears
		syscall.Kill(-w.Process.Pid, syscall.SIGHUP)
	case "sigterm":
		w.Process.Signal(syscall.SIGTERM)
	case "sigkill": // what the OOM killer does to the session
		syscall.Kill(sessionOf(t, w.Process.Pid), syscall.SIGKILL)
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		w.Process.Kill()
		t.Fatalf("harvey did not end after %s: %s\n%s", end, out.String(), errb.String())
	}
	// Nothing is left, and nothing is left to the next git: the shell runs
	// the user's next command only now.
	if ps := Survivors(tag, 100*time.Millisecond); ps != "" {
		t.Errorf("the %s outlived harvey's end by %s:\n%s", planter, end, ps)
	}
	st := GitSh(t, dir, gitEnv, "git status --porcelain; git ls-files -s sub")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the user's git status ran what the %s planted:\n%s", planter, st)
	}
	if strings.Contains(st, "160000") {
		t.Errorf("the gitlink is still in the index after %s:\n%s\n%s", end, st, errb.String())
	}
	if end == "sigkill" && (!strings.Contains(errb.String(), "the session was ended by SIGKILL") ||
		kernel != string(kernelsim.NoUserNS) && !strings.Contains(errb.String(), "its check ran now")) {
		t.Errorf("the guardian did not say what it did:\n%s", errb.String())
	}
}

// The terminal closed under the REPL while your own job (!cmd &) planted a
// gitlink: the session ends its job and runs its check, and nothing is
// left for your next git.
func TestEndToEndTerminalClosedEndsTheSession(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	dir, gitEnv := GitFixture(t)
	tmp := t.TempDir()
	marker, fsmon := plantScript(t, tmp)
	tag := fmt.Sprintf("harvey-hangup-%d", time.Now().UnixNano())
	WriteFile(t, dir, "plant.sh", plantGitlink(tag, fsmon))
	WriteFile(t, dir, tag+".sh", "sh plant.sh\nwhile :; do sleep 1; done\n")
	env := []string{"NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(tmp, "config"), "XDG_DATA_HOME=" + filepath.Join(tmp, "data")}
	s := ptytest.StartWith(t, bin, dir, env, 120, "--ollama", "http://127.0.0.1:1")
	s.Expect("harvey> ")
	s.Send("!sh " + tag + ".sh &\r")
	s.Expect("job 1")
	WaitFor(t, "the job to plant", func() bool {
		_, err := os.Stat(filepath.Join(dir, "planted-"+tag))
		return err == nil
	})
	s.Hangup()
	s.Wait()
	if ps := Survivors(tag, 100*time.Millisecond); ps != "" {
		t.Errorf("the job outlived the closed terminal:\n%s", ps)
	}
	st := GitSh(t, dir, gitEnv, "git status --porcelain; git ls-files -s sub")
	if _, err := os.Stat(marker); err == nil || strings.Contains(st, "160000") {
		t.Errorf("the gitlink stayed for the user's git:\n%s", st)
	}
}

// chainScript makes a chain of n processes, each the parent of the next
// (each level a shell that starts the next and waits), the last touching
// ready-KIND and sleeping; every level's command line names tag.
func chainScript(t *testing.T, dir, tag string) {
	WriteFile(t, dir, tag+".sh", `n=$1
if [ "$n" -gt 0 ]; then sh "$0" $((n-1)) "$2" & wait; else touch "ready-$2"; sleep 600; fi
`)
}

// No process tree outlives its kill, however deep (issue 75): a chain of
// 3,000 processes — each the parent of the next, what a loop that ends one
// level a round, bounded at 1,000 rounds, left behind — under a job stopped
// with /jobs kill, a foreground command that leaves it running, and an
// async tool's task stopped with /tasks kill; checked while Harvey still
// runs, so it is the kill that ended them, not Harvey's end. Landlock only
// (where the launcher must end them itself); in the modes with a PID
// namespace, where the namespace ends whatever its depth, a job's chain of
// 1,200.
func TestEndToEndDeepForkChainsEnd(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	for _, kernel := range Kernels() {
		kinds, depth := []string{"job"}, 1200
		if kernel == string(kernelsim.NoUserNS) {
			kinds, depth = []string{"job", "fg", "task"}, 3000
		}
		for _, kind := range kinds {
			t.Run(kernel+"/"+kind, func(t *testing.T) {
				t.Parallel()
				deepChainEnds(t, bin, kernel, kind, depth)
			})
		}
	}
}

func deepChainEnds(t *testing.T, bin, kernel, kind string, depth int) {
	dir := t.TempDir()
	tmp := t.TempDir()
	tag := fmt.Sprintf("harvey-chain-%d", time.Now().UnixNano())
	chainScript(t, dir, tag)
	chain := fmt.Sprintf("sh %s.sh %d %s", tag, depth, kind)
	waitReady := fmt.Sprintf("!while [ ! -f ready-%s ]; do sleep 0.2; done; echo built\n", kind)
	pause := "!touch ended; while [ ! -f checked ]; do sleep 0.1; done\n"
	var script string
	cfg := filepath.Join(tmp, "config")
	// A job's processes are capped (1024 by default): this one needs more.
	WriteFile(t, cfg, "harvey/harvey.yaml", "sandbox:\n  jobs:\n    processes: 10000\n")
	f := fakeollama.New(t, "llama3.2:latest")
	switch kind {
	case "job":
		script = "!" + chain + " &\n" + waitReady + "/jobs kill 1\n" + pause
	case "fg": // the command ends, its chain does not
		script = "!" + chain + " & while [ ! -f ready-fg ]; do sleep 0.2; done; echo built\n" + pause
	case "task":
		WriteFile(t, cfg, "harvey/tools/chain.md", fmt.Sprintf("---\ncommand: [sh, %s.sh, \"%d\", task]\neffect: read\nasync: true\n---\nA deep chain.\n", tag, depth))
		f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c", Name: "chain", Args: map[string]any{}}), fakeollama.TextReply("llama3.2", "Started."))
		script = "start the chain\n" + waitReady + "/tasks kill 1\n" + pause
	}
	WriteFile(t, tmp, "script", script)
	cmd := exec.Command(bin, "--run", filepath.Join(tmp, "script"), "--yes", "--model", "llama3.2", "--ollama", f.URL())
	cmd.Dir = dir
	cmd.Env = append(append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST="), "XDG_CONFIG_HOME="+cfg, "XDG_DATA_HOME="+filepath.Join(tmp, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	w := UnderKernel(kernel, cmd)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Process.Kill()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "ended")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chain was never ended: %s", out.String())
		}
	}
	if n := len(ProcessesWith(tag)); n > 0 {
		t.Errorf("%d processes of the %d-deep chain outlived its %s's end", n, depth, kind)
	}
	os.WriteFile(filepath.Join(dir, "checked"), nil, 0o644)
	if err := w.Wait(); err != nil {
		t.Errorf("%v: %s", err, out.String())
	}
}

// /exit while your server is still starting (issue 75): servers start in
// the background, so the prompt is yours at once and /exit returns within
// a second or so, not after the server's 20-second start; the server, which
// planted a gitlink and never answered, is ended with what it started, and
// your next git runs nothing. Each kernel mode.
func TestEndToEndExitWhileAServerStarts(t *testing.T) {
	RequireSandbox(t)
	bin := Build(t)
	for _, kernel := range Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			dir, gitEnv := GitFixture(t)
			tmp := t.TempDir()
			marker, fsmon := plantScript(t, tmp)
			tag := fmt.Sprintf("harvey-starting-%d", time.Now().UnixNano())
			WriteFile(t, dir, "plant.sh", plantGitlink(tag, fsmon))
			WriteFile(t, dir, tag+".sh", "sh plant.sh\nwhile :; do sleep 1; done\n")
			cfgHome := filepath.Join(tmp, "config")
			WriteFile(t, cfgHome, "harvey/harvey.yaml", fmt.Sprintf("mcp:\n  servers:\n    slow:\n      command: [sh, %q]\n", tag+".sh"))
			cmd := exec.Command(bin, "--ollama", "http://127.0.0.1:1")
			cmd.Dir = dir
			cmd.Env = append(append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST="),
				"XDG_CONFIG_HOME="+cfgHome, "XDG_DATA_HOME="+filepath.Join(tmp, "data"))
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			w := UnderKernel(kernel, cmd)
			w.Stdin = cmd.Stdin
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- w.Wait() }()
			WaitFor(t, "the server to plant", func() bool {
				_, err := os.Stat(filepath.Join(dir, "planted-"+tag))
				return err == nil
			})
			begin := time.Now()
			stdin.Write([]byte("/exit\n"))
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				w.Process.Kill()
				t.Fatalf("/exit while a server starts did not end harvey: %s\n%s", out.String(), errb.String())
			}
			if d := time.Since(begin); d > 5*time.Second {
				t.Errorf("/exit took %s while a server was starting:\n%s", d, errb.String())
			}
			if ps := Survivors(tag, 100*time.Millisecond); ps != "" {
				t.Errorf("the starting server outlived /exit:\n%s", ps)
			}
			st := GitSh(t, dir, gitEnv, "git status --porcelain; git ls-files -s sub")
			if _, err := os.Stat(marker); err == nil || strings.Contains(st, "160000") {
				t.Errorf("the gitlink stayed for the user's git:\n%s\n%s", st, errb.String())
			}
		})
	}
}
