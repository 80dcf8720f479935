package harvey

import (
	"fmt"
	"path"
	"slices"
	"strings"
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

// gitPathspecs is what git is given after "--": the paths asked for (or
// what may be read of the whole tree), then the hidden set — agents/, the
// denylist and every directory permissions: gives no read — as excludes,
// generated from the same definitions as the path policy, so git is never
// asked about a file Harvey hides (its history queries included). git
// cannot include again below an exclude: a directory granted read inside
// one that is not stays out of git output (hidden too much, never too
// little).
func (ws *Workspace) gitPathspecs(paths []string) []string {
	out := append([]string{}, paths...)
	var perms map[string][]string
	if ws != nil && ws.perms != nil {
		perms = ws.perms()
	}
	if len(out) == 0 {
		switch {
		case permits(perms, ".", PermRead) || len(perms) == 0:
			out = append(out, ".")
		default:
			for _, prefix := range sortedKeys(perms) {
				if p := path.Clean(strings.TrimSuffix(prefix, "/")); p != "." && slices.Contains(perms[prefix], PermRead) && !strings.HasPrefix(p, "..") {
					out = append(out, p)
				}
			}
			if len(out) == 0 {
				return append(out, ":(exclude,glob)**") // nothing may be read
			}
		}
	}
	out = append(out, gitDenylistPathspecs()...)
	for _, prefix := range sortedKeys(perms) {
		if p := path.Clean(strings.TrimSuffix(prefix, "/")); p != "." && !slices.Contains(perms[prefix], PermRead) && !strings.HasPrefix(p, "..") {
			out = append(out, ":(exclude,literal)"+p)
		}
	}
	return out
}

// allow applies the permissions: block to a resolved workspace path; orig
// is the path as asked (a link's name), named in the refusal.
func (ws *Workspace) allow(orig, rel, perm string) error {
	if ws == nil || ws.perms == nil || permits(ws.perms(), rel, perm) {
		return nil
	}
	if orig != rel && orig != "" {
		return refuse(orig, fmt.Sprintf("refused: no %s permission for %s (see /permissions)", perm, quotePath(rel)))
	}
	return refuse(rel, fmt.Sprintf("refused: no %s permission (see /permissions)", perm))
}

// readable reports whether rel (already resolved) may be read: the rule
// that searches, listings and git output apply to each file they show.
func (ws *Workspace) readable(rel string) bool { return ws.allow(rel, rel, PermRead) == nil }
