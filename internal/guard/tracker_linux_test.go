//go:build linux

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

// What the tracker lists for a check is what walking the workspace before
// and after lists: files made, written (also through a shared mapping),
// chmod-ed, removed, renamed; directories made, filled, removed, renamed;
// a file replaced by a directory and back; a link; and past a lost event
// queue (more events than the kernel keeps).
func TestTrackerListsWhatTheWalkLists(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"a.txt", "b.txt", "c.txt", "mapped.bin", "d/one.txt", "d/two.txt", "gone/x.txt", "moved/y.txt", "was-file", "keep.txt", ".git/config", "agents/state"} {
		write(p, "0123456789\n")
	}
	steps := []struct {
		name string
		sh   string
	}{
		{"edits", "echo more >> a.txt; rm b.txt; chmod 600 c.txt; echo new > n.txt; mkdir -p e/f; echo deep > e/f/g.txt"},
		{"mmap", `python3 -c "
import mmap
f = open('mapped.bin', 'r+b'); m = mmap.mmap(f.fileno(), 0); f.close(); m[0:4] = b'XXXX'; m.flush()"`},
		{"dirs", "rm -r gone; mv moved elsewhere; mv d/one.txt d/uno.txt; rm was-file; mkdir was-file; echo in > was-file/z; ln -s keep.txt link"},
		{"back", "rm -r was-file; echo file > was-file; echo x > .git/config; echo y > agents/state"},
		{"flood", "mkdir -p many && cd many && for i in $(seq 1 2200); do for j in 1 2 3 4 5 6 7 8; do echo $i > f$i-$j; done; done"},
		{"flood-gone", "rm -r many"},
	}
	for _, st := range steps {
		if st.name == "mmap" {
			if _, err := exec.LookPath("python3"); err != nil {
				continue
			}
		}
		before := walkFiles(root)
		tok := beginTracked(root)
		if tok == nil {
			t.Skip("no inotify tracker here")
		}
		cmd := exec.Command("sh", "-c", st.sh)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", st.name, err, out)
		}
		want, wantPaths, _ := before.changed()
		got, gotPaths, ok := endTracked(tok)
		if !ok {
			t.Fatalf("%s: the tracker lost its check", st.name)
		}
		slices.Sort(wantPaths)
		slices.Sort(gotPaths)
		if !slices.Equal(got, want) || !slices.Equal(gotPaths, wantPaths) {
			t.Errorf("%s: the tracker listed %s\n(paths %v)\nthe walk %s\n(paths %v)", st.name, clip(got), clip(gotPaths), clip(want), clip(wantPaths))
		}
		if len(want) == 0 {
			t.Errorf("%s: nothing changed: the step tests nothing", st.name)
		}
	}
}

func clip(l []string) string {
	if len(l) > 12 {
		return fmt.Sprintf("%s … (%d)", strings.Join(l[:12], ", "), len(l))
	}
	return strings.Join(l, ", ")
}

// Two checks under way at once (a job's and a command's) each list what
// changed since their own start.
func TestTrackerOverlappingChecks(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644)
	job := beginTracked(root)
	if job == nil {
		t.Skip("no inotify tracker here")
	}
	os.WriteFile(filepath.Join(root, "a"), []byte("a2"), 0o644)
	cmd := beginTracked(root)
	os.WriteFile(filepath.Join(root, "b"), []byte("b"), 0o644)
	got, _, _ := endTracked(cmd)
	if strings.Join(got, ",") != "b (new)" {
		t.Errorf("the command's check listed %v", got)
	}
	got, _, _ = endTracked(job)
	if strings.Join(got, ",") != "a,b (new)" {
		t.Errorf("the job's check listed %v", got)
	}
}

// An install's thousands of files take one entry of the changes line,
// saying the directory is ignored where .gitignore names it (issue 62).
func TestChangesLineSummarisesADirectory(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("/node_modules/\n*.log\n"), 0o644)
	var list []string
	for i := 0; i < 2104; i++ {
		list = append(list, fmt.Sprintf("node_modules/p%d/index.js (new)", i))
	}
	list = append(list, "package-lock.json (new)", "src/a.go")
	for i := 0; i < 12; i++ {
		list = append(list, fmt.Sprintf("build/out%d", i))
	}
	line := (&workspaceFiles{root: root}).changesLine(list, true)
	for _, want := range []string{"2118 files changed", "node_modules/: 2104 files, ignored", "package-lock.json (new)", "src/a.go", "build/: 12 files"} {
		if !strings.Contains(line, want) {
			t.Errorf("the changes line lacks %q: %s", want, line)
		}
	}
	if strings.Contains(line, "build/: 12 files, ignored") || strings.Contains(line, "p17") {
		t.Errorf("the changes line: %s", line)
	}
}
