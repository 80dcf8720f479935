package harvey

// The path policy: every file Harvey reads, writes, lists or searches in the
// workspace is resolved here (resolveWorkspacePath), with the name rules,
// a verified descent through os.Root, and the permissions: block applied to
// the resolved object.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// pathOp is what a caller intends to do with a resolved path.
type pathOp int

// writes reports whether op changes the file system (resolved as a write).
func (op pathOp) writes() bool { return op != opRead }

// perm is the permissions: name op needs on the resolved object.
func (op pathOp) perm() string {
	switch op {
	case opWrite:
		return PermWrite
	case opDelete, opRemoveDir:
		return PermDelete
	}
	return PermRead
}

// PathError is a refusal or failure about a path, worded for the user and the
// model alike. /read and read_file return the same PathError for the same input.
type PathError struct {
	Path   string
	Reason string // shown after the path
	// Err is the kind: ErrRefused for a rule's refusal, the cause
	// (fs.ErrNotExist, an I/O error) for a failure, nil for a misuse such
	// as a directory where a file is wanted. errors.Is reads it.
	Err error
}

func (e *PathError) Error() string {
	return fmt.Sprintf("%s: %s", termtext.QuotePath(e.Path), e.Reason)
}

func (e *PathError) Unwrap() error { return e.Err }

// ErrRefused marks an effect a rule refused (as opposed to one that failed):
// the audit log records it as denied. It is internal/refusal's, the one
// kind every rule refuses with.
var ErrRefused = refusal.ErrRefused

// refusedf builds a refusal outside the path rules (git, Harvey's state);
// its text should say "refused" and why.
func refusedf(format string, args ...any) error { return refusal.Errorf(format, args...) }

// Sentinel reasons, so tests and callers can tell refusals apart.
var (
	errOutside = "refused: outside the workspace"
	errAgents  = "refused: agents/ is Harvey's private state"
	errGitDir  = "refused: .git/ is never written"
	errSecret  = "refused: looks like a secret file (sensitive-file denylist)"
)

func refuse(p, reason string) error { return &PathError{Path: p, Reason: reason, Err: ErrRefused} }

// pathFailed is a path that could not be used for a reason that is not a
// rule: cause is the error behind it (nil for a misuse).
func pathFailed(p, reason string, cause error) error {
	return &PathError{Path: p, Reason: reason, Err: cause}
}

// osFailure is what the file system said about p: a refusal when os.Root
// stopped an escape, a failure otherwise.
func osFailure(p string, err error) error {
	if t := errText(err); t != errOutside {
		return pathFailed(p, t, err)
	}
	return refuse(p, errOutside)
}

// resolvedPath is a path inside the workspace that passed every check. dir is
// an os.Root for the parent directory (the caller must call close); name is
// the final component; info is its Lstat result (nil when it does not exist).
// A write into directories that do not exist yet holds the deepest one that
// does, with the ones to make in missing.
type resolvedPath struct {
	Rel     string // clean, slash-separated, relative to the workspace ("." for the root)
	asked   string // the path as asked, cleaned (a link's name when Rel is its target)
	dir     *os.Root
	dirRel  string // where dir is, relative to the workspace
	name    string
	info    fs.FileInfo
	own     bool     // whether dir must be closed
	missing []string // directories a write must make below dir, outermost first
}

func (r *resolvedPath) close() {
	if r != nil && r.own && r.dir != nil {
		r.dir.Close()
	}
}

// lexicalClean validates a path string from the model or the user and returns
// it cleaned and slash-separated, or a refusal. No file system access.
func lexicalClean(p string) (string, error) {
	if err := lexicalRefusal(p); err != nil {
		return "", err
	}
	clean := path.Clean(p)
	if !filepath.IsLocal(clean) && clean != "." {
		return "", refuse(p, errOutside)
	}
	comps := splitPath(clean)
	if len(comps) > maxComponents {
		return "", refuse(p[:min(len(p), 40)]+"...", "refused: path is too deep")
	}
	for _, c := range comps {
		if len(c) > maxComponentBytes {
			return "", refuse(p[:min(len(p), 40)]+"...", "refused: a path component is too long")
		}
	}
	return clean, nil
}

// lexicalRefusal is what makes the path string itself unusable, before it
// is cleaned: empty, NUL, too long, not UTF-8, ~, absolute (Unix or
// Windows), or backslashes.
func lexicalRefusal(p string) error {
	switch {
	case p == "":
		return pathFailed(p, "path is empty", nil)
	case strings.ContainsRune(p, 0):
		return refuse(p, "refused: path contains a NUL byte")
	case len(p) > maxPathBytes:
		return refuse(p[:40]+"...", "refused: path is too long")
	case !utf8.ValidString(p):
		return refuse(p, "refused: path is not valid UTF-8")
	case strings.HasPrefix(p, "~"):
		return refuse(p, "refused: ~ is not expanded; use a path relative to the workspace")
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || hasDriveLetter(p):
		return refuse(p, "refused: absolute paths are not allowed; use a path relative to the workspace")
	case strings.ContainsRune(p, '\\'):
		return refuse(p, "refused: use / as the path separator")
	}
	return nil
}

// hasDriveLetter: a Windows path such as C:... .
func hasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))
}

// splitPath splits a clean relative path into components ("." → none).
func splitPath(clean string) []string {
	if clean == "." || clean == "" {
		return nil
	}
	return strings.Split(clean, "/")
}

// lexicalPolicy applies the name-based rules to a clean path: agents/ (any
// spelling), .git/ for writes, and the sensitive-file denylist.
func lexicalPolicy(orig, clean string, op pathOp) error {
	comps := splitPath(clean)
	if len(comps) > 0 && secrets.NormName(comps[0]) == AgentsDir {
		return refuse(orig, errAgents)
	}
	if op.writes() {
		for _, c := range comps {
			if secrets.NormName(c) == ".git" {
				return refuse(orig, errGitDir)
			}
		}
		if len(comps) == 0 {
			return pathFailed(orig, "is a directory", nil)
		}
	}
	if secrets.FileDenied(clean) {
		return refuse(orig, errSecret)
	}
	return nil
}

// resolveWorkspacePath resolves p inside the workspace for op and returns the
// checked location, or an error that says why it was refused. It enforces, in
// order: the lexical rules (NUL, absolute, .., length, depth), the agents/ and
// denylist rules on the name, and then a verified descent through the
// workspace root: every directory is opened through the os.Root of its parent
// and compared by identity with what Lstat saw, symlinks are resolved by hand
// and must stay inside the workspace (the rules are re-applied to the target),
// agents/ is refused by identity, and the final entry must be a regular file
// or directory with no other hard links. New files (for op == opWrite) may not
// exist yet; their missing parent directories are not created here.
//
// Last, the permissions: block is applied to the resolved object (a link's
// target, not its name), so every reader, writer, lister and searcher of
// the workspace gets the same answer: this is the one path gate.
func resolveWorkspacePath(ws *Workspace, p string, op pathOp) (*resolvedPath, error) {
	clean, err := lexicalClean(p)
	if err != nil {
		return nil, err
	}
	rp, err := ws.descend(p, clean, op, 0)
	if err != nil {
		return nil, err
	}
	rp.asked = clean
	if err := ws.allow(p, rp.Rel, op.perm()); err != nil {
		rp.close()
		return nil, err
	}
	return rp, nil
}

func (ws *Workspace) descend(orig, clean string, op pathOp, hops int) (*resolvedPath, error) {
	if err := lexicalPolicy(orig, clean, op); err != nil {
		return nil, err
	}
	comps := splitPath(clean)
	if len(comps) == 0 {
		fi, err := ws.root.Stat(".")
		if err != nil {
			return nil, pathFailed(orig, err.Error(), err)
		}
		return &resolvedPath{Rel: ".", dir: ws.root, dirRel: ".", name: ".", info: fi}, nil
	}
	cur, own := ws.root, false
	closeCur := func() {
		if own {
			cur.Close()
		}
	}
	for i, c := range comps[:len(comps)-1] {
		fi, err := cur.Lstat(c)
		if errors.Is(err, fs.ErrNotExist) && op.writes() {
			// A write into new directories: the rest of the path is
			// new, so nothing in it can be a link; the directories are
			// made when the write happens (fileops.go: makeParents).
			return &resolvedPath{Rel: clean, dir: cur, own: own, dirRel: path.Join(append([]string{"."}, comps[:i]...)...), name: comps[len(comps)-1], missing: comps[i : len(comps)-1]}, nil
		}
		if err != nil {
			closeCur()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, pathFailed(orig, "no such file or directory", fs.ErrNotExist)
			}
			return nil, osFailure(orig, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := cur.Readlink(c)
			closeCur()
			if err != nil {
				return nil, osFailure(orig, err)
			}
			return ws.followLink(orig, comps[:i], target, comps[i+1:], op, hops)
		}
		if !fi.IsDir() {
			closeCur()
			return nil, pathFailed(orig, "not a directory: "+path.Join(comps[:i+1]...), nil)
		}
		next, err := ws.enterVerified(cur, c, fi, orig)
		closeCur()
		if err != nil {
			return nil, err
		}
		cur, own = next, true
	}
	parent := path.Join(append([]string{"."}, comps[:len(comps)-1]...)...)
	return ws.resolveLast(orig, clean, comps, &resolvedPath{Rel: clean, dir: cur, own: own, dirRel: parent}, op, hops)
}

// enterVerified opens the directory c of cur that Lstat described as fi,
// and checks it is the same directory (not swapped since) and not agents/.
func (ws *Workspace) enterVerified(cur *os.Root, c string, fi fs.FileInfo, orig string) (*os.Root, error) {
	next, err := cur.OpenRoot(c)
	if err != nil {
		return nil, osFailure(orig, err)
	}
	st, err := next.Stat(".")
	if err != nil || !os.SameFile(fi, st) {
		next.Close()
		return nil, refuse(orig, "refused: the path changed while it was being checked")
	}
	if ws.isAgentsDir(st) {
		next.Close()
		return nil, refuse(orig, errAgents)
	}
	return next, nil
}

// resolveLast resolves the last component in its directory (rp.dir, which
// rp owns when rp.own): a file to create, a link to follow, or an object
// the final rules allow. rp is closed on every refusal.
func (ws *Workspace) resolveLast(orig, clean string, comps []string, rp *resolvedPath, op pathOp, hops int) (*resolvedPath, error) {
	name := comps[len(comps)-1]
	rp.name = name
	fi, err := rp.dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist) && op.writes():
		return rp, nil
	case errors.Is(err, fs.ErrNotExist):
		rp.close()
		return nil, pathFailed(orig, "no such file or directory", fs.ErrNotExist)
	case err != nil:
		rp.close()
		return nil, osFailure(orig, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := rp.dir.Readlink(name)
		rp.close()
		if err != nil {
			return nil, osFailure(orig, err)
		}
		return ws.followLink(orig, comps[:len(comps)-1], target, nil, op, hops)
	}
	if err := ws.checkFinal(orig, fi, op); err != nil {
		rp.close()
		return nil, err
	}
	rp.info = fi
	return rp, nil
}

// checkFinal applies the rules for the last component.
func (ws *Workspace) checkFinal(orig string, fi fs.FileInfo, op pathOp) error {
	m := fi.Mode()
	switch {
	case m.IsDir():
		if ws.isAgentsDir(fi) {
			return refuse(orig, errAgents)
		}
		if op.writes() && op != opRemoveDir {
			return pathFailed(orig, "is a directory", nil)
		}
	case m.IsRegular():
		if fsinfo.Links(fi) > 1 {
			return refuse(orig, "refused: the file has other hard links, which may lead outside the workspace")
		}
	default:
		return refuse(orig, "refused: not a regular file ("+fsinfo.Kind(m)+")")
	}
	return nil
}

// followLink resolves a symlink met at prefix/<link> with the given target and
// continues with rest. The target must stay inside the workspace; the whole
// policy is re-applied to the resulting path.
func (ws *Workspace) followLink(orig string, prefix []string, target string, rest []string, op pathOp, hops int) (*resolvedPath, error) {
	if hops+1 > maxSymlinkHops {
		return nil, refuse(orig, "refused: too many levels of symbolic links")
	}
	if target == "" || filepath.IsAbs(target) || strings.HasPrefix(target, "/") {
		return nil, refuse(orig, "refused: symlink leads outside the workspace")
	}
	parts := append(append([]string{}, prefix...), target)
	parts = append(parts, rest...)
	next := path.Join(parts...)
	if !filepath.IsLocal(next) && next != "." {
		return nil, refuse(orig, "refused: symlink leads outside the workspace")
	}
	if len(splitPath(next)) > maxComponents {
		return nil, refuse(orig, "refused: path is too deep")
	}
	return ws.descend(orig, next, op, hops+1)
}

// errText turns an fs error into a short reason without repeating the path.
func errText(err error) string {
	s := fsinfo.ErrText(err)
	if strings.Contains(s, "escapes from parent") {
		return errOutside
	}
	return s
}

// Path limits (security.md §2.10).
const (
	maxPathBytes      = 4096
	maxComponentBytes = 255
	maxComponents     = 64
	maxSymlinkHops    = 8
)

const (
	opRead      pathOp = iota // read a file (or list/search a directory)
	opWrite                   // create or replace a file
	opDelete                  // remove a file (resolved as a write; needs delete permission)
	opRemoveDir               // remove an empty directory (/undo of a write that made it; as opDelete)
)

// Permission names used in the permissions: block of harvey.yaml.
const (
	PermRead   = "read"
	PermWrite  = "write"
	PermExec   = "exec"
	PermDelete = "delete"
)

var validPerms = []string{PermRead, PermWrite, PermExec, PermDelete}

// permits is the one definition of the permissions: rule. The most specific
// matching prefix wins, matched by whole path components ("src" covers
// "src/a.go", not "srcx"); "." covers everything. An empty map grants
// everything; a map without a matching prefix denies.
func permits(perms map[string][]string, rel, perm string) bool {
	if len(perms) == 0 {
		return true
	}
	rel = path.Clean(rel)
	best, bestLen := "", -1
	for prefix := range perms {
		p := path.Clean(strings.TrimSuffix(prefix, "/"))
		match := p == "." || rel == p || strings.HasPrefix(rel, p+"/")
		l := len(p)
		if p == "." {
			l = 0
		}
		if match && l > bestLen {
			best, bestLen = prefix, l
		}
	}
	if bestLen < 0 {
		return false
	}
	return slices.Contains(perms[best], perm)
}

// allow applies the permissions: block to a resolved workspace path; orig
// is the path as asked (a link's name), named in the refusal.
func (ws *Workspace) allow(orig, rel, perm string) error {
	if ws == nil || ws.config == nil || permits(ws.config.Permissions, rel, perm) {
		return nil
	}
	if orig != rel && orig != "" {
		return refuse(orig, fmt.Sprintf("refused: no %s permission for %s (see /permissions)", perm, termtext.QuotePath(rel)))
	}
	return refuse(rel, fmt.Sprintf("refused: no %s permission (see /permissions)", perm))
}

// readable reports whether rel (already resolved) may be read: the rule
// that searches, listings and git output apply to each file they show.
func (ws *Workspace) readable(rel string) bool { return ws.allow(rel, rel, PermRead) == nil }

// isAgentsDir reports whether fi is the workspace's agents/ directory, by file
// identity: a symlink to it, a differently-cased name on a case-insensitive
// file system or a path through ".." all resolve to the same identity.
func (w *Workspace) isAgentsDir(fi fs.FileInfo) bool {
	return w.agents != nil && fi != nil && os.SameFile(w.agents, fi)
}
