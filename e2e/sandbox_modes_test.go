// Feature: the sandbox in each kernel mode (issue 44) — full, namespaces
// only (a kernel without Landlock: Raspberry Pi OS), Landlock only (no
// user namespaces: Ubuntu 23.10+, containers) and none — each simulated on
// this kernel with a seccomp filter (internal/kernelsim) inherited by the
// built binary and everything it starts. CI runs this file as an ordinary
// account too (.ci/run), where the modes differ from root's.
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/kernelsim"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// modeFixture is a workspace that is a git repository with a commit, a
// home with a key, a directory outside, and a listener no command may
// reach.
type modeFixture struct {
	root, dir, home, outside, cfg string
	port                          int
	accepted                      chan bool
	env                           []string
}

func newModeFixture(t *testing.T) *modeFixture {
	t.Helper()
	root := t.TempDir()
	f := &modeFixture{root: root, dir: filepath.Join(root, "ws"), home: filepath.Join(root, "home"), outside: filepath.Join(root, "outside"), cfg: filepath.Join(root, "config")}
	for _, d := range []string{f.dir, f.outside, filepath.Join(f.home, ".ssh"), filepath.Join(f.cfg, "harvey")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(f.home, ".ssh", "id_rsa"), []byte("FIXTURE-HOME-KEY\n"), 0o600)
	os.MkdirAll(filepath.Join(f.home, ".local", "bin"), 0o755)
	os.WriteFile(filepath.Join(f.home, ".local", "bin", "mytool"), []byte("#!/bin/sh\necho mytool\n"), 0o755)
	os.WriteFile(filepath.Join(f.home, ".gitconfig"), []byte("[user]\n\tname = Fixture User\n\temail = user@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644)
	WriteFile(t, f.dir, "go.mod", "module m\ngo 1.21\n")
	WriteFile(t, f.dir, "m.go", "package m\n\n// F says hello.\nfunc F() int { return 1 }\n")
	WriteFile(t, f.dir, "m_test.go", "package m\nimport \"testing\"\nfunc TestF(t *testing.T) { if F() != 1 { t.Fatal() } }\n")
	WriteFile(t, f.dir, ".gitignore", "agents/\n")
	f.env = []string{"HOME=" + f.home, "XDG_CONFIG_HOME=" + f.cfg}
	for _, v := range []string{"GOCACHE", "GOMODCACHE"} {
		if c, err := exec.Command("go", "env", v).Output(); err == nil {
			f.env = append(f.env, v+"="+strings.TrimSpace(string(c)))
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		f.env = append(f.env, "PATH="+filepath.Join(f.home, ".local", "bin")+":"+filepath.Dir(p)+":/usr/local/bin:/usr/bin:/bin")
	}
	f.git(t, "init -q")
	f.git(t, "add -A")
	f.git(t, "commit -qm first")
	f.port, f.accepted = CountingListener(t)
	return f
}

// git runs the user's own git in the workspace, outside Harvey.
func (f *modeFixture) git(t *testing.T, args string) string {
	t.Helper()
	cmd := exec.Command("git", strings.Fields(args)...)
	cmd.Dir = f.dir
	cmd.Env = append(secrets.Environ(os.Environ()), f.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", args, err, out)
	}
	return string(out)
}

// simulated skips where the filter cannot be built or this kernel itself
// lacks what the simulation takes away.
func simulated(t *testing.T) {
	t.Helper()
	if err := kernelsim.Supported(); err != nil {
		t.Skip(err)
	}
	if sandbox.Available().Mode() != sandbox.ModeFull {
		t.Skipf("this machine's own sandbox is %s, not full: the simulated modes need the whole kernel", sandbox.Available().Mode())
	}
}

// Each mode through the built binary: its line at start and in the
// turn_start event, the hostile commands it must stop (or undo), everyday
// work that must still pass, and the user's next git afterwards.
func TestEndToEndSandboxModes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel modes are Linux's")
	}
	simulated(t)
	Announce("the sandbox's kernel modes: hostile commands, everyday work, your next git")
	bin := Build(t)
	for _, c := range []struct {
		kernel, mode, line string
		work               bool // everyday work passes (go build and test, a commit)
	}{
		{"real", "full", "", true},
		{string(kernelsim.NoLandlock), "namespaces only", "sandbox: namespaces only (this kernel has no Landlock", true},
		{string(kernelsim.NoUserNS), "Landlock only", "harvey sandbox apparmor", true},
	} {
		t.Run(c.kernel, func(t *testing.T) {
			t.Parallel()
			f := newModeFixture(t)
			fo := fakeollama.New(t, "llama3.2:latest")
			marker := filepath.Join(f.dir, "late-marker")
			hostile := []string{
				"echo x > ../outside/x",
				"cat ~/.ssh/id_rsa",
				"echo x > agents/x",
				"printf '#!/bin/sh\\ntouch " + filepath.Join(f.root, "hook-ran") + "\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
				fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected'", f.port),
				"setsid sh -c 'sleep 2; echo late > " + marker + "' > /dev/null 2>&1 &",
				"mytool && echo planted >> ~/.local/bin/mytool", // a toolchain on PATH: readable and runnable, never writable
				"ln ~/.ssh/id_rsa stolen-key; cat stolen-key",   // a link is no way to read what the command cannot
			}
			var calls []fakeollama.Call
			for i, h := range hostile {
				calls = append(calls, fakeollama.Call{ID: fmt.Sprint("h", i), Name: "run_command", Args: map[string]any{"command": h}})
			}
			calls = append(calls, fakeollama.Call{ID: "w0", Name: "run_command", Args: map[string]any{"command": "go build ./... && go test ./... && echo more >> m.go && git commit -qam work && git log --oneline | head -1"}},
				// A rename across directories of the workspace, as rustc
				// moves each crate's metadata (EXDEV without Landlock's refer).
				fakeollama.Call{ID: "w1", Name: "run_command", Args: map[string]any{"command": `mkdir -p a b && echo renamed > a/f && python3 -c "import os; os.rename('a/f', 'b/f'); os.link('b/f', 'a/g')" && cat a/g`}})
			fo.Script(fakeollama.ToolReply("llama3.2", calls...), fakeollama.TextReply("llama3.2", "Done."))
			out, errOut, code := RunKernel(t, c.kernel, bin, f.dir, "", f.env, "-p", "try things", "--yes", "--output", "stream-json", "--model", "llama3.2", "--ollama", fo.URL())
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, out, errOut)
			}
			if c.line == "" && regexp.MustCompile(`(?m)^sandbox:`).MatchString(errOut) || !strings.Contains(errOut, c.line) {
				t.Errorf("start line: want %q in\n%s", c.line, errOut)
			}
			if !strings.Contains(out, `"sandbox":"`+c.mode+`"`) {
				t.Errorf("turn_start does not name the mode %q:\n%s", c.mode, out)
			}
			results := fakeollama.ToolResults(fo.ChatRequests())
			for i, h := range hostile[:2] {
				if r := results[fmt.Sprint("h", i)]; strings.Contains(r, "[exit 0]") || strings.Contains(r, "FIXTURE-HOME-KEY") {
					t.Errorf("%s: not stopped: %q", h, r)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(f.home, ".local", "bin", "mytool")); strings.Contains(string(b), "planted") {
				t.Errorf("a command wrote into a toolchain on PATH: %q", results["h6"])
			}
			if r := results["h6"]; !strings.Contains(r, "mytool\n") {
				t.Errorf("a toolchain on PATH did not run: %q", r)
			}
			if r := results["h7"]; strings.Contains(r, "FIXTURE-HOME-KEY") {
				t.Errorf("a link read the home's key: %q", r)
			}
			if _, err := os.Stat(filepath.Join(f.dir, "stolen-key")); err == nil {
				t.Error("a link to the home's key was made in the workspace")
			}
			if r := results["w1"]; c.work && (!strings.Contains(r, "[exit 0]") || !strings.Contains(r, "renamed")) {
				t.Errorf("a rename across the workspace's directories failed in mode %s: %q", c.mode, r)
			}
			if r := results["h4"]; strings.Contains(r, "\nconnected") {
				t.Errorf("a command connected: %q", r)
			}
			if c.mode == "Landlock only" {
				// agents/ and .git are writable here: the check undoes it.
				for _, id := range []string{"h2", "h3"} {
					if r := results[id]; !strings.Contains(r, "undone") {
						t.Errorf("%s: not undone and reported: %q", id, r)
					}
				}
			}
			if r := results["w0"]; c.work && (!strings.Contains(r, "[exit 0]") || !strings.Contains(r, "work")) {
				t.Errorf("everyday work failed in mode %s: %q", c.mode, r)
			}
			WaitGone(t, marker)
			for _, p := range []string{filepath.Join(f.outside, "x"), filepath.Join(f.dir, "agents", "x"), marker} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was created", p)
				}
			}
			select {
			case <-f.accepted:
				t.Error("a command connected to the listener")
			default:
			}
			// The user's next steps, outside Harvey: nothing planted runs.
			f.git(t, "status --short")
			f.git(t, "commit -q --allow-empty -m next")
			if _, err := os.Stat(filepath.Join(f.root, "hook-ran")); err == nil {
				t.Error("the user's next commit ran a hook a command planted")
			}
		})
	}
}

// With neither Landlock nor namespaces, commands refuse (headless with
// --yes too), naming the setting; read_file still works. With the setting
// in the user's own config they run, and the start line says unsandboxed.
func TestEndToEndSandboxNoneFailsClosed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel modes are Linux's")
	}
	simulated(t)
	bin := Build(t)
	f := newModeFixture(t)
	fo := fakeollama.New(t, "llama3.2:latest")
	script := func() {
		fo.Script(fakeollama.ToolReply("llama3.2",
			fakeollama.Call{ID: "r", Name: "run_command", Args: map[string]any{"command": "echo ran > ran.txt"}},
			fakeollama.Call{ID: "f", Name: "read_file", Args: map[string]any{"path": "m.go"}},
		), fakeollama.TextReply("llama3.2", "Done."))
	}
	script()
	out, errOut, code := RunKernel(t, string(kernelsim.Neither), bin, f.dir, "", f.env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
	if code != 0 || !strings.Contains(out, "Done.") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "sandbox: none (") || !strings.Contains(errOut, "unsandboxed: true") {
		t.Errorf("start line:\n%s", errOut)
	}
	results := fakeollama.ToolResults(fo.ChatRequests())
	if r := results["r"]; !strings.Contains(r, "refused: no sandbox") || !strings.Contains(r, "sandbox: {unsandboxed: true}") {
		t.Errorf("run_command was not refused naming the setting: %q", r)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "ran.txt")); err == nil {
		t.Error("the command ran")
	}
	if r := results["f"]; !strings.Contains(r, "F says hello") {
		t.Errorf("read_file: %q", r)
	}
	// A workspace's config cannot allow it.
	os.MkdirAll(filepath.Join(f.dir, "agents"), 0o700)
	os.WriteFile(filepath.Join(f.dir, "agents", "harvey.yaml"), []byte("sandbox:\n  unsandboxed: true\n"), 0o600)
	script()
	RunKernel(t, string(kernelsim.Neither), bin, f.dir, "", f.env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
	if _, err := os.Stat(filepath.Join(f.dir, "ran.txt")); err == nil {
		t.Error("a workspace's config let a command run unsandboxed")
	}
	os.Remove(filepath.Join(f.dir, "agents", "harvey.yaml"))
	// The user's own config allows it: commands, and a stdio MCP server of
	// theirs, which runs as their program and is given no sandbox's cache
	// layers (there is no sandbox to put them in).
	os.WriteFile(filepath.Join(f.cfg, "harvey", "harvey.yaml"), []byte(fmt.Sprintf("sandbox:\n  unsandboxed: true\n"+
		"mcp:\n  servers:\n    t:\n      command: [%q]\n      env: {HARVEY_TEST_HELPER: mcp-server}\n      models: [\"*\"]\n", os.Args[0])), 0o600)
	fo.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "r", Name: "run_command", Args: map[string]any{"command": "echo ran > ran.txt"}},
		fakeollama.Call{ID: "m", Name: "t__echo", Args: map[string]any{"text": "unsandboxed server"}},
	), fakeollama.TextReply("llama3.2", "Done."))
	data := filepath.Join(f.root, "data")
	out, errOut, code = RunKernel(t, string(kernelsim.Neither), bin, f.dir, "", append(f.env, "XDG_DATA_HOME="+data), "-p", "go", "--yes", "--output", "stream-json", "--model", "llama3.2", "--ollama", fo.URL())
	if code != 0 || !strings.Contains(errOut, "UNSANDBOXED") {
		t.Fatalf("exit %d: start line does not say unsandboxed:\n%s", code, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(f.dir, "ran.txt")); err != nil || string(b) != "ran\n" {
		t.Errorf("with the setting the command did not run: %v", err)
	}
	if r := fakeollama.ToolResults(fo.ChatRequests())["m"]; !strings.Contains(r, "echo: unsandboxed server") {
		t.Errorf("the MCP server of your config: %q\n%s", r, errOut)
	}
	if layers, _ := filepath.Glob(filepath.Join(data, "harvey", "caches", "*", "mcp-*")); len(layers) > 0 {
		t.Errorf("cache layers made for a server with no sandbox: %v", layers)
	}
	var modes []string
	for _, l := range strings.Split(out, "\n") {
		var ev struct{ Type, Sandbox string }
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == "turn_start" {
			modes = append(modes, ev.Sandbox)
		}
	}
	if len(modes) != 1 || modes[0] != "none, unsandboxed" {
		t.Errorf("turn_start sandbox: %q", modes)
	}
}

// A home without caches (a Pi without Go) gains no directory from a
// command (issue 49): a missing cache is an empty private layer, which the
// command can fill and the workspace's next command sees.
func TestEndToEndSandboxHomeGainsNothing(t *testing.T) {
	t.Parallel()
	RequireSandbox(t)
	if sandbox.Available().Mode() == sandbox.ModeLandlock {
		t.Skip("Landlock only: caches have no private layer here")
	}
	bin := Build(t)
	root := t.TempDir()
	dir, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(home, 0o755)
	fo := fakeollama.New(t, "llama3.2:latest")
	fo.Script(fakeollama.ToolReply("llama3.2",
		fakeollama.Call{ID: "fill", Name: "run_command", Args: map[string]any{"command": "mkdir -p ~/.cache/tool && echo cached > ~/.cache/tool/f && ls -d ~/go/pkg/mod"}},
		fakeollama.Call{ID: "again", Name: "run_command", Args: map[string]any{"command": "cat ~/.cache/tool/f"}},
	), fakeollama.TextReply("llama3.2", "Done."))
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_CACHE_HOME=", "GOCACHE=", "GOMODCACHE=", "GOPATH=", "PATH=/usr/bin:/bin"}
	out, errOut, code := RunKernel(t, "real", bin, dir, "", env, "-p", "go", "--yes", "--model", "llama3.2", "--ollama", fo.URL())
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	res := fakeollama.ToolResults(fo.ChatRequests())
	if r := res["fill"]; !strings.Contains(r, "[exit 0]") {
		t.Errorf("a command could not fill a cache a new home does not have: %q", r)
	}
	if r := res["again"]; !strings.Contains(r, "cached") {
		t.Errorf("the next command does not see the cache the first one filled: %q", r)
	}
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the home gained %v", names)
	}
}

// Harvey run from a file directly in the temporary directory (a binary
// downloaded to /tmp), where the launcher also builds the command's root:
// the probe still finds the whole sandbox.
func TestSandboxProbeFromTheTempDir(t *testing.T) {
	if runtime.GOOS != "linux" || sandbox.Available().Mode() != sandbox.ModeFull {
		t.Skip("needs the whole sandbox on this kernel")
	}
	bin := Build(t)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp("", "harvey-in-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
	os.Chmod(f.Name(), 0o755)
	t.Cleanup(func() { os.Remove(f.Name()) })
	for kernel, want := range map[string]string{"real": "sandbox: full", string(kernelsim.NoLandlock): "sandbox: namespaces only"} {
		out, errOut, code := RunKernel(t, kernel, f.Name(), t.TempDir(), "", []string{"TMPDIR=" + filepath.Dir(f.Name())}, "sandbox")
		if code != 0 || !strings.HasPrefix(out, want) {
			t.Errorf("%s: exit %d: %s %s", kernel, code, out, errOut)
		}
	}
}
