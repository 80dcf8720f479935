package guard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitFixture makes a repository with one commit, as a user's would be,
// and returns its root and git's environment (no global config).
func gitFixture(t *testing.T) (string, []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	gitSh(t, root, env, "git init -q -b main && echo a > a.txt && git add a.txt && git commit -qm first")
	return root, env
}

func gitSh(t *testing.T, dir string, env []string, line string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// What a command could leave in .git for the user's next git — run here
// directly, as in the sandbox's fallback without namespaces — is undone
// by the check after the command, and said: a renamed .git with another in
// its place, a changed config, a planted hook, a hooks link replaced, a
// gitlink in the index (index versions 2 and 4), a new modules/ entry, a
// config.lock left behind. Ordinary work (a commit) is left as it is.
func TestGitGuardUndoes(t *testing.T) {
	root, env := gitFixture(t)
	tmp := t.TempDir()
	marker := filepath.Join(tmp, "ran")
	os.WriteFile(filepath.Join(tmp, "plant.sh"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	plant := "[core]\n\tfsmonitor = " + filepath.Join(tmp, "plant.sh") + "\n"
	cases := []struct {
		name, line, said string
	}{
		{"rename", "mv .git .git~ && git init -q && printf '" + plant + "' >> .git/config", "moved .git"},
		{"config", "printf '" + plant + "' >> .git/config", ".git/config"},
		{"hook", "printf '#!/bin/sh\\ntouch " + marker + "\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit", ".git/hooks"},
		{"gitlink", "mkdir -p sub && git -C sub init -q && printf '" + plant + "' >> sub/.git/config && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub", "gitlink (sub)"},
		{"gitlink-v4", "git update-index --index-version 4 && mkdir -p sub4 && git -C sub4 init -q && printf '" + plant + "' >> sub4/.git/config && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub4", "gitlink (sub4)"},
		{"gitlink-split", "mkdir -p subs && git -C subs init -q && printf '" + plant + "' >> subs/.git/config && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),subs && git update-index --split-index", "split git's index"},
		{"modules", "mkdir -p .git/modules/evil && printf '" + plant + "' > .git/modules/evil/config", "modules/evil"},
		{"lock", "touch .git/config.lock", "config.lock"},
	}
	for _, c := range cases {
		g := guardGit(root)
		gitSh(t, root, env, c.line)
		said := strings.Join(g.check(changedFiles{}), "\n")
		if !strings.Contains(said, c.said) {
			t.Errorf("%s: not undone or not said: %q", c.name, said)
		}
		gitSh(t, root, env, "rm -rf sub sub4 .git~ && git update-index --index-version 2")
		out := gitSh(t, root, env, "git status --porcelain; echo b >> a.txt; git commit -qam next; git config --list; true")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%s: the user's next git ran what the command planted:\n%s", c.name, out)
			os.Remove(marker)
		}
	}
	// A hooks directory that is a link (shared hooks), replaced by a
	// directory of the command's.
	os.RemoveAll(filepath.Join(root, ".git", "hooks"))
	os.MkdirAll(filepath.Join(root, "shared-hooks"), 0o755)
	os.Symlink("../shared-hooks", filepath.Join(root, ".git", "hooks"))
	g := guardGit(root)
	gitSh(t, root, env, "rm .git/hooks && mkdir .git/hooks && printf '#!/bin/sh\\ntouch "+marker+"\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit")
	if said := g.check(changedFiles{}); len(said) == 0 {
		t.Error("a replaced hooks link: nothing said")
	}
	if l, err := os.Readlink(filepath.Join(root, ".git", "hooks")); err != nil || l != "../shared-hooks" {
		t.Errorf("the hooks link is not back: %q %v", l, err)
	}
	gitSh(t, root, env, "echo c >> a.txt && git commit -qam third")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook the command planted ran")
	}
	// Ordinary work: nothing to undo, nothing said.
	g = guardGit(root)
	gitSh(t, root, env, "git checkout -q -b feature && echo d > d.txt && git add d.txt && git commit -qm d && git stash list")
	if said := g.check(changedFiles{}); len(said) != 0 {
		t.Errorf("ordinary work was undone: %q", said)
	}
}

// The check after a command reads the index again only when its stamp
// changed; a command that writes a gitlink into the index in place, at the
// same size, and sets its modification time back is still caught (the
// change time cannot be set back).
func TestGitGuardIndexWrittenInPlace(t *testing.T) {
	root, env := gitFixture(t)
	idx := filepath.Join(root, ".git", "index")
	orig, _ := os.ReadFile(idx)
	forged := filepath.Join(t.TempDir(), "index")
	gitSh(t, root, append(env, "GIT_INDEX_FILE="+forged), "cp .git/index \"$GIT_INDEX_FILE\" && git update-index --cacheinfo 160000,$(git rev-parse HEAD),a.txt")
	b, _ := os.ReadFile(forged)
	if len(b) > len(orig) {
		t.Skipf("the forged index (%d bytes) is larger than the original (%d)", len(b), len(orig))
	}
	b = append(b, make([]byte, len(orig)-len(b))...) // the same size
	os.WriteFile(forged, b, 0o644)
	g := guardGit(root)
	if g.dirs[0].index == nil {
		t.Fatal("the index was not kept")
	}
	gitSh(t, root, env, "touch -r .git/index "+forged+".ref && cat "+forged+" > .git/index && touch -r "+forged+".ref .git/index")
	if fi, _ := os.Stat(idx); fi.Size() != int64(len(orig)) {
		t.Fatalf("the forged index is %d bytes", fi.Size())
	}
	if said := strings.Join(g.check(changedFiles{}), "\n"); !strings.Contains(said, "gitlink (a.txt)") {
		t.Fatalf("a gitlink written in place with its time set back: %q", said)
	}
	if now, _ := os.ReadFile(idx); string(now) != string(orig) {
		t.Fatal("the index is not as it was")
	}
	// Untouched, it is not read again (and nothing is said).
	g = guardGit(root)
	if said := g.check(changedFiles{}); len(said) != 0 {
		t.Fatalf("an untouched index: %q", said)
	}
}

// A planted config reached through a link inside .git (modules/x a link
// out of the workspace) is restored without writing through the link.
func TestGitGuardWritesNothingThroughLinks(t *testing.T) {
	root, env := gitFixture(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "config"), []byte("outside\n"), 0o644)
	gitSh(t, root, env, "mkdir -p .git/modules/m && cp .git/config .git/modules/m/config")
	g := guardGit(root)
	gitSh(t, root, env, "rm -rf .git/modules/m && ln -s "+outside+" .git/modules/m")
	g.check(changedFiles{})
	if b, _ := os.ReadFile(filepath.Join(outside, "config")); string(b) != "outside\n" {
		t.Fatalf("the check wrote through a link: %q", b)
	}
}

// The index reader finds gitlinks in an index git wrote, in each version.
func TestGitlinksInIndex(t *testing.T) {
	root, env := gitFixture(t)
	for _, v := range []string{"2", "3", "4"} {
		gitSh(t, root, env, "git update-index --index-version "+v+" && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),deep/path/sub"+v)
		b, err := os.ReadFile(filepath.Join(root, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		if got := gitlinks(b, 20); !strings.Contains(strings.Join(got, ","), "deep/path/sub"+v) {
			t.Errorf("index v%s: gitlinks %q", v, got)
		}
	}
}

// A workspace with no repository: the .git a command makes (git init, then
// an fsmonitor, a hook, an alias-like key) keeps only what names no
// program — identity, branches, remotes — and the user's next git status
// and commit in it run nothing the command planted.
func TestGitGuardNewRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, tmp := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	marker := filepath.Join(tmp, "ran")
	os.WriteFile(filepath.Join(tmp, "plant.sh"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	g := guardGit(root)
	gitSh(t, root, env, "git init -q -b main && git config core.fsmonitor "+filepath.Join(tmp, "plant.sh")+" && git config core.pager "+filepath.Join(tmp, "plant.sh")+
		" && git config user.name Model && git remote add origin https://example.com/r.git && cp "+filepath.Join(tmp, "plant.sh")+" .git/hooks/pre-commit && echo a > a.txt")
	said := strings.Join(g.check(changedFiles{}), "\n")
	if !strings.Contains(said, "core.fsmonitor") || !strings.Contains(said, "hooks") {
		t.Fatalf("not undone or not said: %q", said)
	}
	out := gitSh(t, root, env, "git status --porcelain; git add a.txt; git commit -qm first; git config user.name; git remote get-url origin; true")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the user's next git ran what the command planted:\n%s", out)
	}
	if !strings.Contains(out, "Model") || !strings.Contains(out, "https://example.com/r.git") {
		t.Fatalf("the safe settings were not kept:\n%s", out)
	}
	// A repository made with nothing to undo says nothing.
	other := t.TempDir()
	g = guardGit(other)
	gitSh(t, other, env, "git init -q -b main")
	if said := g.check(changedFiles{}); len(said) != 0 {
		t.Fatalf("a plain git init was undone: %q", said)
	}
}

// worktreeFixture makes a repository main/ with a commit and a tracked
// Makefile, and two linked worktrees beside it, wt/ and sib/ (git worktree
// add): their .git files point at main/.git/worktrees/{wt,sib}, which
// share main/.git's config and hooks.
func worktreeFixture(t *testing.T) (base string, env []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base = t.TempDir()
	env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	os.MkdirAll(filepath.Join(base, "main"), 0o755)
	gitSh(t, filepath.Join(base, "main"), env, "git init -q -b main && printf 'all:\\n\\t@echo built\\n' > Makefile && echo a > a.txt && git add -A && git commit -qm first"+
		" && git worktree add -q ../wt -b wt && git worktree add -q ../sib -b sib")
	return base, env
}

// A workspace that is a linked worktree, and an ordinary checkout with a
// worktree elsewhere (issue 45): what a command changes in any git
// directory the workspace's git uses — its own under worktrees/, the
// common one, a sibling's — or hides from review is undone and said, and
// the user's next git status, commit and make (in the workspace, the
// sibling and the main checkout) run nothing it planted. Run directly, as
// in the sandbox's modes without namespaces (the check is all there is).
func TestGitGuardWorktrees(t *testing.T) {
	base, env := worktreeFixture(t)
	tmp := t.TempDir()
	marker := filepath.Join(tmp, "ran")
	plantSh := filepath.Join(tmp, "plant.sh")
	os.WriteFile(plantSh, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	evil := filepath.Join(tmp, "evil") // a common directory of the command's, with an fsmonitor
	gitSh(t, filepath.Join(base, "main"), env, "cp -r .git "+evil+" && rm -rf "+evil+"/worktrees && git config -f "+evil+"/config core.fsmonitor "+plantSh)
	hooksPath := filepath.Join(tmp, "gitconfig")
	os.WriteFile(hooksPath, []byte("[core]\n\thooksPath = .githooks\n"), 0o644)
	t.Setenv("GIT_CONFIG_GLOBAL", hooksPath) // the user's own config: a relative hooksPath
	userEnv := append(slices.Clone(env), "GIT_CONFIG_GLOBAL="+hooksPath)
	common := filepath.Join(base, "main", ".git")
	cases := []struct {
		name, ws, line, said string
	}{
		{"own gitdir rebuilt", "wt", `gd=$(git rev-parse --absolute-git-dir) && mv "$gd" "$gd.old" && cp -r "$gd.old" "$gd" && echo ` + evil + ` > "$gd/commondir"`, "moved " + common + "/worktrees/wt"},
		{"own commondir", "wt", `echo ` + evil + ` > "$(git rev-parse --absolute-git-dir)/commondir"`, "worktrees/wt/commondir"},
		{"the .git file", "wt", `echo "gitdir: ` + evil + `" > .git`, "the .git file"},
		{"common config", "wt", "git config core.fsmonitor " + plantSh, common + "/config"},
		{"common hook", "wt", `cp ` + plantSh + ` "$(git rev-parse --git-common-dir)/hooks/pre-commit"`, common + "/hooks"},
		{"sibling's commondir", "wt", `echo ` + evil + ` > "$(git rev-parse --git-common-dir)/worktrees/sib/commondir"`, "worktrees/sib/commondir"},
		{"sibling's commondir from main", "main", `echo ` + evil + ` > .git/worktrees/sib/commondir`, ".git/worktrees/sib/commondir"},
		{"a worktree entry leading elsewhere", "main", `mkdir .git/worktrees/x && echo ` + evil + ` > .git/worktrees/x/commondir`, ".git/worktrees/x"},
		{"hooksPath of the user's config", "wt", `mkdir -p .githooks && cp ` + plantSh + ` .githooks/pre-commit`, ".githooks"},
		{"skip-worktree", "wt", "printf 'all:\\n\\t@touch " + marker + "\\n' > Makefile && git update-index --skip-worktree Makefile", "Makefile skip-worktree"},
		{"assume-unchanged", "main", "printf 'all:\\n\\t@touch " + marker + "\\n' > Makefile && git update-index --assume-unchanged Makefile", "Makefile skip-worktree or assume-unchanged"},
		{"info/exclude", "wt", `echo conftest.py >> "$(git rev-parse --git-common-dir)/info/exclude" && echo x > conftest.py`, "info/exclude"},
	}
	for _, c := range cases {
		ws := filepath.Join(base, c.ws)
		g := guardGit(ws)
		gitSh(t, ws, env, c.line)
		said := strings.Join(g.check(changedFiles{}), "\n")
		if !strings.Contains(said, c.said) {
			t.Errorf("%s: not undone or not said (want %q): %q", c.name, c.said, said)
		}
		// What was hidden shows in git status again (and is the user's
		// to review, as any change a command makes).
		if strings.Contains(c.name, "-") || c.name == "info/exclude" {
			if st := gitSh(t, ws, env, "git status --porcelain"); !strings.Contains(st, "Makefile") && !strings.Contains(st, "conftest.py") {
				t.Errorf("%s: the change is still hidden from git status: %q", c.name, st)
			}
			gitSh(t, ws, env, "git checkout -- Makefile && rm -f conftest.py")
		}
		var out string
		for _, w := range []string{"wt", "sib", "main"} {
			out += gitSh(t, filepath.Join(base, w), userEnv, "git status --porcelain; echo b >> a.txt; git commit -qam next 2>&1; make 2>&1; true")
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%s: the user's next git or make ran what the command planted:\n%s", c.name, out)
			os.Remove(marker)
		}
		os.RemoveAll(filepath.Join(ws, ".githooks"))
	}
	// Ordinary work in a worktree: nothing to undo, nothing said.
	ws := filepath.Join(base, "wt")
	g := guardGit(ws)
	gitSh(t, ws, env, "git checkout -q -b feature && echo d > d.txt && git add d.txt && git commit -qm d && git stash list && git worktree add -q inner -b inner && git worktree list")
	if said := g.check(changedFiles{}); len(said) != 0 {
		t.Errorf("ordinary work was undone: %q", said)
	}
}

func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A staged change hidden in the index: the command changes a tracked file,
// stages it, then writes the committed blob's id back into the entry,
// keeping the stat data git add recorded. After the check, git status sees
// the change again, whether the changed files are known (the walk) or only
// the index from before is (the journal); the entry of a file left alone
// keeps its stat data.
func TestGitGuardStaleEntries(t *testing.T) {
	for _, known := range []bool{true, false} {
		root, env := gitFixture(t)
		gitSh(t, root, env, "echo b > b.txt && git add b.txt && git commit -qm second && touch -d '10 seconds ago' a.txt b.txt && git update-index --refresh")
		g := guardGit(root)
		old := strings.TrimSpace(gitSh(t, root, env, "git rev-parse HEAD:a.txt"))
		gitSh(t, root, env, "echo changed > a.txt && touch -d '5 seconds ago' a.txt && git add a.txt")
		idx := filepath.Join(root, ".git", "index")
		b, _ := os.ReadFile(idx)
		for _, e := range indexEntries(b, 20) {
			if e.name == "a.txt" {
				hex := make([]byte, 20)
				for i := range hex {
					fmt.Sscanf(old[2*i:2*i+2], "%02x", &hex[i])
				}
				copy(b[e.at+40:e.at+60], hex)
			}
		}
		rehash(b, 20)
		os.WriteFile(idx, b, 0o644)
		if st := gitSh(t, root, env, "git status --porcelain"); strings.Contains(st, "a.txt") {
			t.Fatalf("the forged entry does not hide the change here: %q", st)
		}
		changed := changedFiles{known: known}
		if known {
			changed.paths = []string{"a.txt"}
		}
		g.check(changed)
		if st := gitSh(t, root, env, "git status --porcelain"); !strings.Contains(st, "a.txt") {
			t.Errorf("known %v: git status still hides the change: %q", known, st)
		}
		b, _ = os.ReadFile(idx)
		for _, e := range indexEntries(b, 20) {
			if e.name == "b.txt" && !e.stale(append([]byte{}, b...)) {
				t.Errorf("known %v: the entry of a file left alone lost its stat data", known)
			}
		}
	}
}
