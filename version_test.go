// Feature: the version a build names (version.go).
package harvey

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// A build from source names its commit (issue 48): go build in a git
// checkout, with Go's VCS stamping on (this machine's go env turns it off,
// as CI machines often do), gives a --version with git's HEAD, and
// -dirty when the checkout has changes; buildStamp reads a go install's
// module version where there is no VCS.
func TestVersionNamesTheCommit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	status, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	bin := filepath.Join(t.TempDir(), "harvey")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/harvey").CombinedOutput(); err != nil {
		t.Skipf("go build with VCS stamping: %v %s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	want := "commit " + strings.TrimSpace(string(head))
	if len(strings.TrimSpace(string(status))) > 0 {
		want += "-dirty"
	}
	if err != nil || !strings.Contains(string(out), want+",") {
		t.Fatalf("--version %q does not say %q", out, want)
	}
	commit, _ := buildStamp(&debug.BuildInfo{Main: debug.Module{Path: "github.com/harvey-agent/harvey", Version: "v0.2.0"}})
	if commit != "module v0.2.0" {
		t.Errorf("go install's module version: %q", commit)
	}
}
