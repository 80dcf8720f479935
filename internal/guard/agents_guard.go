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
	"github.com/harvey-agent/harvey/internal/wspath"
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
	dir     string
	ident   fileIdent               // agents/ itself: a command that replaces it (with a link into the workspace, say) is undone
	files   map[string]*savedFile   // by slash path in agents/; a directory by its mode alone
	stamps  map[string]fsinfo.Stamp // files too large to keep a copy of
	gen     int64                   // Harvey's own writes up to here are in files (wspath.OwnGen)
	rebased bool                    // Harvey's own writes were taken into files since the journal was written
}

// harveyWritesMeanwhile reports whether Harvey itself may write p (a path
// in agents/) at any time, a command running or not: the workspace index,
// built in the background, and the knowledge base, with their SQLite side
// files (a copy put back under an open database would break it).
func harveyWritesMeanwhile(p string) bool {
	return strings.HasPrefix(p, "index.db") || strings.HasPrefix(p, "knowledge.db")
}

// harveyWrote reports whether Harvey itself wrote p (in agents/) since the
// guard's record (its session journal, history, a recording, a config it
// saved, while a job or a server ran): its own, taken as the record's.
func (g *agentsGuard) harveyWrote(r *os.Root, p string) bool {
	if !wspath.OwnSince(filepath.Join(g.dir, filepath.FromSlash(p)), g.gen) {
		return false
	}
	g.rebased = true
	delete(g.files, p)
	delete(g.stamps, p)
	if s := readSaved(r, p); s != nil {
		g.files[p] = s
	} else if fi, err := r.Lstat(p); err == nil {
		g.stamps[p] = fsinfo.StampOfInfo(fi)
	}
	return true
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
	g := &agentsGuard{dir: filepath.Join(root, AgentsDir), files: map[string]*savedFile{}, stamps: map[string]fsinfo.Stamp{}, gen: wspath.OwnGen()}
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
	gen := wspath.OwnGen()
	defer func() { g.gen = gen }() // what Harvey writes during the check is the next one's
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
	said = append(said, g.removeNew(r)...)
	for _, p := range slices.Sorted(maps.Keys(g.files)) {
		if line := g.restore(r, p, rebuilt); line != "" {
			said = append(said, line)
		}
	}
	for p, k := range g.stamps {
		if fsinfo.RootStamp(r, p) != k && !g.harveyWrote(r, p) {
			said = append(said, fmt.Sprintf("[harvey: the command changed agents/%s, too large to keep a copy of: it was not restored; check it]", p))
		}
	}
	return said
}

// removeNew removes what the command made in agents/ (not Harvey), a line
// each.
func (g *agentsGuard) removeNew(r *os.Root) []string {
	var said, removed []string
	for _, p := range agentsEntries(r) {
		_, kept := g.files[p]
		_, stamped := g.stamps[p]
		if kept || stamped || slices.ContainsFunc(removed, func(d string) bool { return strings.HasPrefix(p, d+"/") }) || g.harveyWrote(r, p) {
			continue
		}
		if r.RemoveAll(p) == nil {
			removed = append(removed, p)
			said = append(said, fmt.Sprintf("[harvey: undone: the command created agents/%s (Harvey's own directory); removed]", p))
		}
	}
	return said
}

// restore puts back what the command changed of p (a path in agents/ the
// record holds) and says so ("": nothing to say; rebuilt: agents/ was made
// again, said already).
func (g *agentsGuard) restore(r *os.Root, p string, rebuilt bool) string {
	if g.harveyWrote(r, p) {
		return ""
	}
	before, after := g.files[p], readSaved(r, p)
	if before.mode.IsDir() {
		if after == nil || !after.mode.IsDir() {
			r.RemoveAll(p)
			r.Mkdir(p, before.mode.Perm())
			return fmt.Sprintf("[harvey: undone: the command removed or replaced agents/%s; made again]", p)
		}
		return ""
	}
	if sameSaved(before, after) {
		return ""
	}
	if err := putSaved(r, p, before); err != nil {
		return fmt.Sprintf("[harvey: the command changed agents/%s and it could not be restored: %v]", p, fsinfo.ErrText(err))
	}
	if rebuilt {
		return ""
	}
	return fmt.Sprintf("[harvey: undone: the command changed agents/%s (Harvey's own directory); restored]", p)
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
