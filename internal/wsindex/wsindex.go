// Package wsindex is the workspace as a store that is always there: a
// lexical index (SQLite FTS5, ranked by BM25) of the workspace's text,
// chunked at function and type boundaries where the language makes that
// cheap (Go through go/parser; other files by blank lines), with
// identifiers split so that parseConfigFile matches "parse config file".
// It needs no embedding model and no setup.
//
// When the workspace is embedded too (vectors.go), each chunk may carry a
// vector from one embedding model; a chunk indexed again loses its vector
// with its old text, so a vector always belongs to the text it was made
// from, and FuseWeighted merges the two rankings.
//
// Contract: the caller decides what may be indexed — Sync takes documents
// already filtered (no denied, hidden, ignored or binary file) and
// redacted — and re-checks each hit's file at query time; the package
// stores what it is given and nothing else. Sync re-indexes only the files
// whose content hash changed (not reading one whose stamp is the one
// indexed) and drops the files no longer given, in one
// transaction per batch, so an interrupted sync leaves a usable index and a
// later one converges. Open refuses, in one line and leaving the file as it
// was, anything that is not an index this package wrote: a link, a file
// with other hard links, a corrupt or foreign database.
package wsindex

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"iter"
	"net/url"
	"slices"
	"strings"
	"unicode"

	_ "modernc.org/sqlite"

	"github.com/harvey-agent/harvey/internal/fsinfo"
)

// appID marks a database this package wrote (PRAGMA application_id).
const appID = 0x48525631 // "HRV1"

// schema is the index's tables: the files by content hash, the chunks, and
// the FTS5 table over their text and their split identifiers.
const schema = `
CREATE TABLE files (path TEXT PRIMARY KEY, hash TEXT NOT NULL, stamp TEXT NOT NULL DEFAULT '');
CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX chunks_path ON chunks(path);
CREATE VIRTUAL TABLE chunks_fts USING fts5(body, words, content='', tokenize='porter unicode61');
` + vectorSchema

// vectorSchema holds the chunks' embeddings, when the workspace is embedded
// (vectors.go); an index made before it gains the tables on open.
const vectorSchema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vecs (chunk INTEGER PRIMARY KEY, vec BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS todo (chunk INTEGER PRIMARY KEY);
`

// Doc is one file to index: its workspace path and its content, already
// filtered and redacted by the caller — given, or read by Read when the
// file's Stamp (its size, times and inode, as the caller sees them) is not
// the one indexed: an unchanged file is not read again.
type Doc struct {
	Path    string
	Content []byte
	Stamp   string                // "" : always compared by content
	Read    func() ([]byte, bool) // nil: Content is the content
}

// Hit is one chunk a query found.
type Hit struct {
	Path      string  `json:"source"`
	StartLine int     `json:"start_line"`
	EndLine   int     `json:"end_line"`
	Score     float64 `json:"score"`
	Text      string  `json:"text"`
}

// Stats is what a Sync did.
type Stats struct {
	Files, Indexed, Removed, Chunks int
	// LeftOut is the caller's one line on what its walk left out (the
	// index itself leaves out nothing it is given).
	LeftOut string
	// Embedded and Total are the caller's count of the chunks embedded
	// by the model that ranked the query, of all (0 and 0: none ranked).
	Embedded, Total int
}

// Index is an open index.
type Index struct {
	db   *sql.DB
	name string
}

// Open opens (creating it when missing) the index at path; name is how
// messages call it.
func Open(path, name string) (*Index, error) {
	fresh, err := fsinfo.OwnDatabase(path, name, true)
	if err != nil {
		return nil, err
	}
	// Another process's sync (the REPL's build, a batch of 500 files: a
	// few seconds on a Pi) is waited for, not failed on.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(30000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	db.SetMaxOpenConns(1)
	ix := &Index{db: db, name: name}
	if err := ix.prepare(fresh); err != nil {
		db.Close()
		return nil, err
	}
	return ix, nil
}

// prepare checks the file is this package's index (nothing is written
// before), or makes a new one.
func (ix *Index) prepare(fresh bool) error {
	var id, tables int
	if err := ix.db.QueryRow("PRAGMA application_id").Scan(&id); err != nil {
		return fmt.Errorf("%s is not an index Harvey can read (%v); left as it is — remove it to rebuild", ix.name, firstLine(err.Error()))
	}
	if err := ix.db.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return fmt.Errorf("%s is not an index Harvey can read (%v); left as it is — remove it to rebuild", ix.name, firstLine(err.Error()))
	}
	switch {
	case id == appID:
		// No whole-file check here: it read every page at each query
		// (2 s on Go's source tree); damage met by a query is reported
		// in one line like any error.
		if _, err := ix.db.Exec(vectorSchema); err != nil {
			return ix.explain(err)
		}
		return nil
	case id != 0 || tables > 0 || !fresh && !ix.empty():
		return fmt.Errorf("%s is another program's database; left as it is", ix.name)
	}
	if _, err := ix.db.Exec("PRAGMA journal_mode=WAL"); err != nil {
		return fmt.Errorf("%s: %v", ix.name, err)
	}
	tx, err := ix.db.Begin()
	if err != nil {
		return fmt.Errorf("%s: %v", ix.name, err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(schema); err != nil {
		return fmt.Errorf("%s: %v", ix.name, err)
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA application_id = %d", appID)); err != nil {
		return fmt.Errorf("%s: %v", ix.name, err)
	}
	return tx.Commit()
}

// empty reports whether the database file has no page yet.
func (ix *Index) empty() bool {
	var n int
	return ix.db.QueryRow("PRAGMA page_count").Scan(&n) == nil && n == 0
}

// Close closes the index.
func (ix *Index) Close() error { return ix.db.Close() }

// Sync makes the index hold exactly docs: a file whose content hash
// changed is chunked again, a file no longer given is dropped, the rest is
// left alone. Work is committed in batches, so an interrupted Sync loses
// at most its last batch.
func (ix *Index) Sync(ctx context.Context, docs iter.Seq[Doc]) (Stats, error) {
	var st Stats
	known, stamps := map[string]string{}, map[string]string{}
	rows, err := ix.db.QueryContext(ctx, "SELECT path, hash, stamp FROM files")
	if err != nil {
		return st, ix.explain(err)
	}
	for rows.Next() {
		var p, h, s string
		rows.Scan(&p, &h, &s)
		known[p], stamps[p] = h, s
	}
	rows.Close()
	seen := map[string]bool{}
	b := &batch{ix: ix, embedded: ix.model(ctx) != ""}
	defer b.rollback()
	for d := range docs {
		if ctx.Err() != nil {
			break
		}
		st.Files++
		seen[d.Path] = true
		if d.Stamp != "" && stamps[d.Path] == d.Stamp {
			continue
		}
		if d.Read != nil {
			content, ok := d.Read()
			if !ok {
				// Not indexable (binary, too large): kept with its stamp
				// and no chunks, so it is not read again until it changes.
				if _, err := b.put(ctx, Doc{Path: d.Path, Stamp: d.Stamp}, ""); err != nil {
					return st, err
				}
				continue
			}
			d.Content = content
		}
		sum := sha256.Sum256(d.Content)
		h := hex.EncodeToString(sum[:])
		if known[d.Path] == h {
			if stamps[d.Path] != d.Stamp {
				if err := b.stamp(ctx, d.Path, d.Stamp); err != nil {
					return st, err
				}
			}
			continue
		}
		n, err := b.put(ctx, d, h)
		if err != nil {
			return st, err
		}
		st.Indexed++
		st.Chunks += n
	}
	if ctx.Err() == nil {
		for p := range known {
			if !seen[p] {
				if err := b.drop(ctx, p); err != nil {
					return st, err
				}
				st.Removed++
			}
		}
	}
	if err := b.commit(); err != nil {
		return st, err
	}
	return st, ctx.Err()
}

// batch is the write transaction of a Sync, committed every batchFiles.
type batch struct {
	ix       *Index
	tx       *sql.Tx
	n        int
	embedded bool // the index is embedded: a new chunk waits in todo for its vector
}

const batchFiles = 500

func (b *batch) begin(ctx context.Context) error {
	if b.tx != nil {
		return nil
	}
	tx, err := b.ix.db.BeginTx(ctx, nil)
	if err != nil {
		return b.ix.explain(err)
	}
	b.tx = tx
	return nil
}

func (b *batch) drop(ctx context.Context, path string) error {
	if err := b.begin(ctx); err != nil {
		return err
	}
	// A contentless FTS5 table forgets a row by being told what it held.
	q, err := b.tx.QueryContext(ctx, "SELECT id, body FROM chunks WHERE path = ?", path)
	if err != nil {
		return b.ix.explain(err)
	}
	type old struct {
		id   int64
		body string
	}
	var olds []old
	for q.Next() {
		var o old
		q.Scan(&o.id, &o.body)
		olds = append(olds, o)
	}
	q.Close()
	for _, o := range olds {
		if _, err := b.tx.ExecContext(ctx, "INSERT INTO chunks_fts(chunks_fts, rowid, body, words) VALUES('delete', ?, ?, ?)", o.id, o.body, identWords(o.body)); err != nil {
			return b.ix.explain(err)
		}
	}
	for _, s := range []string{"DELETE FROM vecs WHERE chunk IN (SELECT id FROM chunks WHERE path = ?)", "DELETE FROM todo WHERE chunk IN (SELECT id FROM chunks WHERE path = ?)",
		"DELETE FROM chunks WHERE path = ?", "DELETE FROM files WHERE path = ?"} {
		if _, err := b.tx.ExecContext(ctx, s, path); err != nil {
			return b.ix.explain(err)
		}
	}
	return nil
}

func (b *batch) put(ctx context.Context, d Doc, hash string) (int, error) {
	if err := b.drop(ctx, d.Path); err != nil {
		return 0, err
	}
	chunks := Chunks(d.Path, d.Content)
	for _, c := range chunks {
		res, err := b.tx.ExecContext(ctx, "INSERT INTO chunks(path, start_line, end_line, body) VALUES(?, ?, ?, ?)", d.Path, c.StartLine, c.EndLine, c.Text)
		if err != nil {
			return 0, b.ix.explain(err)
		}
		id, _ := res.LastInsertId()
		if _, err := b.tx.ExecContext(ctx, "INSERT INTO chunks_fts(rowid, body, words) VALUES(?, ?, ?)", id, c.Text, identWords(c.Text)); err != nil {
			return 0, b.ix.explain(err)
		}
		if b.embedded {
			if _, err := b.tx.ExecContext(ctx, "INSERT OR IGNORE INTO todo(chunk) VALUES(?)", id); err != nil {
				return 0, b.ix.explain(err)
			}
		}
	}
	if _, err := b.tx.ExecContext(ctx, "INSERT INTO files(path, hash, stamp) VALUES(?, ?, ?)", d.Path, hash, d.Stamp); err != nil {
		return 0, b.ix.explain(err)
	}
	b.n++
	if b.n >= batchFiles {
		b.n = 0
		if err := b.commit(); err != nil {
			return 0, err
		}
	}
	return len(chunks), nil
}

// stamp records a file's new stamp when its content is unchanged (touched).
func (b *batch) stamp(ctx context.Context, path, stamp string) error {
	if err := b.begin(ctx); err != nil {
		return err
	}
	if _, err := b.tx.ExecContext(ctx, "UPDATE files SET stamp = ? WHERE path = ?", stamp, path); err != nil {
		return b.ix.explain(err)
	}
	return nil
}

func (b *batch) commit() error {
	if b.tx == nil {
		return nil
	}
	err := b.tx.Commit()
	b.tx = nil
	if err != nil {
		return b.ix.explain(err)
	}
	return nil
}

func (b *batch) rollback() {
	if b.tx != nil {
		b.tx.Rollback()
		b.tx = nil
	}
}

// Query returns the k chunks that best match q (BM25), best first. q is
// plain words; identifiers in it are split as the index's are.
func (ix *Index) Query(ctx context.Context, q string, k int) ([]Hit, error) {
	expr := matchExpr(q)
	if expr == "" {
		return nil, nil
	}
	// The best k are ranked inside the FTS table first; only they are
	// joined with their text.
	rows, err := ix.db.QueryContext(ctx, `SELECT c.path, c.start_line, c.end_line, c.body, r.score
		FROM (SELECT rowid, bm25(chunks_fts, 1.0, 3.0) AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?) r
		JOIN chunks c ON c.id = r.rowid ORDER BY r.score`, expr, k)
	if err != nil {
		return nil, ix.explain(err)
	}
	defer rows.Close()
	var out []Hit
	for rows.Next() {
		var h Hit
		if err := rows.Scan(&h.Path, &h.StartLine, &h.EndLine, &h.Text, &h.Score); err != nil {
			return nil, ix.explain(err)
		}
		h.Score = -h.Score // bm25: lower is better
		out = append(out, h)
	}
	return out, rows.Err()
}

// Files is how many files the index holds.
func (ix *Index) Files() int {
	var n int
	ix.db.QueryRow("SELECT count(*) FROM files").Scan(&n)
	return n
}

// Paths lists the indexed files.
func (ix *Index) Paths() ([]string, error) {
	rows, err := ix.db.Query("SELECT path FROM files ORDER BY path")
	if err != nil {
		return nil, ix.explain(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		rows.Scan(&p)
		out = append(out, p)
	}
	return out, rows.Err()
}

// stopWords are left out of a query (they match everywhere).
var stopWords = []string{"a", "an", "the", "of", "to", "in", "is", "and", "or", "for", "on", "it", "by", "with", "what", "where", "which",
	"how", "does", "do", "that", "this", "be", "are", "from", "as", "at", "find", "code", "function", "file", "me", "i", "you", "can", "there"}

// matchExpr turns plain words into an FTS5 expression: each word (and the
// parts of an identifier) as a quoted term, any of them.
func matchExpr(q string) string {
	var terms []string
	for _, w := range strings.Fields(Words(q)) {
		w = strings.ToLower(w)
		if len(w) < 2 || slices.Contains(stopWords, w) || slices.Contains(terms, `"`+w+`"`) {
			continue
		}
		terms = append(terms, `"`+w+`"`)
	}
	return strings.Join(terms, " OR ")
}

// Words is text's identifiers split into words: parseConfigFile and
// parse_config_file both give "parse config file", HTTPServer gives "http
// server" (the whole identifier is kept too).
func Words(s string) string {
	var b strings.Builder
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		parts := splitIdent(tok)
		if len(parts) > 1 {
			b.WriteString(strings.ToLower(tok))
			b.WriteByte(' ')
		}
		for _, p := range parts {
			b.WriteString(strings.ToLower(p))
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

// identWords is the second column of the index: only the compound
// identifiers of text (parseConfigFile, parse_config_file), whole and in
// parts, so that a question naming their parts ranks the code that
// declares them above prose that only uses the words.
func identWords(s string) string {
	var b strings.Builder
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if parts := splitIdent(tok); len(parts) > 1 {
			b.WriteString(strings.ToLower(tok))
			for _, p := range parts {
				b.WriteByte(' ')
				b.WriteString(strings.ToLower(p))
			}
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

// splitIdent splits an identifier at underscores and case changes.
func splitIdent(s string) []string {
	var out []string
	for _, seg := range strings.Split(s, "_") {
		rs := []rune(seg)
		start := 0
		for i := 1; i < len(rs); i++ {
			lowerToUpper := unicode.IsLower(rs[i-1]) && unicode.IsUpper(rs[i])
			acronymEnd := i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i+1])
			digitEdge := unicode.IsDigit(rs[i]) != unicode.IsDigit(rs[i-1])
			if lowerToUpper || acronymEnd || digitEdge {
				out = append(out, string(rs[start:i]))
				start = i
			}
		}
		if start < len(rs) {
			out = append(out, string(rs[start:]))
		}
	}
	return slices.DeleteFunc(out, func(p string) bool { return p == "" })
}

func (ix *Index) explain(err error) error {
	return fmt.Errorf("%s: %s", ix.name, firstLine(err.Error()))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
