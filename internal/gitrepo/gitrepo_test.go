package gitrepo

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/refusal"
)

// runGit runs git as the caller would (without the sandbox, for the test).
func runGit(ctx context.Context, home string, argv []string) []byte {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = home, Env(home)
	out, _ := cmd.Output()
	return out
}

func repo(t *testing.T) (string, *Repo) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = Env(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	r := New(root, dir, runGit)
	t.Cleanup(r.Close)
	return dir, r
}

// The private directory's config holds the allowlisted keys and Harvey's
// settings, never what the repository's config tries to make git run.
func TestDirKeepsOnlyTheAllowlist(t *testing.T) {
	dir, r := repo(t)
	hostile := "\n[core]\n\tfsmonitor = touch /tmp/harvey-gitrepo-pwned\n\thooksPath = .\n[filter \"x\"]\n\tclean = touch /tmp/harvey-gitrepo-pwned\n[include]\n\tpath = /etc/passwd\n"
	f, _ := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(hostile)
	f.Close()
	gd, err := r.Dir(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(gd, "config"))
	for _, bad := range []string{"touch", "include", "filter", "hooksPath = ."} {
		if strings.Contains(string(cfg), bad) {
			t.Fatalf("%q reached the private config:\n%s", bad, cfg)
		}
	}
	if !strings.Contains(string(cfg), "repositoryformatversion") || !strings.Contains(string(cfg), `hooksPath = "/dev/null"`) {
		t.Fatalf("config:\n%s", cfg)
	}
	if head, _ := os.ReadFile(filepath.Join(gd, "HEAD")); !strings.HasPrefix(string(head), "ref: refs/heads/") {
		t.Fatalf("HEAD %q", head)
	}
}

// What could lead git outside the workspace is refused, as a refusal.
func TestDirRefusesWhatLeadsOutside(t *testing.T) {
	for name, plant := range map[string]func(git string){
		"commondir": func(git string) { os.WriteFile(filepath.Join(git, "commondir"), []byte("/elsewhere\n"), 0o644) },
		"alternates": func(git string) {
			os.WriteFile(filepath.Join(git, "objects", "info", "alternates"), []byte("/elsewhere\n"), 0o644)
		},
		"linked refs": func(git string) {
			os.Symlink(t.TempDir(), filepath.Join(git, "refs", "elsewhere"))
		},
		"bad HEAD": func(git string) { os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: ../../x\n"), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			dir, r := repo(t)
			plant(filepath.Join(dir, ".git"))
			if _, err := r.Dir(t.Context()); !errors.Is(err, refusal.ErrRefused) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// git's environment is built from nothing: no global or system config.
func TestEnvIsBuiltFromNothing(t *testing.T) {
	t.Setenv("GIT_DIR", "/elsewhere")
	env := strings.Join(Env("/private"), "\n")
	if strings.Contains(env, "GIT_DIR=") || !strings.Contains(env, "GIT_CONFIG_GLOBAL=/dev/null") || !strings.Contains(env, "HOME=/private") {
		t.Fatalf("env:\n%s", env)
	}
}
