package guard

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// The check after every command for agents/, where no mount can hide it:
// in the Landlock-only mode a command may write the whole workspace,
// agents/ included (Landlock grants a tree, never a tree less a part). So
// agents/ is recorded before each command and, after it, every file the
// command made is removed and every file it changed or removed is put
// back, each said in the result and the audit log. Files are read and
// restored through os.Root at agents/, so a link planted there leads
// nowhere. With namespaces the command sees agents/ empty and read-only,
// and this check is not made.

// agentsKeepBytes bounds the copies kept while a command runs; a file
// past it (or past readSaved's 1 MiB) is compared by its stamp and
// reported, not restored.
const agentsKeepBytes = 16 << 20

// agentsGuard is agents/ before a command.
type agentsGuard struct {
	dir    string
	ident  fileIdent               // agents/ itself: a command that replaces it (with a link into the workspace, say) is undone
	files  map[string]*savedFile   // by slash path in agents/; a directory by its mode alone
	stamps map[string]fsinfo.Stamp // files too large to keep a copy of
}

// harveyWritesMeanwhile reports whether Harvey itself may write p (a path
// in agents/) while a command runs: the workspace index, built in the
// background, and its SQLite side files.
func harveyWritesMeanwhile(p string) bool {
	return strings.HasPrefix(p, "index.db")
}

// guardAgents records agents/ where commands can write it: the modes
// without a mount namespace (Landlock only, and none where the user runs
// commands unsandboxed). Nil elsewhere, or when there is no agents/.
func guardAgents(root string) *agentsGuard {
	if m := sandbox.Available().Mode(); m != sandbox.ModeLandlock && m != sandbox.ModeNone {
		return nil
	}
	return recordAgents(root)
}

// recordAgents records agents/ (nil when there is none).
func recordAgents(root string) *agentsGuard {
	g := &agentsGuard{dir: filepath.Join(root, AgentsDir), files: map[string]*savedFile{}, stamps: map[string]fsinfo.Stamp{}}
	id, ok := identOf(g.dir)
	if !ok {
		return nil // no agents/, or not a directory of its own
	}
	g.ident = id
	r, err := os.OpenRoot(g.dir)
	if err != nil {
		return nil
	}
	defer r.Close()
	kept := 0
	for _, p := range agentsEntries(r) {
		fi, err := r.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode().IsRegular() && (fi.Size() > 1<<20 || kept+int(fi.Size()) > agentsKeepBytes) {
			g.stamps[p] = fsinfo.StampOfInfo(fi)
			continue
		}
		if s := readSaved(r, p); s != nil {
			kept += len(s.data)
			g.files[p] = s
		}
	}
	return g
}

// agentsEntries lists agents/'s entries (not followed through links),
// parents before children, less what Harvey writes meanwhile.
func agentsEntries(r *os.Root) []string {
	var out []string
	_ = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		if harveyWritesMeanwhile(p) {
			return nil
		}
		out = append(out, p)
		return nil
	})
	return out
}

// check undoes what the command did to agents/ and says so, one line each.
func (g *agentsGuard) check() []string {
	if g == nil {
		return nil
	}
	var said []string
	rebuilt := false
	if id, ok := identOf(g.dir); !ok || id != g.ident {
		said, rebuilt = append(said, g.putBack()), true
	}
	r, err := os.OpenRoot(g.dir)
	if err != nil {
		return []string{fmt.Sprintf("[harvey: agents/ cannot be opened after the command (%v): check it]", fsinfo.ErrText(err))}
	}
	defer r.Close()
	var removed []string
	for _, p := range agentsEntries(r) {
		_, kept := g.files[p]
		_, stamped := g.stamps[p]
		if kept || stamped || slices.ContainsFunc(removed, func(d string) bool { return strings.HasPrefix(p, d+"/") }) {
			continue
		}
		if r.RemoveAll(p) == nil {
			removed = append(removed, p)
			said = append(said, fmt.Sprintf("[harvey: undone: the command created agents/%s (Harvey's own directory); removed]", p))
		}
	}
	kept := slices.Sorted(maps.Keys(g.files))
	for _, p := range kept {
		before, after := g.files[p], readSaved(r, p)
		if before.mode.IsDir() {
			if after == nil || !after.mode.IsDir() {
				r.RemoveAll(p)
				r.Mkdir(p, before.mode.Perm())
				said = append(said, fmt.Sprintf("[harvey: undone: the command removed or replaced agents/%s; made again]", p))
			}
			continue
		}
		if sameSaved(before, after) {
			continue
		}
		if err := putSaved(r, p, before); err != nil {
			said = append(said, fmt.Sprintf("[harvey: the command changed agents/%s and it could not be restored: %v]", p, fsinfo.ErrText(err)))
			continue
		}
		if !rebuilt {
			said = append(said, fmt.Sprintf("[harvey: undone: the command changed agents/%s (Harvey's own directory); restored]", p))
		}
	}
	for p, k := range g.stamps {
		if fsinfo.RootStamp(r, p) != k {
			said = append(said, fmt.Sprintf("[harvey: the command changed agents/%s, too large to keep a copy of: it was not restored; check it]", p))
		}
	}
	return said
}

// putBack makes agents/ a directory of Harvey's again where a command
// removed it or put something else in its place (a link into the
// workspace would make Harvey keep its state where commands write): what
// stands there is removed (a link itself, never what it leads to), and the
// files kept before the command are written back by the check that
// follows.
func (g *agentsGuard) putBack() string {
	what := "removed"
	if fi, err := os.Lstat(g.dir); err == nil {
		what = "replaced"
		if fi.Mode()&os.ModeSymlink != 0 {
			what = "replaced with a link"
		}
		if fi.IsDir() {
			os.RemoveAll(g.dir)
		} else {
			os.Remove(g.dir)
		}
	}
	if err := os.Mkdir(g.dir, 0o700); err != nil {
		return fmt.Sprintf("[harvey: the command %s agents/ (Harvey's own directory) and it could not be made again: %v]", what, fsinfo.ErrText(err))
	}
	g.ident, _ = identOf(g.dir)
	// Directories first (parents sort before children), then the files.
	for _, p := range slices.Sorted(maps.Keys(g.files)) {
		if f := g.files[p]; f.mode.IsDir() {
			os.MkdirAll(filepath.Join(g.dir, p), f.mode.Perm()|0o700)
		}
	}
	return fmt.Sprintf("[harvey: undone: the command %s agents/ (Harvey's own directory); made again, with its files]", what)
}
