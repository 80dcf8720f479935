package sandboxpolicy

import (
	"slices"
	"testing"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// Java reads no TMPDIR: Maven's and Gradle's JVMs get the private one as
// java.io.tmpdir after the user's own options (/tmp is not writable by
// commands), so Gradle's first build and its daemon can start.
func TestSandboxTmpEnvGivesJavaItsTmp(t *testing.T) {
	tmp := sandbox.Available().Tmp
	if tmp == "" {
		t.Skip("no sandbox here: commands get no private TMPDIR")
	}
	env := sandboxTmpEnv([]string{"PATH=/usr/bin", "TMPDIR=/tmp", "MAVEN_OPTS=-Xmx1g -Djava.io.tmpdir=/tmp"})
	for _, want := range []string{"TMPDIR=" + tmp, "MAVEN_OPTS=-Xmx1g -Djava.io.tmpdir=/tmp -Djava.io.tmpdir=" + tmp, "GRADLE_OPTS=-Djava.io.tmpdir=" + tmp} {
		if !slices.Contains(env, want) {
			t.Errorf("no %s in %q", want, env)
		}
	}
	if slices.Contains(env, "TMPDIR=/tmp") {
		t.Errorf("the user's TMPDIR is kept: %q", env)
	}
}
