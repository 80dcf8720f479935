package wspath

// The path policy: every file Harvey reads, writes, lists or searches in the
// workspace is resolved here (Tree.Resolve), with the name rules,
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

// Op is what a caller intends to do with a resolved path.
type Op int

// writes reports whether op changes the file system (resolved as a write).
func (op Op) writes() bool { return op != OpRead }

// perm is the permissions: name op needs on the resolved object.
func (op Op) perm() string {
	switch op {
	case OpWrite:
		return PermWrite
	case OpDelete, OpRemoveDir:
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

// Sentinel reasons, so tests and callers can tell refusals apart.
var (
	ErrOutside = "refused: outside the workspace"
	ErrAgents  = "refused: agents/ is Harvey's private state"
	ErrGitDir  = "refused: .git/ is never written"
	ErrSecret  = "refused: looks like a secret file (sensitive-file denylist)"
)

func Refuse(p, reason string) error {
	return &PathError{Path: p, Reason: reason, Err: refusal.ErrRefused}
}

// Failed is a path that could not be used for a reason that is not a
// rule: cause is the error behind it (nil for a misuse).
func Failed(p, reason string, cause error) error {
	return &PathError{Path: p, Reason: reason, Err: cause}
}

// OSFailure is what the file system said about p: a refusal when os.Root
// stopped an escape, a failure otherwise.
func OSFailure(p string, err error) error {
	if t := ErrText(err); t != ErrOutside {
		return Failed(p, t, err)
	}
	return Refuse(p, ErrOutside)
}

// Resolved is a path inside the workspace that passed every check: Parent
// is an os.Root for the directory that holds it (the caller calls Close),
// Name the final component, Info its Lstat (nil when it does not exist).
// A write into directories that do not exist yet holds the deepest one that
// does, with the ones to make in Missing.
type Resolved struct {
	Rel       string      // clean, slash-separated, relative to the workspace ("." for the root)
	Asked     string      // the path as asked, cleaned (a link's name when Rel is its target)
	Parent    *os.Root    // the directory that holds it
	ParentRel string      // where Parent is, relative to the workspace
	Name      string      // its name in Parent
	Info      fs.FileInfo // its Lstat (nil when it does not exist yet)
	Missing   []string    // directories a write must make below Parent, outermost first
	own       bool        // whether Parent must be closed
}

func (r *Resolved) Close() {
	if r != nil && r.own && r.Parent != nil {
		r.Parent.Close()
	}
}

// LexicalClean validates a path string from the model or the user and returns
// it cleaned and slash-separated, or a refusal. No file system access.
func LexicalClean(p string) (string, error) {
	if err := lexicalRefusal(p); err != nil {
		return "", err
	}
	clean := path.Clean(p)
	if !filepath.IsLocal(clean) && clean != "." {
		return "", Refuse(p, ErrOutside)
	}
	comps := splitPath(clean)
	if len(comps) > maxComponents {
		return "", Refuse(p[:min(len(p), 40)]+"...", "refused: path is too deep")
	}
	for _, c := range comps {
		if len(c) > maxComponentBytes {
			return "", Refuse(p[:min(len(p), 40)]+"...", "refused: a path component is too long")
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
		return Failed(p, "path is empty", nil)
	case strings.ContainsRune(p, 0):
		return Refuse(p, "refused: path contains a NUL byte")
	case len(p) > maxPathBytes:
		return Refuse(p[:40]+"...", "refused: path is too long")
	case !utf8.ValidString(p):
		return Refuse(p, "refused: path is not valid UTF-8")
	case strings.HasPrefix(p, "~"):
		return Refuse(p, "refused: ~ is not expanded; use a path relative to the workspace")
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || hasDriveLetter(p):
		return Refuse(p, "refused: absolute paths are not allowed; use a path relative to the workspace")
	case strings.ContainsRune(p, '\\'):
		return Refuse(p, "refused: use / as the path separator")
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

// LexicalPolicy applies the name-based rules to a clean path: agents/ (any
// spelling), .git/ for writes, and the sensitive-file denylist.
func LexicalPolicy(orig, clean string, op Op) error {
	comps := splitPath(clean)
	if len(comps) > 0 && secrets.NormName(comps[0]) == AgentsDir {
		return Refuse(orig, ErrAgents)
	}
	if op.writes() {
		for _, c := range comps {
			if secrets.NormName(c) == ".git" {
				return Refuse(orig, ErrGitDir)
			}
		}
		if len(comps) == 0 {
			return Failed(orig, "is a directory", nil)
		}
	}
	if secrets.FileDenied(clean) {
		return Refuse(orig, ErrSecret)
	}
	return nil
}

// Resolve resolves p inside the workspace for op and returns the
// checked location, or an error that says why it was refused. It enforces, in
// order: the lexical rules (NUL, absolute, .., length, depth), the agents/ and
// denylist rules on the name, and then a verified descent through the
// workspace root: every directory is opened through the os.Root of its parent
// and compared by identity with what Lstat saw, symlinks are resolved by hand
// and must stay inside the workspace (the rules are re-applied to the target),
// agents/ is refused by identity, and the final entry must be a regular file
// or directory with no other hard links. New files (for op == OpWrite) may not
// exist yet; their missing parent directories are not created here.
//
// Last, the permissions: block is applied to the resolved object (a link's
// target, not its name), so every reader, writer, lister and searcher of
// the workspace gets the same answer: this is the one path gate.
func (ws *Tree) Resolve(p string, op Op) (*Resolved, error) {
	clean, err := LexicalClean(p)
	if err != nil {
		return nil, err
	}
	rp, err := ws.descend(p, clean, op, 0)
	if err != nil {
		return nil, err
	}
	rp.Asked = clean
	if err := ws.Allow(p, rp.Rel, op.perm()); err != nil {
		rp.Close()
		return nil, err
	}
	return rp, nil
}

func (ws *Tree) descend(orig, clean string, op Op, hops int) (*Resolved, error) {
	if err := LexicalPolicy(orig, clean, op); err != nil {
		return nil, err
	}
	comps := splitPath(clean)
	if len(comps) == 0 {
		fi, err := ws.root.Stat(".")
		if err != nil {
			return nil, Failed(orig, err.Error(), err)
		}
		return &Resolved{Rel: ".", Parent: ws.root, ParentRel: ".", Name: ".", Info: fi}, nil
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
			// made when the write happens (internal/wsfile: makeParents).
			return &Resolved{Rel: clean, Parent: cur, own: own, ParentRel: path.Join(append([]string{"."}, comps[:i]...)...), Name: comps[len(comps)-1], Missing: comps[i : len(comps)-1]}, nil
		}
		if err != nil {
			closeCur()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, Failed(orig, "no such file or directory", fs.ErrNotExist)
			}
			return nil, OSFailure(orig, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := cur.Readlink(c)
			closeCur()
			if err != nil {
				return nil, OSFailure(orig, err)
			}
			return ws.followLink(orig, comps[:i], target, comps[i+1:], op, hops)
		}
		if !fi.IsDir() {
			closeCur()
			return nil, Failed(orig, "not a directory: "+path.Join(comps[:i+1]...), nil)
		}
		next, err := ws.enterVerified(cur, c, fi, orig)
		closeCur()
		if err != nil {
			return nil, err
		}
		cur, own = next, true
	}
	parent := path.Join(append([]string{"."}, comps[:len(comps)-1]...)...)
	return ws.resolveLast(orig, clean, comps, &Resolved{Rel: clean, Parent: cur, own: own, ParentRel: parent}, op, hops)
}

// enterVerified opens the directory c of cur that Lstat described as fi,
// and checks it is the same directory (not swapped since) and not agents/.
func (ws *Tree) enterVerified(cur *os.Root, c string, fi fs.FileInfo, orig string) (*os.Root, error) {
	next, err := cur.OpenRoot(c)
	if err != nil {
		return nil, OSFailure(orig, err)
	}
	st, err := next.Stat(".")
	if err != nil || !os.SameFile(fi, st) {
		next.Close()
		return nil, Refuse(orig, "refused: the path changed while it was being checked")
	}
	if ws.IsAgentsDir(st) {
		next.Close()
		return nil, Refuse(orig, ErrAgents)
	}
	return next, nil
}

// resolveLast resolves the last component in its directory (rp.Parent, which
// rp owns when rp.own): a file to create, a link to follow, or an object
// the final rules allow. rp is closed on every refusal.
func (ws *Tree) resolveLast(orig, clean string, comps []string, rp *Resolved, op Op, hops int) (*Resolved, error) {
	name := comps[len(comps)-1]
	rp.Name = name
	fi, err := rp.Parent.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist) && op.writes():
		return rp, nil
	case errors.Is(err, fs.ErrNotExist):
		rp.Close()
		return nil, Failed(orig, "no such file or directory", fs.ErrNotExist)
	case err != nil:
		rp.Close()
		return nil, OSFailure(orig, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := rp.Parent.Readlink(name)
		rp.Close()
		if err != nil {
			return nil, OSFailure(orig, err)
		}
		return ws.followLink(orig, comps[:len(comps)-1], target, nil, op, hops)
	}
	if err := ws.checkFinal(orig, fi, op); err != nil {
		rp.Close()
		return nil, err
	}
	rp.Info = fi
	return rp, nil
}

// checkFinal applies the rules for the last component.
func (ws *Tree) checkFinal(orig string, fi fs.FileInfo, op Op) error {
	m := fi.Mode()
	switch {
	case m.IsDir():
		if ws.IsAgentsDir(fi) {
			return Refuse(orig, ErrAgents)
		}
		if op.writes() && op != OpRemoveDir {
			return Failed(orig, "is a directory", nil)
		}
	case m.IsRegular():
		if fsinfo.Links(fi) > 1 {
			return Refuse(orig, "refused: the file has other hard links, which may lead outside the workspace")
		}
	default:
		return Refuse(orig, "refused: not a regular file ("+fsinfo.Kind(m)+")")
	}
	return nil
}

// followLink resolves a symlink met at prefix/<link> with the given target and
// continues with rest. The target must stay inside the workspace; the whole
// policy is re-applied to the resulting path.
func (ws *Tree) followLink(orig string, prefix []string, target string, rest []string, op Op, hops int) (*Resolved, error) {
	if hops+1 > maxSymlinkHops {
		return nil, Refuse(orig, "refused: too many levels of symbolic links")
	}
	if target == "" || filepath.IsAbs(target) || strings.HasPrefix(target, "/") {
		return nil, Refuse(orig, "refused: symlink leads outside the workspace")
	}
	parts := append(append([]string{}, prefix...), target)
	parts = append(parts, rest...)
	next := path.Join(parts...)
	if !filepath.IsLocal(next) && next != "." {
		return nil, Refuse(orig, "refused: symlink leads outside the workspace")
	}
	if len(splitPath(next)) > maxComponents {
		return nil, Refuse(orig, "refused: path is too deep")
	}
	return ws.descend(orig, next, op, hops+1)
}

// ErrText turns an fs error into a short reason without repeating the path.
func ErrText(err error) string {
	s := fsinfo.ErrText(err)
	if strings.Contains(s, "escapes from parent") {
		return ErrOutside
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
	OpRead      Op = iota // read a file (or list/search a directory)
	OpWrite               // create or replace a file
	OpDelete              // remove a file (resolved as a write; needs delete permission)
	OpRemoveDir           // remove an empty directory (/undo of a write that made it; as OpDelete)
)

// Permission names used in the permissions: block of harvey.yaml.
const (
	PermRead   = "read"
	PermWrite  = "write"
	PermExec   = "exec"
	PermDelete = "delete"
)

var ValidPerms = []string{PermRead, PermWrite, PermExec, PermDelete}

// Permits is the one definition of the permissions: rule. The most specific
// matching prefix wins, matched by whole path components ("src" covers
// "src/a.go", not "srcx"); "." covers everything. An empty map grants
// everything; a map without a matching prefix denies.
func Permits(perms map[string][]string, rel, perm string) bool {
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

// Allow applies the permissions: block to a resolved workspace path; orig
// is the path as asked (a link's name), named in the refusal.
func (ws *Tree) Allow(orig, rel, perm string) error {
	if ws == nil || ws.perms == nil || Permits(ws.perms(), rel, perm) {
		return nil
	}
	if orig != rel && orig != "" {
		return Refuse(orig, fmt.Sprintf("refused: no %s permission for %s (see /permissions)", perm, termtext.QuotePath(rel)))
	}
	return Refuse(rel, fmt.Sprintf("refused: no %s permission (see /permissions)", perm))
}

// Readable reports whether rel (already resolved) may be read: the rule
// that searches, listings and git output apply to each file they show.
func (ws *Tree) Readable(rel string) bool { return ws.Allow(rel, rel, PermRead) == nil }

// IsAgentsDir reports whether fi is the workspace's agents/ directory, by file
// identity: a symlink to it, a differently-cased name on a case-insensitive
// file system or a path through ".." all resolve to the same identity.
func (w *Tree) IsAgentsDir(fi fs.FileInfo) bool {
	return w.agents != nil && fi != nil && os.SameFile(w.agents, fi)
}
