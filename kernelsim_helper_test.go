package harvey

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/kernelsim"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// The "kernel" helper: the test binary puts itself under a simulated
// kernel's seccomp filter (internal/kernelsim) and executes the argv in
// HARVEY_TEST_EXEC, so Harvey and everything it starts meet that kernel.
func init() {
	testHelpers["kernel"] = func(k string) int {
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
}

// underKernel is cmd run under kernel k's filter ("" or "real": as it is).
func underKernel(k string, cmd *exec.Cmd) *exec.Cmd {
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

// simulatedKernels are the kernel modes that run commands: this machine's
// (the whole sandbox), namespaces without Landlock (a Raspberry Pi), and
// Landlock without namespaces (Ubuntu 24.04), where the check after a
// command is all there is. (With neither, commands refuse:
// TestEndToEndSandboxNoneFailsClosed.)
func simulatedKernels() []string {
	if kernelsim.Supported() != nil || sandbox.Available().Mode() != sandbox.ModeFull {
		return []string{"real"}
	}
	return []string{"real", string(kernelsim.NoLandlock), string(kernelsim.NoUserNS)}
}
