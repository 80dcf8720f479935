package guard

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// The check after every command: what the user's next git runs outside the
// sandbox is compared with what it was before the command, and any change
// is undone and reported. That is, in every git directory the workspace's
// git uses (gitLayout: .git, or the git directory a .git file names, the
// common directory and every sibling worktree's entry under it): the
// directory itself, its config, hooks, commondir, gitdir and
// config.worktree, the index's gitlinks, modules/, info/attributes, lock
// files, and what hides a change from review (info/exclude, the index's
// skip-worktree and assume-unchanged bits); and the paths in the workspace
// that git resolves from the repository's or the user's config
// (gitRunPaths: a core.hooksPath of .githooks). In the sandbox with
// namespaces most of it cannot change at all (the git directories are
// pinned, their config and hooks are read-only mounts); the check is what
// holds where they do not (Landlock only, or no sandbox) and for what no
// mount can protect: a gitlink written into the index (git status enters
// the nested repository and runs its config), a new modules/ entry, a
// hooks link replaced, a lock file left behind. Files are read and
// restored through os.Root at each git directory, so a link planted inside
// it leads nowhere.

// gitGuardMaxIndex bounds the copy of an index kept while a command runs.
const gitGuardMaxIndex = 64 << 20

// gitGuard is the state of a workspace's git before a command.
type gitGuard struct {
	root   string
	fresh  bool       // no .git before the command: one it makes is checked whole
	dotGit *savedFile // a .git file (a linked worktree, a submodule) as it was
	dirs   []*gitDirGuard
	paths  map[string]*savedHooks // gitRunPaths: a directory's files, or a file (files["."])
	common string                 // the common directory before the command (a path may lie in it)
}

// gitDirGuard is one git directory before a command.
type gitDirGuard struct {
	dir        string // absolute
	shown      string // as the user is told: .git, .git/worktrees/NAME, or the path
	common     bool   // the common directory: config, hooks, modules/, info/, worktrees/
	own        bool   // the workspace's own git directory: its index's paths are the workspace's
	hashLen    int    // 20 for SHA-1 object names, 32 for SHA-256
	ident      fileIdent
	files      map[string]*savedFile  // protected files by path in the directory (nil: missing)
	hooks      map[string]*savedHooks // hooks/ and each module's
	modules    []string               // names under modules/
	worktrees  []string               // names under worktrees/
	locks      []string               // *.lock files already there
	index      []byte                 // the index as it was (nil: none, or too large to keep)
	indexLarge bool                   // there was an index, too large to keep a copy of
	links      []string               // the index's gitlinks (mode 160000)
	hidden     []string               // the index's entries marked skip-worktree or assume-unchanged
	indexAt    fsinfo.Stamp           // the index's stamp when read: unchanged after the command, it is not read again
	// replaces are the replace refs (git_replace.go), of a common directory
	// only; replacesLoose those kept as files.
	replaces      map[string]string
	replacesLoose map[string]bool
}

type fileIdent struct{ dev, ino uint64 }

type savedFile struct {
	data []byte
	mode fs.FileMode
}

// savedHooks is a hooks directory: a link (its target) or its files.
type savedHooks struct {
	link  string
	files map[string]*savedFile
}

// identOf is the device and inode of p itself (a link is not followed).
func identOf(p string) (fileIdent, bool) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return fileIdent{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdent{}, false
	}
	return fileIdent{uint64(st.Dev), uint64(st.Ino)}, true
}

// indexKey is the stamp of the directory's index (ok false when it has none).
func (d *gitDirGuard) indexKey() (fsinfo.Stamp, bool) {
	return fsinfo.LstatStamp(filepath.Join(d.dir, "index"))
}

// guardGit records the workspace's git (nil when its .git is something git
// would not use).
func guardGit(root string) *gitGuard {
	l, ok := readGitLayout(root)
	if !ok {
		if _, err := os.Lstat(filepath.Join(root, ".git")); errors.Is(err, fs.ErrNotExist) {
			return &gitGuard{root: root, fresh: true}
		}
		return nil
	}
	g := &gitGuard{root: root, common: l.common}
	if l.isFile {
		g.dotGit = readSavedAt(root, ".git")
	}
	hashLen := repoHashLen(filepath.Join(l.common, "config"))
	g.dirs = append(g.dirs, guardDir(root, l.common, true, hashLen))
	for _, d := range append([]string{l.gitDir}, l.worktreeDirs()...) {
		if !slices.ContainsFunc(g.dirs, func(x *gitDirGuard) bool { return x.dir == d }) {
			g.dirs = append(g.dirs, guardDir(root, d, false, hashLen))
		}
	}
	for _, d := range g.dirs {
		d.own = d.dir == l.gitDir
	}
	g.paths = map[string]*savedHooks{}
	for _, p := range gitRunPaths(root, l) {
		if base, rel, ok := g.rootOf(p); ok {
			g.paths[p] = readPath(base, rel)
		}
	}
	return g
}

// rootOf is the directory a run path is read and restored through (the
// workspace, or the common directory for an include kept there) and its
// path inside it; ok false for a path a command cannot write anyway.
func (g *gitGuard) rootOf(p string) (string, string, bool) {
	for _, base := range []string{g.root, g.common} {
		if rel, err := filepath.Rel(base, p); err == nil && sandbox.Under(p, []string{base}) && rel != "." {
			return base, rel, true
		}
	}
	return "", "", false
}

// guardDir records one git directory.
func guardDir(root, dir string, common bool, hashLen int) *gitDirGuard {
	d := &gitDirGuard{dir: dir, shown: dir, common: common, hashLen: hashLen, files: map[string]*savedFile{}}
	if rel, err := filepath.Rel(root, dir); err == nil && sandbox.Under(dir, []string{root}) {
		d.shown = rel
	}
	d.ident, _ = identOf(dir)
	r, err := os.OpenRoot(dir)
	if err != nil {
		return d
	}
	defer r.Close()
	if common {
		d.modules = dirNames(r, "modules")
		d.worktrees = dirNames(r, "worktrees")
		d.hooks = map[string]*savedHooks{}
		for _, h := range d.hookDirs() {
			d.hooks[h] = readHooks(r, h)
		}
		d.recordReplaceRefs(r)
	}
	for _, p := range d.protectedFiles() {
		d.files[p] = readSaved(r, p)
	}
	d.locks = lockFiles(r, d.modules)
	if fi, err := r.Lstat("index"); err == nil && fi.Mode().IsRegular() && fi.Size() > gitGuardMaxIndex {
		d.indexLarge = true
	} else if err == nil && fi.Mode().IsRegular() {
		key, keyed := d.indexKey() // before the read: a write meanwhile makes it differ after the command
		d.readIndex(r, key, keyed)
	}
	return d
}

// repoHashLen is the length of the repository's object names: 32 bytes
// where its config says objectformat = sha256, else SHA-1's 20.
func repoHashLen(config string) int {
	b, _ := os.ReadFile(config)
	for _, line := range strings.Split(strings.ToLower(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "objectformat" && strings.TrimSpace(v) == "sha256" {
			return 32
		}
	}
	return 20
}

// protectedFiles are the files in the directory whose change makes git
// run something, look elsewhere for what it runs, or hide a change.
func (d *gitDirGuard) protectedFiles() []string {
	if !d.common {
		return worktreeRunFiles
	}
	out := slices.Clone(commonRunFiles)
	for _, m := range d.modules {
		out = append(out, "modules/"+m+"/config", "modules/"+m+"/config.worktree", "modules/"+m+"/commondir")
	}
	for _, w := range d.worktrees {
		for _, f := range worktreeRunFiles {
			out = append(out, "worktrees/"+w+"/"+f)
		}
	}
	return out
}

// hookDirs are the hooks directories of a common directory: its own and
// each module's.
func (d *gitDirGuard) hookDirs() []string {
	out := []string{"hooks"}
	for _, m := range d.modules {
		out = append(out, "modules/"+m+"/hooks")
	}
	return out
}

// name is how a path in the directory is named to the user.
func (d *gitDirGuard) name(p string) string { return filepath.Join(d.shown, p) }

// dirNames lists a directory's entries (one level: nested submodules'
// own modules/ are inside their directory, which is restored or removed
// whole).
func dirNames(r *os.Root, dir string) []string {
	f, err := r.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	slices.Sort(names)
	return names
}

func readSaved(r *os.Root, p string) *savedFile {
	fi, err := r.Lstat(p)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := r.Readlink(p)
		return &savedFile{data: []byte(target), mode: fi.Mode()}
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		if err == nil {
			return &savedFile{mode: fi.Mode()} // there, but not a plain file: compared by kind
		}
		return nil
	}
	b, err := readKept(r, p, fi)
	if err != nil {
		return nil
	}
	return &savedFile{data: b, mode: fi.Mode()}
}

// readSavedAt is readSaved through a root opened at dir.
func readSavedAt(dir, p string) *savedFile {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil
	}
	defer r.Close()
	return readSaved(r, p)
}

func readHooks(r *os.Root, dir string) *savedHooks {
	fi, err := r.Lstat(dir)
	if err != nil {
		return nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := r.Readlink(dir)
		return &savedHooks{link: target}
	}
	h := &savedHooks{files: map[string]*savedFile{}}
	// The directory opened once, as a root of its own: each file is then
	// one step from it (OpenRoot, like Open, follows no link out of r).
	sub, err := r.OpenRoot(dir)
	if err != nil {
		return h
	}
	defer sub.Close()
	f, err := sub.Open(".")
	if err != nil {
		return h
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		h.files[n] = readSaved(sub, n)
	}
	return h
}

// readPath saves a run path under base: a directory as its files, a file
// (or nothing) as files["."].
func readPath(base, rel string) *savedHooks {
	r, err := os.OpenRoot(base)
	if err != nil {
		return nil
	}
	defer r.Close()
	if fi, err := r.Lstat(rel); err == nil && fi.IsDir() {
		return readHooks(r, rel)
	}
	return &savedHooks{files: map[string]*savedFile{".": readSaved(r, rel)}}
}

// lockFiles lists the *.lock files at the directory's top and in each module.
func lockFiles(r *os.Root, modules []string) []string {
	var out []string
	for _, d := range append([]string{"."}, prefixed("modules/", modules)...) {
		f, err := r.Open(d)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(-1)
		f.Close()
		for _, n := range names {
			if strings.HasSuffix(n, ".lock") {
				out = append(out, path.Join(d, n))
			}
		}
	}
	return out
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

// changedFiles are the workspace's files a process made or changed (slash
// paths from its root); known is false where the walk gave up, or there
// was none (a check finished from the journal).
type changedFiles struct {
	paths []string
	known bool
}

// check compares the workspace's git with what it was, undoes each change
// and says in one line each what it undid.
func (g *gitGuard) check(changed changedFiles) []string {
	if g == nil {
		return nil
	}
	var said []string
	say := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if g.fresh {
		g.checkNewRepo(say)
		return said
	}
	if g.dotGit != nil {
		if now := readSavedAt(g.root, ".git"); !sameSaved(g.dotGit, now) {
			if r, err := os.OpenRoot(g.root); err == nil {
				err = putSaved(r, ".git", g.dotGit)
				r.Close()
				if err == nil {
					say("[harvey: undone: the command changed the .git file (it names the git directory your next git uses); restored]")
				}
			}
		}
	}
	for _, d := range g.dirs {
		d.check(say, changed)
	}
	g.restorePaths(say)
	return said
}

// check undoes what changed in one git directory.
func (d *gitDirGuard) check(say func(string, ...any), changed changedFiles) {
	if id, ok := identOf(d.dir); !ok || id != d.ident {
		if d.ident == (fileIdent{}) || !d.restoreIdentity(say) {
			return
		}
	}
	r, err := os.OpenRoot(d.dir)
	if err != nil {
		return
	}
	defer r.Close()
	d.restoreFiles(r, say)
	if d.common {
		for _, h := range d.hookDirs() {
			if now := readHooks(r, h); !sameHooks(d.hooks[h], now) {
				if err := putHooks(r, h, d.hooks[h]); err != nil {
					say("[harvey: the command changed %s and it could not be restored: %v]", d.name(h), fsinfo.ErrText(err))
				} else {
					say("[harvey: undone: the command changed %s (git runs what is there); restored]", d.name(h))
				}
			}
		}
		d.removeNewModules(r, say)
		d.checkNewWorktrees(r, say)
		d.checkReplaceRefs(r, say)
	}
	d.removeNewLocks(r, say)
	d.restoreIndex(r, say, changed)
}

// restoreIdentity puts the original directory back where the command
// moved it (renamed beside it) and removes what stood in its place. False:
// the original is gone; what is there now was moved aside.
func (d *gitDirGuard) restoreIdentity(say func(string, ...any)) bool {
	parent := filepath.Dir(d.dir)
	entries, _ := os.ReadDir(parent)
	moved := ""
	for _, e := range entries {
		if id, ok := identOf(filepath.Join(parent, e.Name())); ok && id == d.ident && e.Name() != filepath.Base(d.dir) {
			moved = e.Name()
		}
	}
	if _, err := os.Lstat(d.dir); err == nil {
		if moved == "" {
			aside := d.dir + "-made-by-a-command"
			os.RemoveAll(aside)
			if os.Rename(d.dir, aside) == nil {
				for _, p := range []string{"config", "config.worktree", "commondir", "hooks"} {
					os.RemoveAll(filepath.Join(aside, p))
				}
			}
			say("[harvey: undone: the command replaced %s and the original is gone; what it put there is in %s, without its config and hooks]", d.shown, termtext.QuotePath(filepath.Base(aside)))
			return false
		}
		os.RemoveAll(d.dir)
	}
	if moved == "" {
		say("[harvey: the command removed %s]", d.shown)
		return false
	}
	if err := os.Rename(filepath.Join(parent, moved), d.dir); err != nil {
		say("[harvey: the command moved %s to %s and it could not be moved back: %v]", d.shown, termtext.QuotePath(moved), fsinfo.ErrText(err))
		return false
	}
	say("[harvey: undone: the command moved %s to %s and put another in its place (your next git would have run its config and hooks); the original is back]", d.shown, termtext.QuotePath(moved))
	return true
}

func (d *gitDirGuard) restoreFiles(r *os.Root, say func(string, ...any)) {
	for _, p := range d.protectedFiles() {
		before, now := d.files[p], readSaved(r, p)
		if sameSaved(before, now) {
			continue
		}
		if err := putSaved(r, p, before); err != nil {
			say("[harvey: the command changed %s and it could not be restored: %v]", d.name(p), fsinfo.ErrText(err))
			continue
		}
		why := "git reads it when you run git"
		if path.Base(p) == "exclude" {
			why = "git status would not show the files it names"
		}
		say("[harvey: undone: the command changed %s (%s); restored]", d.name(p), why)
	}
}

func sameSaved(a, b *savedFile) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.mode == b.mode && bytes.Equal(a.data, b.data)
}

// putSaved makes p what s was: removed when it was missing, else written
// to a new file renamed over whatever is there now (a link is replaced,
// never followed).
func putSaved(r *os.Root, p string, s *savedFile) error {
	if s == nil {
		return r.RemoveAll(p)
	}
	if s.mode&fs.ModeSymlink != 0 {
		r.RemoveAll(p)
		return r.Symlink(string(s.data), p)
	}
	if !s.mode.IsRegular() {
		return nil // not a plain file before: nothing kept to put back
	}
	tmp := p + ".harvey-restore"
	r.RemoveAll(tmp)
	if err := r.WriteFile(tmp, s.data, s.mode.Perm()); err != nil {
		return err
	}
	r.Chmod(tmp, s.mode.Perm())
	if fi, err := r.Lstat(p); err == nil && fi.IsDir() {
		r.RemoveAll(p)
	}
	return r.Rename(tmp, p)
}

// putHooks makes dir what h was (removed when it was missing).
func putHooks(r *os.Root, dir string, h *savedHooks) error {
	r.RemoveAll(dir)
	switch {
	case h == nil:
		return nil
	case h.link != "":
		return r.Symlink(h.link, dir)
	}
	err := r.Mkdir(dir, 0o755)
	for n, f := range h.files {
		if err == nil {
			err = putSaved(r, dir+"/"+n, f)
		}
	}
	return err
}

func sameHooks(a, b *savedHooks) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.link != b.link || len(a.files) != len(b.files) {
		return false
	}
	for n, f := range a.files {
		if g, ok := b.files[n]; !ok || !sameSaved(f, g) {
			return false
		}
	}
	return true
}

// restorePaths puts back the workspace paths git resolves from a config
// (a core.hooksPath directory, a relative program).
func (g *gitGuard) restorePaths(say func(string, ...any)) {
	for _, p := range slices.Sorted(maps.Keys(g.paths)) {
		base, rel, ok := g.rootOf(p)
		if !ok {
			continue
		}
		before := g.paths[p]
		if sameHooks(before, readPath(base, rel)) {
			continue
		}
		r, err := os.OpenRoot(base)
		if err != nil {
			continue
		}
		if f, isFile := before.files["."]; isFile && before.link == "" && len(before.files) == 1 {
			err = putSaved(r, rel, f)
		} else {
			err = putHooks(r, rel, before)
		}
		r.Close()
		shown := termtext.QuotePath(p)
		if base == g.root {
			shown = termtext.QuotePath(rel)
		}
		if err != nil {
			say("[harvey: the command changed %s, which your git config names, and it could not be restored: %v]", shown, fsinfo.ErrText(err))
			continue
		}
		say("[harvey: undone: the command changed %s (your git config names it: your next git would run it); restored]", shown)
	}
}

func (d *gitDirGuard) removeNewModules(r *os.Root, say func(string, ...any)) {
	for _, m := range dirNames(r, "modules") {
		if !slices.Contains(d.modules, m) {
			r.RemoveAll("modules/" + m)
			say("[harvey: undone: the command made %s (a repository your next git would enter); removed]", d.name("modules/"+m))
		}
	}
}

// checkNewWorktrees looks at the worktrees/ entries a command made (git
// worktree add): one whose commondir leads elsewhere is removed, and a
// config.worktree in one is (the common config is the one the user sees).
func (d *gitDirGuard) checkNewWorktrees(r *os.Root, say func(string, ...any)) {
	for _, w := range dirNames(r, "worktrees") {
		if slices.Contains(d.worktrees, w) {
			continue
		}
		p := "worktrees/" + w
		c, err := r.ReadFile(p + "/commondir")
		if err != nil || filepath.Clean(fsinfo.AbsIn(filepath.Join(d.dir, p), strings.TrimSpace(string(c)))) != filepath.Clean(d.dir) {
			r.RemoveAll(p)
			say("[harvey: undone: the command made %s, a worktree whose git would read another repository's config; removed]", d.name(p))
			continue
		}
		if _, err := r.Lstat(p + "/config.worktree"); err == nil {
			r.RemoveAll(p + "/config.worktree")
			say("[harvey: undone: the command made %s; removed]", d.name(p+"/config.worktree"))
		}
	}
}

func (d *gitDirGuard) removeNewLocks(r *os.Root, say func(string, ...any)) {
	for _, l := range lockFiles(r, d.modules) {
		if !slices.Contains(d.locks, l) {
			r.Remove(l)
			say("[harvey: removed %s, which the command left behind (git would refuse to run while it is there)]", d.name(l))
		}
	}
}

// restoreIndex puts the index back when the command added a gitlink (git
// status enters a gitlink's repository and runs what its config names),
// clears the skip-worktree and assume-unchanged bits it set (git status
// and git diff would not show what it changed in those files), and in the
// workspace's own index clears the stat data of what it changed
// (clearStale), so no entry it wrote can vouch for content the file does
// not hold.
func (d *gitDirGuard) restoreIndex(r *os.Root, say func(string, ...any), changed changedFiles) {
	if key, ok := d.indexKey(); ok && d.index != nil && key == d.indexAt {
		return // not written since (its change time cannot be set back)
	}
	b, err := r.ReadFile("index")
	if err != nil {
		return
	}
	if unread := unreadEntries(b, d.hashLen); len(unread) > 0 && (d.index == nil || len(unreadEntries(d.index, d.hashLen)) == 0) {
		d.putIndexBack(r, say, "the command split git's index or made it sparse (its "+strings.Join(unread, ", ")+" extension keeps entries in a place Harvey does not read, where a gitlink or a hidden file could stand)")
		return
	}
	var added []string
	for _, l := range gitlinks(b, d.hashLen) {
		if !slices.Contains(d.links, l) {
			added = append(added, l)
		}
	}
	if len(added) > 0 {
		d.putIndexBack(r, say, fmt.Sprintf("the command added a gitlink (%s) to git's index — your next git status would enter that repository and run its config", strings.Join(added, ", ")))
		return
	}
	d.rewriteIndex(r, say, b, changed)
}

// rewriteIndex clears in index b the skip-worktree and assume-unchanged
// bits the command set and the stat data of what it changed (clearStale),
// writes it back and says what it undid.
func (d *gitDirGuard) rewriteIndex(r *os.Root, say func(string, ...any), b []byte, changed changedFiles) {
	var hidden []string
	for _, e := range indexEntries(b, d.hashLen) {
		if e.hides(b) && !slices.Contains(d.hidden, e.name) {
			e.unhide(b)
			hidden = append(hidden, e.name)
		}
	}
	stale := d.own && d.clearStale(b, changed)
	if len(hidden) == 0 && !stale {
		return
	}
	if stale {
		b = withoutExtension(b, "FSMN", d.hashLen)
	}
	rehash(b, d.hashLen)
	if err := putSaved(r, "index", &savedFile{data: b, mode: 0o644}); err != nil {
		if len(hidden) > 0 {
			say("[harvey: the command hid %s from git status and git diff (skip-worktree or assume-unchanged) and it could not be undone: %v]", strings.Join(hidden, ", "), fsinfo.ErrText(err))
		} else {
			say("[harvey: the command wrote git's index, and its entries for the files it changed could not be marked for git to read again: %v; review them with git diff HEAD after touching them]", fsinfo.ErrText(err))
		}
		return
	}
	if len(hidden) > 0 {
		say("[harvey: undone: the command marked %s skip-worktree or assume-unchanged, so git status and git diff would not show its changes; cleared — review them]", strings.Join(hidden, ", "))
	}
}

// putIndexBack puts the index as it was before the command (none, if
// there was none), saying why; an index too large to have been copied is
// left, with what to do.
func (d *gitDirGuard) putIndexBack(r *os.Root, say func(string, ...any), why string) {
	if d.index == nil && d.indexLarge {
		say("[harvey: %s; the index is too large to keep a copy of: run git read-tree HEAD (your staged changes are lost) before your next git status]", why)
		return
	}
	if d.index == nil {
		r.Remove("index")
	} else if err := putSaved(r, "index", &savedFile{data: d.index, mode: 0o644}); err != nil {
		say("[harvey: %s, and the index could not be restored: %v]", why, fsinfo.ErrText(err))
		return
	}
	say("[harvey: undone: %s; the index is as it was before the command]", why)
}

// clearStale clears, in the index b the command wrote, the stat data of
// the entries of the files it made or changed (or, where those are not
// known, of every entry whose stat data it changed; every entry where
// there is no copy from before). An entry whose object id and stat data
// were written to match the file while its content differs would
// otherwise hide the change from git status, git diff and git commit -a;
// git hashes each cleared file once and records its stat data again. The
// fsmonitor's record is dropped with it (withoutExtension). It reports
// whether it cleared any.
func (d *gitDirGuard) clearStale(b []byte, changed changedFiles) bool {
	var set map[string]bool
	var was map[string]indexEntry
	if changed.known {
		set = map[string]bool{}
		for _, p := range changed.paths {
			set[p] = true
		}
	}
	if d.index != nil {
		was = map[string]indexEntry{}
		for _, e := range indexEntries(d.index, d.hashLen) {
			was[e.name] = e
		}
	}
	cleared := false
	for _, e := range indexEntries(b, d.hashLen) {
		// An entry whose stat data the process wrote, or of a file it made
		// or changed, is cleared: either alone would do for a process
		// that wrote the file as the kernel reports it; both together
		// leave no way between them. No list and no copy: every entry.
		hit := set == nil && was == nil
		if set != nil {
			hit = set[e.name]
		}
		if was != nil && !hit {
			old, ok := was[e.name]
			hit = !ok || !sameStat(d.index, old, b, e)
		}
		if hit && e.stale(b) {
			cleared = true
		}
	}
	return cleared
}
