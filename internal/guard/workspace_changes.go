package guard

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// What a command changed in the workspace, named in its result: every file
// it made, wrote or removed (by stamp: device, inode, size, modification
// and change times, which a command cannot set back), outside .git/ (the
// check after the command covers it) and agents/ (a command cannot write
// there). So a change a command makes is the user's to review, as any
// change is, even when git would not show it: an ignored file, a file in a
// directory git does not track. The walk does not follow links, and gives
// up (saying so) past changesMaxFiles entries.

// changesMaxFiles bounds the walk before and after a command.
const changesMaxFiles = 50_000

// changesShown is how many changed files a result names before "and N more".
const changesShown = 8

// workspaceFiles is the workspace's files by path, and whether the walk
// saw them all.
type workspaceFiles struct {
	root     string
	stamps   map[string]fsinfo.Stamp
	complete bool
	tracked  *trackToken // the session's tracker follows the files (tracker_linux.go)
}

// snapshotFiles records the stamps of the files under root (or begins a
// check through the workspace's tracker, which keeps them).
func snapshotFiles(root string) *workspaceFiles {
	if tok := beginTracked(root); tok != nil {
		return &workspaceFiles{root: root, complete: true, tracked: tok}
	}
	return walkFiles(root)
}

// walkFiles records the stamps of the files under root by walking it.
func walkFiles(root string) *workspaceFiles {
	w := &workspaceFiles{root: root, stamps: map[string]fsinfo.Stamp{}, complete: true}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == ".git" || rel == AgentsDir {
				return fs.SkipDir
			}
			return nil
		}
		if len(w.stamps) >= changesMaxFiles {
			w.complete = false
			return fs.SkipAll
		}
		if st, ok := fsinfo.LstatStamp(p); ok {
			w.stamps[filepath.ToSlash(rel)] = st
		}
		return nil
	})
	return w
}

// changed lists what changed since the snapshot, sorted, each path with
// " (new)" or " (removed)" where it is one; paths are the files made or
// changed (slash paths from the root). complete is false when either walk
// gave up (or there was no snapshot).
func (w *workspaceFiles) changed() (list, paths []string, complete bool) {
	if w == nil {
		return nil, nil, false
	}
	if w.tracked != nil {
		return endTracked(w.tracked)
	}
	now := walkFiles(w.root)
	if !w.complete || !now.complete {
		return nil, nil, false
	}
	for p, k := range now.stamps {
		if old, ok := w.stamps[p]; !ok {
			list, paths = append(list, p+" (new)"), append(paths, p)
		} else if old != k {
			list, paths = append(list, p), append(paths, p)
		}
	}
	for p := range w.stamps {
		if _, ok := now.stamps[p]; !ok {
			list = append(list, p+" (removed)")
		}
	}
	slices.Sort(list)
	return list, paths, true
}

// changesLine is one line naming what changed ("" when nothing did, or
// there was no snapshot).
func (w *workspaceFiles) changesLine(list []string, complete bool) string {
	if w == nil {
		return ""
	}
	if !complete {
		return fmt.Sprintf("[harvey: the workspace has more than %d files: the files the command changed are not listed; review them with git status]", changesMaxFiles)
	}
	if len(list) == 0 {
		return ""
	}
	return fmt.Sprintf("[harvey: %s changed in the workspace: %s]", termtext.Plural(len(list), "file"), termtext.Sanitize(strings.Join(termtext.ClipList(summarised(w.root, list), changesShown), ", ")))
}

// summarised lists what changed with each top directory that holds more
// changed files than a result names as one entry ("node_modules/: 2,104
// files, ignored"): an install's thousands of files then take one entry,
// and the rest stay named. "ignored" is said where the workspace's
// .gitignore names the directory itself by a plain pattern (node_modules,
// /node_modules/, ...), which git reads exactly so.
func summarised(root string, list []string) []string {
	counts := map[string]int{}
	for _, p := range list {
		if dir, _, ok := strings.Cut(p, "/"); ok {
			counts[dir]++
		}
	}
	var out []string
	said := map[string]bool{}
	for _, p := range list {
		dir, _, ok := strings.Cut(p, "/")
		if !ok || counts[dir] <= changesShown {
			out = append(out, p)
			continue
		}
		if !said[dir] {
			said[dir] = true
			entry := fmt.Sprintf("%s/: %d files", dir, counts[dir])
			if ignoredDir(root, dir) {
				entry += ", ignored"
			}
			out = append(out, entry)
		}
	}
	return out
}

// ignoredDir reports whether root's .gitignore names dir by a plain line
// (no wildcard, no negation): "dir", "dir/", "/dir" or "/dir/".
func ignoredDir(root, dir string) bool {
	b, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		if strings.Trim(l, "/") == dir && !strings.ContainsAny(l, "*?[!\\") {
			return true
		}
	}
	return false
}

// Guard is everything checked around one sandboxed process: the
// workspace's git (git_guard.go), agents/ where the sandbox cannot hide it
// (agents_guard.go), and the files it changed.
type Guard struct {
	git     *gitGuard
	agents  *agentsGuard
	files   *workspaceFiles
	journal string   // guard_journal.go: the check, kept on disk until it is done
	blobs   []string // the blobs its journal names (journal_blobs.go)
	root    string   // the workspace, and what the journal names: for a journal written again
	what    string
}

// Command records the workspace before a process runs (what names it
// in the journal that keeps the check should Harvey stop meanwhile).
func Command(root, what string) *Guard {
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	c := &Guard{git: guardGit(root), agents: guardAgents(root), files: snapshotFiles(root)}
	c.git.inherit(oldestOpen(root)) // live.go
	c.keep(root, what)
	return c
}

// Call is the check of one call to a stdio server whose Life check c is:
// it starts from the snapshot that check just took (.git's files and the
// index are read once) and is journaled as what.
func (c *Guard) Call(root, what string) *Guard {
	g := &Guard{git: c.git, agents: c.agents, files: snapshotFiles(root)}
	g.keep(root, what)
	return g
}

// keep writes the journal of the check (guard_journal.go).
func (c *Guard) keep(root, what string) {
	c.root, c.what = root, what
	c.journal, c.blobs = writeJournal(root, what, c)
	opened(c)
}

// Forget drops the check without running it (one taken later covers the
// same: a stdio server's life check once its call's check has run).
func (c *Guard) Forget() {
	if c != nil {
		closed(c)
		removeJournal(c.journal, c.blobs)
		c.journal, c.blobs = "", nil
	}
}

// undoing serializes the checks that put .git and agents/ back (a
// command's after it, a job's while it runs): two never write at once.
var undoing sync.Mutex

// Check undoes what must not stay and says, a line each, what it undid;
// changed names the files the process changed ("" when none).
func (c *Guard) Check() (undone []string, changed string) {
	if c == nil {
		return nil, ""
	}
	list, paths, complete := c.files.changed()
	undoing.Lock()
	undone = append(c.git.check(changedFiles{paths, complete}), c.agents.check()...)
	undoing.Unlock()
	closed(c)
	removeJournal(c.journal, c.blobs)
	return undone, c.files.changesLine(list, complete)
}

// Recheck undoes what changed in .git and agents/ since c was taken, as
// Check does, while the process still runs (a background job's, where
// commands have no private root: issue 75); c stays, journaled, for the
// next Recheck and the Check at its end.
func (c *Guard) Recheck() []string {
	if c == nil {
		return nil
	}
	undoing.Lock()
	defer undoing.Unlock()
	undone := append(c.git.check(changedFiles{}), c.agents.check()...)
	if c.agents != nil && c.agents.rebased && c.journal != "" {
		// Harvey wrote agents/ meanwhile: the journal takes its writes as
		// the record's too, so a check from it (the guardian's, the next
		// start's) does not undo them.
		c.agents.rebased = false
		old, oldBlobs := c.journal, c.blobs
		c.keep(c.root, c.what)
		removeJournal(old, oldBlobs)
	}
	return undone
}
