package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harvey-agent/harvey/internal/kernelsim"
	_ "github.com/harvey-agent/harvey/internal/launch" // as in cmd/harvey: a launcher starts before the rest initialises
	"github.com/harvey-agent/harvey/internal/mcptest"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// Helpers are the roles a test binary plays when a test starts it again
// (Main is the one dispatcher): a process killed mid-write, an "ollama
// serve", a simulated kernel ("kernel", here), internal/mcptest's stdio
// server with its tools ("mcp-server", here). Register in an init.
var Helpers = map[string]func(arg string) int{
	"kernel":     kernelHelper,
	"mcp-server": func(string) int { return mcptest.RunStdio(mcptest.Tools()) },
	"mcp-many":   func(string) int { return mcptest.RunStdio(mcptest.Many(119)) },
}

// RealHome is the home of the account that runs the tests. Main gives
// every test a fresh, empty HOME instead: nothing passes only because
// this machine's home already holds something. The tests of this
// machine's own toolchains use RealHome on purpose, and say so.
var RealHome string

// FixtureCache is this machine's own cache directory (the real home's),
// where tests keep what they download once per machine (the MCP
// conformance suite, server-everything): fixtures, never state a test
// depends on.
var FixtureCache string

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

// Main is the TestMain of a package whose tests drive the built binary:
// the test binary answers the sandbox's probe (--version) and plays the
// helper HARVEY_TEST_HELPER names; otherwise it runs the tests from the
// module's root (what a test names relative, ./cmd/harvey, release/, is
// the module's), in a fresh home and configuration directory, and says
// what (Announce) where the whole package runs.
func Main(m *testing.M, what string) {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		os.Exit(0) // the namespace probe
	}
	if h := os.Getenv("HARVEY_TEST_HELPER"); h != "" {
		os.Exit(Helpers[h](os.Getenv("HARVEY_TEST_HELPER_ARG")))
	}
	if root, err := moduleRoot(); err == nil {
		os.Chdir(root)
	}
	removeHome := isolateHome()
	if len(os.Args) == 1 || !strings.Contains(strings.Join(os.Args, " "), "-test.run") {
		Announce(what)
	}
	// The user's config directory (trust store, user config) is a fresh
	// one: tests never read or write the real ~/.config/harvey.
	if os.Getenv("HARVEY_TEST_CONFIG_HOME") == "" {
		d, err := os.MkdirTemp("", "harvey-test-config-")
		if err == nil {
			os.Setenv("XDG_CONFIG_HOME", d)
			os.Setenv("HARVEY_TEST_CONFIG_HOME", d)
		}
	}
	code := m.Run()
	if d := os.Getenv("HARVEY_TEST_CONFIG_HOME"); d != "" && strings.Contains(d, "harvey-test-config-") {
		os.RemoveAll(d)
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	removeHome()
	os.Exit(code)
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", os.ErrNotExist
		}
		d = up
	}
}

// isolateHome points HOME and the XDG directories at a fresh directory for
// the whole test binary (and every Harvey it starts), keeping Go's own
// caches where they are (GOCACHE, GOMODCACHE, GOPATH pinned to what go
// env says now), so the binaries the tests build are not rebuilt from an
// empty cache, and TMPDIR at a directory beside it. It returns what
// removes both.
func isolateHome() func() {
	RealHome = os.Getenv("HARVEY_TEST_REAL_HOME")
	if RealHome == "" {
		RealHome = os.Getenv("HOME")
	}
	FixtureCache = os.Getenv("HARVEY_TEST_FIXTURE_CACHE")
	if FixtureCache == "" {
		if c, err := os.UserCacheDir(); err == nil {
			FixtureCache = c
		} else {
			FixtureCache = os.TempDir()
		}
	}
	if os.Getenv("HARVEY_TEST_HOME") != "" {
		return func() {} // started by a test binary that made one already
	}
	os.Setenv("HARVEY_TEST_FIXTURE_CACHE", FixtureCache)
	if goBin, err := exec.LookPath("go"); err == nil {
		keys := []string{"GOCACHE", "GOMODCACHE", "GOPATH"}
		if out, err := exec.Command(goBin, append([]string{"env"}, keys...)...).Output(); err == nil {
			vals := strings.Split(strings.TrimSpace(string(out)), "\n")
			for i, k := range keys {
				if i < len(vals) && os.Getenv(k) == "" && vals[i] != "" {
					os.Setenv(k, vals[i])
				}
			}
		}
	}
	base, err := os.MkdirTemp("", "harvey-test-")
	if err != nil {
		return func() {}
	}
	// TMPDIR is the test's too: whatever a test, or a Harvey it starts,
	// leaves in the temporary directory goes with it.
	d, tmp := filepath.Join(base, "home"), filepath.Join(base, "tmp")
	os.Mkdir(d, 0o700)
	os.Mkdir(tmp, 0o700)
	os.Setenv("TMPDIR", tmp)
	os.Setenv("HOME", d)
	os.Setenv("HARVEY_TEST_HOME", d)
	os.Setenv("HARVEY_TEST_REAL_HOME", RealHome)
	for k, v := range map[string]string{"XDG_DATA_HOME": ".local/share", "XDG_CACHE_HOME": ".cache", "XDG_STATE_HOME": ".local/state"} {
		os.Setenv(k, filepath.Join(d, v))
	}
	return func() {
		runner.RemoveTmp()
		removeTree(base)
	}
}

// removeTree removes a directory a test made, making its directories
// writable first (an overlay's work directory is made unreadable by the
// kernel, which an ordinary account cannot remove otherwise).
func removeTree(d string) {
	filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
		if e != nil && e.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(d)
}

// HelperCmd starts the test binary as the helper name with arg.
func HelperCmd(name, arg string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HARVEY_TEST_HELPER="+name, "HARVEY_TEST_HELPER_ARG="+arg)
	return cmd
}

// Build builds cmd/harvey once per test binary run.
func Build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "harvey-e2e-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "harvey")
		out, err := exec.Command("go", "build", "-o", builtBin, "github.com/harvey-agent/harvey/cmd/harvey").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// Run runs the built binary bin in dir with stdin: its output, its
// errors and its exit status.
func Run(t *testing.T, bin, dir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return RunEnv(t, bin, dir, stdin, nil, args...)
}

// RunEnv is Run with extra environment variables (later ones win).
func RunEnv(t *testing.T, bin, dir, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	return RunKernel(t, "", bin, dir, stdin, env, args...)
}

// RunKernel is RunEnv on a simulated kernel (kernelsim: no-landlock,
// no-userns or neither; "real" is this machine's own; "" is
// HARVEY_TEST_KERNEL's, so .ci/as-user can run the everyday-work tests on
// a kernel without Landlock too).
func RunKernel(t *testing.T, kernel, bin, dir, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	if kernel == "" {
		kernel = os.Getenv("HARVEY_TEST_KERNEL")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST="), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := UnderKernel(kernel, cmd).Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// kernelHelper (the "kernel" helper): the test binary puts itself under a
// simulated kernel's seccomp filter (internal/kernelsim) and executes the
// argv in HARVEY_TEST_EXEC, so Harvey and everything it starts meet that
// kernel.
func kernelHelper(k string) int {
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv("HARVEY_TEST_EXEC")), &argv); err != nil || len(argv) == 0 {
		os.Stderr.WriteString("kernel helper: no argv\n")
		return 2
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "HARVEY_TEST_HELPER") || strings.HasPrefix(kv, "HARVEY_TEST_EXEC=")
	})
	err := kernelsim.Exec(kernelsim.Kernel(k), argv, env)
	os.Stderr.WriteString("kernel helper: " + err.Error() + "\n")
	return 2
}

// UnderKernel is cmd run under kernel k's filter ("" or "real": as it is).
func UnderKernel(k string, cmd *exec.Cmd) *exec.Cmd {
	if k == "" || k == "real" {
		return cmd
	}
	argv, _ := json.Marshal(append([]string{cmd.Path}, cmd.Args[1:]...))
	w := exec.Command(os.Args[0])
	w.Dir, w.Stdin, w.Stdout, w.Stderr, w.ExtraFiles = cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.ExtraFiles
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	w.Env = append(slices.Clone(env), "HARVEY_TEST_HELPER=kernel", "HARVEY_TEST_HELPER_ARG="+k, "HARVEY_TEST_EXEC="+string(argv))
	return w
}

// Kernels are the kernel modes that run commands: this machine's (the
// whole sandbox), namespaces without Landlock (a Raspberry Pi), and
// Landlock without namespaces (Ubuntu 24.04), where the check after a
// command is all there is. (With neither, commands refuse:
// TestEndToEndSandboxNoneFailsClosed.)
func Kernels() []string {
	if kernelsim.Supported() != nil || sandbox.Available().Mode() != sandbox.ModeFull {
		return []string{"real"}
	}
	return []string{"real", string(kernelsim.NoLandlock), string(kernelsim.NoUserNS)}
}

// RequireSandbox skips where this kernel has no Landlock (and says so);
// on these machines it has, so the test really runs.
func RequireSandbox(t *testing.T) {
	t.Helper()
	if !sandbox.Available().Enforced() {
		t.Skip("no Landlock here: " + sandbox.Available().Why)
	}
}

// FreshConfigHome gives a test its own user config directory (and no
// OLLAMA_HOST), for the test binary and the Harvey it starts.
func FreshConfigHome(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", d)
	t.Setenv("OLLAMA_HOST", "")
	return d
}
