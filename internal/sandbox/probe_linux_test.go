//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The start line names why there are no namespaces, read from the
// kernel's own settings, and what the user can do: Ubuntu's AppArmor
// restriction points at the profile Harvey prints.
func TestNamespaceCause(t *testing.T) {
	saved := procSys
	t.Cleanup(func() { procSys = saved })
	for _, c := range []struct{ file, value, why, fix string }{
		{"kernel/apparmor_restrict_unprivileged_userns", "1", "apparmor_restrict_unprivileged_userns=1", "harvey sandbox apparmor"},
		{"kernel/unprivileged_userns_clone", "0", "unprivileged_userns_clone=0", "sysctl kernel.unprivileged_userns_clone=1"},
		{"user/max_user_namespaces", "0", "max_user_namespaces=0", "sysctl user.max_user_namespaces"},
		{"", "", "operation not permitted", "harvey sandbox apparmor"},
	} {
		procSys = t.TempDir()
		if c.file != "" {
			os.MkdirAll(filepath.Join(procSys, filepath.Dir(c.file)), 0o755)
			os.WriteFile(filepath.Join(procSys, c.file), []byte(c.value+"\n"), 0o644)
		}
		why, fix := nsCause("harvey sandbox: new namespaces: operation not permitted")
		if !strings.Contains(why, c.why) || !strings.Contains(fix, c.fix) {
			t.Errorf("%s=%s: %q / %q", c.file, c.value, why, fix)
		}
	}
}
