package harvey

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path"
	"path/filepath"
	"strings"

	"github.com/harvey-agent/harvey/internal/wsindex"
)

// The workspace as a store (issue 36, the lexical part): internal/wsindex
// indexes what this file gives it — the workspace's text files that the
// path policy lets the model read (not agents/, .git, the denylist,
// permissions:, .gitignore, binaries, files over 1 MB), each redacted as
// the model's view is before it is stored — and every hit is checked
// against the same policy again when it is returned, so a file hidden
// after indexing is not returned. The index lives in agents/index.db
// (Harvey's own), is brought up to date from content hashes before each
// query, and needs no embedding model.

// indexMaxFile is the largest file indexed.
const indexMaxFile = 1 << 20

// workspaceIndexPath is where the index is kept.
const workspaceIndexPath = AgentsDir + "/index.db"

// openWorkspaceIndex opens the workspace's index (creating it).
func openWorkspaceIndex(ws *Workspace) (*wsindex.Index, error) {
	if !ws.HasAgents() {
		return nil, errors.New("no agents/ directory in this workspace for the index")
	}
	return wsindex.Open(filepath.Join(ws.Root, AgentsDir, "index.db"), workspaceIndexPath)
}

// indexableDocs walks the workspace as search_files does and yields what
// may be indexed, redacted.
func indexableDocs(ws *Workspace) iter.Seq[wsindex.Doc] {
	return func(yield func(wsindex.Doc) bool) {
		fsys := ws.FS()
		ign := &ignoreSet{}
		var walk func(dir string) bool
		walk = func(dir string) bool {
			entries, err := fs.ReadDir(fsys, dir)
			if err != nil {
				return true
			}
			mark := len(ign.rules)
			defer func() { ign.rules = ign.rules[:mark] }()
			for _, e := range entries {
				if e.Name() == ".gitignore" && e.Type().IsRegular() {
					if data, err := fs.ReadFile(fsys, path.Join(dir, e.Name())); err == nil && len(data) < 1<<20 {
						ign.add(dir, data)
					}
				}
			}
			for _, e := range entries {
				rel := path.Join(dir, e.Name())
				switch t := e.Type(); {
				case t.IsDir():
					norm := normName(e.Name())
					if norm == ".git" || dir == "." && norm == AgentsDir || ign.ignored(rel, true) {
						continue
					}
					if !walk(rel) {
						return false
					}
				case t.IsRegular():
					if sensitiveFileDenied(rel) || ign.ignored(rel, false) || !ws.readable(rel) {
						continue
					}
					if fi, err := e.Info(); err != nil || fi.Size() > indexMaxFile {
						continue
					}
					data, err := fs.ReadFile(fsys, rel)
					if err != nil || isBinary(data) {
						continue
					}
					if !yield(wsindex.Doc{Path: rel, Content: []byte(redactSecrets(string(data)))}) {
						return false
					}
				}
				// Links, FIFOs, sockets and devices are never followed or read.
			}
			return true
		}
		walk(".")
	}
}

// queryWorkspace brings the index up to date and returns the k best
// chunks for q that the path policy lets the model read now.
func queryWorkspace(ctx context.Context, ws *Workspace, q string, k int) ([]wsindex.Hit, wsindex.Stats, error) {
	ix, err := openWorkspaceIndex(ws)
	if err != nil {
		return nil, wsindex.Stats{}, err
	}
	defer ix.Close()
	st, err := ix.Sync(ctx, indexableDocs(ws))
	if err != nil {
		return nil, st, err
	}
	hits, err := ix.Query(ctx, q, k*3)
	if err != nil {
		return nil, st, err
	}
	var out []wsindex.Hit
	for _, h := range hits {
		if len(out) == k {
			break
		}
		if stillReadable(ws, h.Path) {
			out = append(out, h)
		}
	}
	return out, st, nil
}

// stillReadable is the path policy at query time: the file resolves,
// inside the workspace, readable, not denied.
func stillReadable(ws *Workspace, rel string) bool {
	if sensitiveFileDenied(rel) || !ws.readable(rel) {
		return false
	}
	rp, err := resolveWorkspacePath(ws, rel, opRead)
	if err != nil {
		return false
	}
	defer rp.close()
	return rp.info.Mode().IsRegular() && ws.readable(rp.Rel)
}

// findBudget bounds find_code's answer: about 1,500 tokens, so a small
// model's window keeps room (a smaller result cap lowers it).
const findBudget = 6 << 10

// formatHits renders hits for the model, best first, within the budget:
// each as "path:start-end" and its lines, a long chunk cut.
func formatHits(hits []wsindex.Hit, limit int) string {
	if len(hits) == 0 {
		return "nothing in the workspace matches; try other words, or search_files with a pattern"
	}
	budget := min(findBudget, max(limit, 1024))
	var b strings.Builder
	for _, h := range hits {
		lines := strings.Split(strings.TrimRight(h.Text, "\n"), "\n")
		head := fmt.Sprintf("%s:%d-%d\n", h.Path, h.StartLine, h.EndLine)
		room := budget - b.Len() - len(head)
		if room < 200 {
			break
		}
		b.WriteString(head)
		for i, l := range lines {
			if len(l)+1 > room || i == 40 {
				fmt.Fprintf(&b, "… (lines %d-%d: read_file %s offset=%d)\n", h.StartLine+i, h.EndLine, h.Path, h.StartLine+i)
				break
			}
			b.WriteString(l + "\n")
			room -= len(l) + 1
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
