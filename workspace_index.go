package harvey

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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

// ragCommand is harvey rag: query the workspace store.
func ragCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "query" {
		fmt.Fprintln(stderr, `usage: harvey rag query "TEXT" [--store workspace] [-k N] [--json]`)
		return 2
	}
	fs := flag.NewFlagSet("rag query", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	k := fs.Int("k", 5, "")
	asJSON := fs.Bool("json", false, "")
	store := fs.String("store", "workspace", "")
	var words []string
	rest := args[1:]
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			fmt.Fprintf(stderr, "harvey rag query: %v\n", err)
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	q := strings.TrimSpace(strings.Join(words, " "))
	switch {
	case q == "":
		fmt.Fprintln(stderr, `usage: harvey rag query "TEXT" [-k N] [--json]`)
		return 2
	case *store != "workspace":
		fmt.Fprintf(stderr, "harvey rag query: no store %q (the workspace store needs no setup; stores with an embedding model are not built yet)\n", *store)
		return 1
	case *k < 1 || *k > 50:
		fmt.Fprintln(stderr, "harvey rag query: -k is 1 to 50")
		return 2
	}
	ws, err := openWorkspace(".")
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	defer ws.Close()
	if err := ws.ensureAgents(); err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	// permissions: as the session reads them (yours, and the workspace's
	// the stricter way until you confirm it).
	if cf, _ := loadConfig(ws); cf != nil {
		ws.config = cf
	}
	hits, _, err := queryWorkspace(ctx, ws, q, *k)
	if err != nil {
		fmt.Fprintf(stderr, "harvey rag query: %s\n", oneLine(err.Error()))
		return 1
	}
	if *asJSON {
		if hits == nil {
			hits = []wsindex.Hit{}
		}
		b, _ := json.MarshalIndent(hits, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	if len(hits) == 0 {
		fmt.Fprintln(stdout, "no match")
		return 0
	}
	for _, h := range hits {
		fmt.Fprintf(stdout, "%s:%d-%d  (score %.2f)\n", sanitizeForTerminal(h.Path), h.StartLine, h.EndLine, h.Score)
		lines := strings.Split(strings.TrimRight(sanitizeForTerminal(h.Text), "\n"), "\n")
		for _, l := range lines[:min(len(lines), 8)] {
			fmt.Fprintln(stdout, "    "+l)
		}
		if len(lines) > 8 {
			fmt.Fprintf(stdout, "    … %s\n", plural(len(lines)-8, "more line"))
		}
	}
	return 0
}
