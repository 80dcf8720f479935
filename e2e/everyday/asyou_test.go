// Feature: commands run as you (issue 76). Inside the sandbox a command's
// uid and gid are the user's own in every kernel mode (root stays root),
// so a project-local PostgreSQL works as in your shell: initdb and postgres
// as a background job in the workspace, psql from a later command.
package everyday

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
)

// postgresBin is the directory of PostgreSQL's server programs (Debian
// keeps them off PATH), or "".
func postgresBin() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

func TestEndToEndCommandsRunAsYou(t *testing.T) {
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	pg := postgresBin()
	for _, kernel := range e2e.Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			lines := "!id -u; id -g; touch made\n"
			withPG := os.Getuid() != 0 && pg != ""
			if withPG {
				port := 40000 + os.Getpid()%10000 + len(kernel)
				lines += "!initdb -D pgdata -A trust -U postgres > initdb.log 2>&1; echo initdb=$?\n" +
					fmt.Sprintf("!postgres -D pgdata -k \"$PWD\" -c listen_addresses=127.0.0.1 -p %d &\n", port) +
					fmt.Sprintf("!for i in $(seq 40); do pg_isready -q -h 127.0.0.1 -p %[1]d && break; sleep 0.25; done; psql -h 127.0.0.1 -p %[1]d -U postgres -Atc 'select 41+1'\n", port)
			}
			e2e.WriteFile(t, dir, "steps", lines)
			env := []string{"PATH=" + pg + ":" + os.Getenv("PATH")}
			out, errOut, code := e2e.RunKernel(t, kernel, bin, dir, "", env, "--run", "steps")
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, out, errOut)
			}
			all := out + errOut
			if want := fmt.Sprintf("%d\n%d\n", os.Getuid(), os.Getgid()); !strings.Contains(all, want) {
				t.Errorf("the command's uid and gid are not yours (%q):\n%s", want, all)
			}
			if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
				t.Fatalf("no file made: %v\n%s", err, all)
			}
			if !withPG {
				t.Skipf("PostgreSQL not tried: %s", map[bool]string{true: "as root (postgres refuses root, as it does in your shell)", false: "no initdb here"}[os.Getuid() == 0])
			}
			if !strings.Contains(all, "initdb=0") || !strings.Contains(all, "\n42\n") {
				log, _ := os.ReadFile(filepath.Join(dir, "initdb.log"))
				t.Errorf("the project's PostgreSQL:\n%s\n%s", all, log)
			}
		})
	}
}
