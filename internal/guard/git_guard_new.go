package guard

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/secrets"
)

// The check after a command, where the workspace had no repository: a
// .git the command made (git init, a clone) keeps only what names no
// program (git_guard.go has the check of an existing one).

// newRepoKeys are what a repository a command creates (git init, a clone)
// may keep in its config: the format, how files are written, who you are,
// branches and remotes — nothing that names a program.
var newRepoKeys = []string{"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
	"core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "extensions.objectformat", "extensions.refstorage",
	"user.name", "user.email", "init.defaultbranch"}

// newRepoSectionKeys are the keys allowed under a named subsection
// ([branch "main"], [remote "origin"]).
var newRepoSectionKeys = map[string][]string{"branch": {"remote", "merge", "rebase"}, "remote": {"url", "fetch", "pushurl"}}

// checkNewRepo looks at a .git the command made where there was none: its
// config keeps only newRepoKeys (as git itself reads it), its hooks only
// git's samples. What else it held is removed and said.
func (g *gitGuard) checkNewRepo(say func(string, ...any)) {
	gitDir := filepath.Join(g.root, ".git")
	if _, ok := identOf(gitDir); !ok {
		if fi, err := os.Lstat(gitDir); err == nil && !fi.IsDir() {
			os.Remove(gitDir) // a .git file pointing elsewhere: git would follow it
			say("[harvey: undone: the command made a .git file (it would point your next git at another repository); removed]")
		}
		return
	}
	r, err := os.OpenRoot(gitDir)
	if err != nil {
		return
	}
	defer r.Close()
	if kept, dropped := safeRepoConfig(filepath.Join(gitDir, "config")); len(dropped) > 0 {
		if err := putSaved(r, "config", &savedFile{data: []byte(kept), mode: 0o644}); err == nil {
			say("[harvey: undone: the repository the command made had settings your next git would act on (%s); its config keeps only the safe ones]", strings.Join(dropped, ", "))
		}
	}
	h := readHooks(r, "hooks")
	if h != nil && (h.link != "" || slices.ContainsFunc(slices.Collect(maps.Keys(h.files)), func(n string) bool { return !strings.HasSuffix(n, ".sample") })) {
		r.RemoveAll("hooks")
		r.Mkdir("hooks", 0o755)
		say("[harvey: undone: the repository the command made had hooks; removed]")
	}
	for _, n := range []string{"commondir", "config.worktree"} {
		if _, err := r.Lstat(n); err == nil {
			r.RemoveAll(n)
			say("[harvey: undone: the repository the command made had .git/%s; removed]", n)
		}
	}
}

// safeRepoConfig reads a config with git (git's parser, includes not
// followed) and returns it rewritten with only the allowed keys, and the
// keys it left out. An unreadable config is left out whole.
func safeRepoConfig(path string) (string, []string) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", nil
	}
	cmd := exec.Command(git, "config", "--file", path, "--null", "--list")
	cmd.Env = append(secrets.Environ(os.Environ()), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		if _, serr := os.Stat(path); serr == nil {
			return "", []string{"an unreadable config"}
		}
		return "", nil
	}
	var b strings.Builder
	var dropped []string
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		key, val, _ := strings.Cut(string(rec), "\n")
		low := strings.ToLower(key)
		first, rest, _ := strings.Cut(low, ".")
		sub, name := "", rest
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			sub, name = key[len(first)+1:len(first)+1+i], rest[i+1:]
		}
		switch {
		case sub == "" && slices.Contains(newRepoKeys, low):
			fmt.Fprintf(&b, "[%s]\n\t%s = \"%s\"\n", first, name, r.Replace(val))
		case sub != "" && slices.Contains(newRepoSectionKeys[first], name) && !strings.ContainsAny(sub, "\"\\\n"):
			fmt.Fprintf(&b, "[%s \"%s\"]\n\t%s = \"%s\"\n", first, sub, name, r.Replace(val))
		default:
			if !slices.Contains(dropped, low) {
				dropped = append(dropped, low)
			}
		}
	}
	return b.String(), dropped
}
