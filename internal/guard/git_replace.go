package guard

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/fsinfo"
)

// Replace refs in the check after every command: git replace makes git
// show one object in place of another, so a command could stage a change,
// write a commit whose tree holds it, and replace HEAD with that commit:
// the user's git status, git diff and git diff HEAD then show nothing,
// while make runs the new file and the next git commit -a commits it. The
// refs under refs/replace/ (loose, or lines of packed-refs) are recorded
// before a command; one it adds or changes is removed (or put back) and
// said, in every mode.

// replaceRefs are the replace refs of the git directory r: name → the
// object it points at (a loose ref wins over a packed one, as in git).
func replaceRefs(r *os.Root) map[string]string {
	out := map[string]string{}
	if b, err := r.ReadFile("packed-refs"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			sha, name, ok := strings.Cut(strings.TrimSpace(line), " ")
			if ok && strings.HasPrefix(name, "refs/replace/") {
				out[name] = sha
			}
		}
	}
	fs.WalkDir(r.FS(), "refs/replace", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := r.ReadFile(p); err == nil {
			out[p] = strings.TrimSpace(string(b))
		} else {
			out[p] = "?"
		}
		return nil
	})
	return out
}

// checkReplaceRefs undoes the replace refs a command added or changed in
// the common directory r.
func (d *gitDirGuard) checkReplaceRefs(r *os.Root, say func(string, ...any)) {
	now := replaceRefs(r)
	var changed []string
	for name, sha := range now {
		if before, ok := d.replaces[name]; !ok || before != sha {
			changed = append(changed, name)
		}
	}
	for name := range d.replaces {
		if _, ok := now[name]; !ok {
			changed = append(changed, name) // removed: put back below
		}
	}
	if len(changed) == 0 {
		return
	}
	slices.Sort(changed)
	if err := d.putReplaceRefs(r, changed); err != nil {
		say("[harvey: the command changed git's replace refs (%s) and they could not be put back: %v; git status and git diff may not show its changes: run git replace -l]", strings.Join(changed, ", "), fsinfo.ErrText(err))
		return
	}
	say("[harvey: undone: the command changed git's replace refs (%s), so git status, git diff and git log would have shown you another history than the one on disk; they are as they were — review what it changed]", strings.Join(changed, ", "))
}

// putReplaceRefs makes each named replace ref what it was: its loose file
// removed (or written back), its packed-refs line removed (or written
// back).
func (d *gitDirGuard) putReplaceRefs(r *os.Root, names []string) error {
	for _, name := range names {
		r.Remove(name)
		if sha, ok := d.replaces[name]; ok && d.replacesLoose[name] {
			if err := putSaved(r, name, &savedFile{data: []byte(sha + "\n"), mode: 0o644}); err != nil {
				return err
			}
		}
	}
	b, err := r.ReadFile("packed-refs")
	if err != nil {
		return nil
	}
	var keep []string
	skipPeeled := false
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if strings.HasPrefix(line, "^") && skipPeeled {
			continue
		}
		skipPeeled = false
		_, name, _ := strings.Cut(line, " ")
		if slices.Contains(names, name) {
			skipPeeled = true
			continue
		}
		keep = append(keep, line)
	}
	for _, name := range names {
		if sha, ok := d.replaces[name]; ok && !d.replacesLoose[name] {
			keep = append(keep, sha+" "+name)
		}
	}
	return putSaved(r, "packed-refs", &savedFile{data: []byte(strings.Join(keep, "\n") + "\n"), mode: 0o644})
}

// recordReplaceRefs records the replace refs of a common directory, and
// which of them are loose.
func (d *gitDirGuard) recordReplaceRefs(r *os.Root) {
	d.replaces = replaceRefs(r)
	d.replacesLoose = map[string]bool{}
	for name := range maps.Keys(d.replaces) {
		if _, err := r.Lstat(path.Clean(name)); err == nil {
			d.replacesLoose[name] = true
		}
	}
}
