package harvey

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The check after every command: what the user's next git runs outside the
// sandbox — .git itself, its config, hooks, the index's gitlinks, modules/,
// info/attributes and lock files — is compared with what it was before the
// command, and any change is undone and reported. In the sandbox with
// namespaces most of it cannot change at all (.git is pinned, its config
// and hooks are read-only mounts); the check is what holds where they do
// not (the fallback without namespaces) and for what no mount can protect:
// a gitlink written into the index (git status enters the nested
// repository and runs its config), a new modules/ entry, a hooks link
// replaced, a lock file left behind. Files are read and restored through
// os.Root at the .git directory, so a link planted inside it leads nowhere.

// gitGuardMaxIndex bounds the copy of the index kept while a command runs.
const gitGuardMaxIndex = 64 << 20

// gitGuard is the state of a workspace's .git before a command.
type gitGuard struct {
	root    string
	fresh   bool // no .git before the command: one it makes is checked whole
	ident   fileIdent
	files   map[string]*savedFile // protected files by path in .git (nil: missing)
	hooks   map[string]*savedHooks
	modules []string // names under modules/
	locks   []string // *.lock files already there
	index   []byte   // the index as it was (nil: none, or too large to keep)
	links   []string // the index's gitlinks (mode 160000)
	indexAt fileKey  // the index's stamp when read: unchanged after the command, it is not read again
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

// indexKey is the stamp of .git/index (keyOf; ok false when it has none).
func (g *gitGuard) indexKey() (fileKey, bool) {
	var st unix.Stat_t
	if unix.Lstat(filepath.Join(g.root, ".git", "index"), &st) != nil {
		return fileKey{}, false
	}
	return keyOf(&st), true
}

// guardGit records the workspace's .git (nil when there is no .git
// directory: a worktree's .git file is a read-only mount in the sandbox).
func guardGit(root string) *gitGuard {
	id, ok := identOf(filepath.Join(root, ".git"))
	if !ok {
		if _, err := os.Lstat(filepath.Join(root, ".git")); errors.Is(err, fs.ErrNotExist) {
			return &gitGuard{root: root, fresh: true}
		}
		return nil
	}
	r, err := os.OpenRoot(filepath.Join(root, ".git"))
	if err != nil {
		return nil
	}
	defer r.Close()
	g := &gitGuard{root: root, ident: id, files: map[string]*savedFile{}, hooks: map[string]*savedHooks{}}
	g.modules = moduleNames(r)
	for _, p := range g.protectedFiles() {
		g.files[p] = readSaved(r, p)
	}
	for _, h := range g.hookDirs() {
		g.hooks[h] = readHooks(r, h)
	}
	g.locks = lockFiles(r, g.modules)
	if fi, err := r.Lstat("index"); err == nil && fi.Mode().IsRegular() && fi.Size() <= gitGuardMaxIndex {
		key, _ := g.indexKey() // before the read: a write meanwhile makes it differ after the command
		if b, err := r.ReadFile("index"); err == nil {
			g.index = b
			g.links = gitlinks(b, g.hashLen())
			g.indexAt = key
		}
	}
	return g
}

// hashLen is the length of the repository's object names: 32 bytes where
// its config says objectformat = sha256, else SHA-1's 20.
func (g *gitGuard) hashLen() int {
	if c := g.files["config"]; c != nil {
		for _, line := range strings.Split(strings.ToLower(string(c.data)), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "objectformat" && strings.TrimSpace(v) == "sha256" {
				return 32
			}
		}
	}
	return 20
}

// protectedFiles are the files in .git whose change makes git run
// something, or look elsewhere for what it runs.
func (g *gitGuard) protectedFiles() []string {
	out := []string{"config", "config.worktree", "commondir", "info/attributes"}
	for _, m := range g.modules {
		out = append(out, "modules/"+m+"/config", "modules/"+m+"/config.worktree", "modules/"+m+"/commondir")
	}
	return out
}

func (g *gitGuard) hookDirs() []string {
	out := []string{"hooks"}
	for _, m := range g.modules {
		out = append(out, "modules/"+m+"/hooks")
	}
	return out
}

// moduleNames lists modules/ (one level: nested submodules' own modules/
// are inside their directory, which is restored or removed whole).
func moduleNames(r *os.Root) []string {
	f, err := r.Open("modules")
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
	b, err := r.ReadFile(p)
	if err != nil {
		return nil
	}
	return &savedFile{data: b, mode: fi.Mode()}
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
	f, err := r.Open(dir)
	if err != nil {
		return h
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		h.files[n] = readSaved(r, dir+"/"+n)
	}
	return h
}

// lockFiles lists the *.lock files at .git's top and in each module.
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

// check compares .git with what it was, undoes each change and says in
// one line each what it undid.
func (g *gitGuard) check() []string {
	if g == nil {
		return nil
	}
	var said []string
	say := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if g.fresh {
		g.checkNewRepo(say)
		return said
	}
	gitDir := filepath.Join(g.root, ".git")
	if id, ok := identOf(gitDir); !ok || id != g.ident {
		if !g.restoreIdentity(say) {
			return said
		}
	}
	r, err := os.OpenRoot(gitDir)
	if err != nil {
		return said
	}
	defer r.Close()
	g.restoreFiles(r, say)
	g.restoreHooks(r, say)
	g.removeNewModules(r, say)
	g.removeNewLocks(r, say)
	g.restoreIndex(r, say)
	return said
}

// restoreIdentity puts the original .git back where the command moved it
// (renamed in the workspace's top directory) and removes what stood in its
// place. False: the original is gone; what is there now was moved aside.
func (g *gitGuard) restoreIdentity(say func(string, ...any)) bool {
	gitDir := filepath.Join(g.root, ".git")
	entries, _ := os.ReadDir(g.root)
	moved := ""
	for _, e := range entries {
		if id, ok := identOf(filepath.Join(g.root, e.Name())); ok && id == g.ident && e.Name() != ".git" {
			moved = e.Name()
		}
	}
	if _, err := os.Lstat(gitDir); err == nil {
		if moved == "" {
			aside := filepath.Join(g.root, ".git-made-by-a-command")
			os.RemoveAll(aside)
			if os.Rename(gitDir, aside) == nil {
				os.Remove(filepath.Join(aside, "config"))
				os.RemoveAll(filepath.Join(aside, "hooks"))
			}
			say("[harvey: undone: the command replaced .git and the original is gone; what it put there is in %s, without its config and hooks]", filepath.Base(aside))
			return false
		}
		os.RemoveAll(gitDir)
	}
	if moved == "" {
		say("[harvey: the command removed .git]")
		return false
	}
	if err := os.Rename(filepath.Join(g.root, moved), gitDir); err != nil {
		say("[harvey: the command moved .git to %s and it could not be moved back: %v]", quotePath(moved), errText(err))
		return false
	}
	say("[harvey: undone: the command moved .git to %s and put another in its place (your next git would have run its config and hooks); the original is back]", quotePath(moved))
	return true
}

func (g *gitGuard) restoreFiles(r *os.Root, say func(string, ...any)) {
	for _, p := range g.protectedFiles() {
		before, now := g.files[p], readSaved(r, p)
		if sameSaved(before, now) {
			continue
		}
		if err := putSaved(r, p, before); err != nil {
			say("[harvey: the command changed .git/%s and it could not be restored: %v]", p, errText(err))
			continue
		}
		say("[harvey: undone: the command changed .git/%s (git reads it when you run git); restored]", p)
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

func (g *gitGuard) restoreHooks(r *os.Root, say func(string, ...any)) {
	for _, dir := range g.hookDirs() {
		before, now := g.hooks[dir], readHooks(r, dir)
		if sameHooks(before, now) {
			continue
		}
		r.RemoveAll(dir)
		var err error
		switch {
		case before == nil:
		case before.link != "":
			err = r.Symlink(before.link, dir)
		default:
			err = r.Mkdir(dir, 0o755)
			for n, f := range before.files {
				if err == nil {
					err = putSaved(r, dir+"/"+n, f)
				}
			}
		}
		if err != nil {
			say("[harvey: the command changed .git/%s and it could not be restored: %v]", dir, errText(err))
			continue
		}
		say("[harvey: undone: the command changed .git/%s (git runs what is there); restored]", dir)
	}
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

func (g *gitGuard) removeNewModules(r *os.Root, say func(string, ...any)) {
	for _, m := range moduleNames(r) {
		if !slices.Contains(g.modules, m) {
			r.RemoveAll("modules/" + m)
			say("[harvey: undone: the command made .git/modules/%s (a repository your next git would enter); removed]", m)
		}
	}
}

func (g *gitGuard) removeNewLocks(r *os.Root, say func(string, ...any)) {
	for _, l := range lockFiles(r, g.modules) {
		if !slices.Contains(g.locks, l) {
			r.Remove(l)
			say("[harvey: removed .git/%s, which the command left behind (git would refuse to run while it is there)]", l)
		}
	}
}

// restoreIndex puts the index back when the command added a gitlink: git
// status enters a gitlink's repository and runs what its config names.
func (g *gitGuard) restoreIndex(r *os.Root, say func(string, ...any)) {
	if key, ok := g.indexKey(); ok && g.index != nil && key == g.indexAt {
		return // not written since (its change time cannot be set back): the gitlinks are the ones it had
	}
	b, err := r.ReadFile("index")
	if err != nil {
		return
	}
	var added []string
	for _, l := range gitlinks(b, g.hashLen()) {
		if !slices.Contains(g.links, l) {
			added = append(added, l)
		}
	}
	if len(added) == 0 {
		return
	}
	if g.index == nil {
		r.Remove("index")
	} else if err := putSaved(r, "index", &savedFile{data: g.index, mode: 0o644}); err != nil {
		say("[harvey: the command added a gitlink (%s) to the index and it could not be restored: %v]", strings.Join(added, ", "), errText(err))
		return
	}
	say("[harvey: undone: the command added a gitlink (%s) to git's index — your next git status would enter that repository and run its config; the index is as it was before the command]", strings.Join(added, ", "))
}

// gitlinks lists the paths of the mode-160000 entries of a git index
// (versions 2 to 4; hashLen is 20 for SHA-1 object names, 32 for
// SHA-256). An unreadable index gives none.
func gitlinks(b []byte, hashLen int) []string {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil
	}
	version := binary.BigEndian.Uint32(b[4:8])
	n := int(binary.BigEndian.Uint32(b[8:12]))
	if version < 2 || version > 4 {
		return nil
	}
	links, _ := readGitlinks(b, version, n, hashLen)
	return links
}

var errIndex = errors.New("unreadable index")

func readGitlinks(b []byte, version uint32, n, hashLen int) ([]string, error) {
	var out []string
	off, prev := 12, ""
	for i := 0; i < n; i++ {
		start := off
		if off+40+hashLen+2 > len(b) {
			return nil, errIndex
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		off += 40 + hashLen
		flags := binary.BigEndian.Uint16(b[off : off+2])
		off += 2
		if flags&0x4000 != 0 {
			if version < 3 || off+2 > len(b) {
				return nil, errIndex
			}
			off += 2
		}
		var name string
		if version == 4 {
			strip, k := binary.Uvarint(b[off:])
			if k <= 0 || int(strip) > len(prev) {
				return nil, errIndex
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errIndex
			}
			name = prev[:len(prev)-int(strip)] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errIndex
			}
			name = string(b[off : off+end])
			off = start + (off-start+end+8)/8*8
		}
		if mode&0o170000 == 0o160000 {
			out = append(out, name)
		}
		prev = name
	}
	if off > len(b) {
		return nil, errIndex
	}
	return out, nil
}

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
	cmd.Env = append(filterCommandEnvironment(os.Environ()), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
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
