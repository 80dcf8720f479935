// Package knowledge is Harvey's knowledge base (seed 003): projects,
// timestamped observations and concepts that span projects, in one SQLite
// file (the agent keeps it in agents/knowledge.db, out of every tool's
// reach; only the /kb commands read and write it).
//
// Contract: Open refuses, and leaves exactly as it was, a file that is not
// a regular file with one link (side files included), a database written by
// a newer Harvey, or one that is not a usable SQLite database; every error
// is one printable line. A database it opens is migrated to SchemaVersion:
// each release appends to kbMigrations and never edits an earlier entry.
// Writes are transactions: a process killed mid-write leaves every committed
// row and none of the others. One connection (SQLite serialises writers
// anyway, and a second connection could deadlock against a held cursor),
// WAL, foreign keys and a busy timeout after which a locked database is an
// error that says so.
//
// Do is /kb: one subcommand on a Base, its output printable (names and
// notes sanitised for the terminal); what /kb inject gives the session is
// redacted.
package knowledge

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	_ "modernc.org/sqlite" // pure Go SQLite: Harvey cross-compiles with CGO_ENABLED=0
)

// ObservationKinds are the kinds an observation may have.
var ObservationKinds = []string{"note", "finding", "decision", "question", "hypothesis"}

// ProjectStatuses are the states a project may be in.
var ProjectStatuses = []string{"active", "paused", "concluded"}

// kbMigrations[i] moves the schema from version i to i+1.
var kbMigrations = []string{
	// 1: the five tables of seed 003 and the summary view.
	`CREATE TABLE projects (
		id INTEGER PRIMARY KEY,
		name TEXT NOT NULL UNIQUE COLLATE NOCASE CHECK (length(trim(name)) > 0),
		description TEXT NOT NULL DEFAULT '',
		status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'concluded')),
		created_at TEXT NOT NULL
	);
	CREATE TABLE observations (
		id INTEGER PRIMARY KEY,
		project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
		kind TEXT NOT NULL CHECK (kind IN ('note', 'finding', 'decision', 'question', 'hypothesis')),
		body TEXT NOT NULL CHECK (length(trim(body)) > 0),
		created_at TEXT NOT NULL
	);
	CREATE INDEX observations_project ON observations(project_id, id);
	CREATE TABLE concepts (
		id INTEGER PRIMARY KEY,
		name TEXT NOT NULL UNIQUE COLLATE NOCASE CHECK (length(trim(name)) > 0),
		description TEXT NOT NULL DEFAULT '',
		created_at TEXT NOT NULL
	);
	CREATE TABLE project_concepts (
		project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
		concept_id INTEGER NOT NULL REFERENCES concepts(id) ON DELETE CASCADE,
		PRIMARY KEY (project_id, concept_id)
	);
	CREATE TABLE observation_concepts (
		observation_id INTEGER NOT NULL REFERENCES observations(id) ON DELETE CASCADE,
		concept_id INTEGER NOT NULL REFERENCES concepts(id) ON DELETE CASCADE,
		PRIMARY KEY (observation_id, concept_id)
	);
	CREATE VIEW project_summary AS
		SELECT p.id, p.name, p.description, p.status, p.created_at,
			(SELECT count(*) FROM observations o WHERE o.project_id = p.id) AS observations,
			coalesce((SELECT group_concat(name, ', ') FROM (SELECT c.name FROM project_concepts pc
				JOIN concepts c ON c.id = pc.concept_id WHERE pc.project_id = p.id ORDER BY c.name)), '') AS concepts
		FROM projects p;`,
	// 2: the active project survives a restart; full-text search of
	// observations (FTS5, kept in step by triggers, filled from existing rows).
	`CREATE TABLE kb_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
	CREATE VIRTUAL TABLE observations_fts USING fts5(body, content='observations', content_rowid='id');
	CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
		INSERT INTO observations_fts(rowid, body) VALUES (new.id, new.body);
	END;
	CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
		INSERT INTO observations_fts(observations_fts, rowid, body) VALUES ('delete', old.id, old.body);
	END;
	CREATE TRIGGER observations_au AFTER UPDATE ON observations BEGIN
		INSERT INTO observations_fts(observations_fts, rowid, body) VALUES ('delete', old.id, old.body);
		INSERT INTO observations_fts(rowid, body) VALUES (new.id, new.body);
	END;
	INSERT INTO observations_fts(observations_fts) VALUES ('rebuild');`,
}

// SchemaVersion is the schema version this Harvey writes.
var SchemaVersion = len(kbMigrations)

// Base is an open agents/knowledge.db.
type Base struct {
	db   *sql.DB
	name string // for messages: agents/knowledge.db
}

// Project is a row of project_summary.
type Project struct {
	ID           int64
	Name         string
	Description  string
	Status       string
	Created      string
	Observations int
	Concepts     string
}

// Observation is one timestamped note on a project.
type Observation struct {
	ID        int64
	ProjectID int64
	Project   string
	Kind      string
	Body      string
	Created   string
}

// Concept is a named term that may span projects.
type Concept struct {
	ID          int64
	Name        string
	Description string
	Projects    int
}

// Open opens (creating or migrating) the knowledge base at path; name is
// how messages call it (agents/knowledge.db).
func Open(path, name string) (*Base, error) {
	return openKB(path, name, SchemaVersion)
}

// openKB opens path and migrates it to version target (tests use a lower
// target to build an older database).
func openKB(path, name string, target int) (*Base, error) {
	// The file is Harvey's own; refuse anything but a regular file, so a
	// planted symlink or FIFO in agents/ cannot redirect the database.
	// A regular file with one link, its side files too; made 0600.
	if _, err := fsinfo.OwnDatabase(path, name, true); err != nil {
		return nil, err
	}
	// busy_timeout and foreign_keys are per connection: set on each one.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(2000)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", name, fsinfo.ErrText(err))
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	kb := &Base{db: db, name: name}
	if err := kb.prepare(target); err != nil {
		db.Close()
		return nil, err
	}
	return kb, nil
}

// prepare checks the file is a database this Harvey understands, then turns
// on WAL and migrates. Nothing is written before the version check, so a
// newer or foreign file is left exactly as it was.
func (kb *Base) prepare(target int) error {
	var version int
	if err := kb.db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		return kb.explain("open", err)
	}
	if version > SchemaVersion {
		return fmt.Errorf("%s was written by a newer Harvey (schema %d; this one knows %d); left unchanged — upgrade Harvey to use it", kb.name, version, SchemaVersion)
	}
	// The whole-file check (O(size): 0.5 s at 100k observations) runs
	// only before a migration rewrites the file; otherwise /kb status runs
	// it on demand, and damage met by a query is reported as such.
	if version < target {
		if err := kb.Check(); err != nil {
			return err
		}
	}
	var mode string
	if err := kb.db.QueryRow("PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return kb.explain("open", err)
	}
	if version >= target {
		return nil
	}
	tx, err := kb.db.Begin()
	if err != nil {
		return kb.explain("migrate", err)
	}
	defer tx.Rollback()
	for v := version; v < target; v++ {
		if _, err := tx.Exec(kbMigrations[v]); err != nil {
			return kb.explain(fmt.Sprintf("migrate to schema %d", v+1), err)
		}
	}
	if _, err := tx.Exec("PRAGMA user_version = " + strconv.Itoa(target)); err != nil {
		return kb.explain("migrate", err)
	}
	if err := tx.Commit(); err != nil {
		return kb.explain("migrate", err)
	}
	return nil
}

// Close closes the database.
func (kb *Base) Close() error { return kb.db.Close() }

// explain turns a SQLite error into one line that says what to do.
func (kb *Base) explain(op string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY"):
		return fmt.Errorf("%s is locked by another process (another Harvey?); try again", kb.name)
	case strings.Contains(msg, "file is not a database") || strings.Contains(msg, "malformed"):
		return fmt.Errorf("%s is not a usable SQLite database (%s); left unchanged — move it away to start a new one", kb.name, printableLine(msg))
	case strings.Contains(msg, "readonly") || strings.Contains(msg, "read-only") || strings.Contains(msg, "unable to open"):
		return fmt.Errorf("%s cannot be written (%s)", kb.name, printableLine(msg))
	}
	return fmt.Errorf("%s: %s: %s", kb.name, op, printableLine(msg))
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// AddProject creates a project and returns its ID.
func (kb *Base) AddProject(name, desc string) (int64, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return 0, errors.New("a project needs a name")
	}
	if _, err := strconv.Atoi(name); err == nil {
		return 0, fmt.Errorf("a project name cannot be a number (numbers are IDs): %q", name)
	}
	res, err := kb.db.Exec("INSERT INTO projects(name, description, created_at) VALUES (?, ?, ?)", name, strings.TrimSpace(desc), now())
	if isUnique(err) {
		p, _ := kb.Project(name)
		return 0, fmt.Errorf("a project named %q already exists (#%d)", p.Name, p.ID)
	}
	if err != nil {
		return 0, kb.explain("add project", err)
	}
	return res.LastInsertId()
}

// Projects lists every project with its counts, newest first.
func (kb *Base) Projects() ([]Project, error) {
	rows, err := kb.db.Query("SELECT id, name, description, status, created_at, observations, concepts FROM project_summary ORDER BY id")
	if err != nil {
		return nil, kb.explain("list projects", err)
	}
	defer rows.Close()
	var out []Project
	for rows.Next() {
		var p Project
		if err := rows.Scan(&p.ID, &p.Name, &p.Description, &p.Status, &p.Created, &p.Observations, &p.Concepts); err != nil {
			return nil, kb.explain("list projects", err)
		}
		out = append(out, p)
	}
	return out, kb.wrap("list projects", rows.Err())
}

func (kb *Base) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return kb.explain(op, err)
}

// Project finds a project by ID ("3" or "#3") or by name.
func (kb *Base) Project(ref string) (Project, error) {
	ref = strings.TrimSpace(ref)
	q := "SELECT id, name, description, status, created_at, observations, concepts FROM project_summary WHERE "
	var row *sql.Row
	if id, err := strconv.ParseInt(strings.TrimPrefix(ref, "#"), 10, 64); err == nil {
		row = kb.db.QueryRow(q+"id = ?", id)
	} else {
		row = kb.db.QueryRow(q+"name = ? COLLATE NOCASE", ref)
	}
	var p Project
	err := row.Scan(&p.ID, &p.Name, &p.Description, &p.Status, &p.Created, &p.Observations, &p.Concepts)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("no project %q; /kb project list shows them", ref)
	}
	return p, kb.wrap("find project", err)
}

// SetProjectStatus changes a project's status.
func (kb *Base) SetProjectStatus(id int64, status string) error {
	status = strings.ToLower(strings.TrimSpace(status))
	if !slices.Contains(ProjectStatuses, status) {
		return fmt.Errorf("unknown status %q: use %s", status, strings.Join(ProjectStatuses, ", "))
	}
	res, err := kb.db.Exec("UPDATE projects SET status = ? WHERE id = ?", status, id)
	if err != nil {
		return kb.explain("set status", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("no project #%d", id)
	}
	return nil
}

// ActiveProject returns the project /kb observe writes to, if one is set
// and still exists.
func (kb *Base) ActiveProject() (Project, bool, error) {
	var v string
	err := kb.db.QueryRow("SELECT value FROM kb_meta WHERE key = 'active_project'").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, false, nil
	}
	if err != nil {
		return Project{}, false, kb.explain("active project", err)
	}
	p, err := kb.Project(v)
	if err != nil {
		return Project{}, false, nil
	}
	return p, true, nil
}

// UseProject makes a project the active one.
func (kb *Base) UseProject(ref string) (Project, error) {
	p, err := kb.Project(ref)
	if err != nil {
		return p, err
	}
	_, err = kb.db.Exec("INSERT INTO kb_meta(key, value) VALUES ('active_project', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", strconv.FormatInt(p.ID, 10))
	return p, kb.wrap("use project", err)
}

// AddObservation records an observation on a project.
func (kb *Base) AddObservation(projectID int64, kind, body string) (int64, error) {
	kind = strings.ToLower(strings.TrimSpace(kind))
	if !slices.Contains(ObservationKinds, kind) {
		return 0, fmt.Errorf("unknown kind %q: use %s", kind, strings.Join(ObservationKinds, ", "))
	}
	if strings.TrimSpace(body) == "" {
		return 0, errors.New("an observation needs text")
	}
	if _, err := kb.Project(strconv.FormatInt(projectID, 10)); err != nil {
		return 0, err
	}
	res, err := kb.db.Exec("INSERT INTO observations(project_id, kind, body, created_at) VALUES (?, ?, ?, ?)", projectID, kind, strings.TrimSpace(body), now())
	if err != nil {
		return 0, kb.explain("observe", err)
	}
	return res.LastInsertId()
}

// Observations returns a project's newest observations (all when limit <= 0),
// oldest first.
func (kb *Base) Observations(projectID int64, limit int) ([]Observation, error) {
	if limit <= 0 {
		limit = -1
	}
	return kb.observations(`SELECT o.id, o.project_id, p.name, o.kind, o.body, o.created_at FROM observations o
		JOIN projects p ON p.id = o.project_id WHERE o.project_id = ? ORDER BY o.id DESC LIMIT ?`, projectID, limit)
}

func (kb *Base) observations(q string, args ...any) ([]Observation, error) {
	rows, err := kb.db.Query(q, args...)
	if err != nil {
		return nil, kb.explain("read observations", err)
	}
	defer rows.Close()
	var out []Observation
	for rows.Next() {
		var o Observation
		if err := rows.Scan(&o.ID, &o.ProjectID, &o.Project, &o.Kind, &o.Body, &o.Created); err != nil {
			return nil, kb.explain("read observations", err)
		}
		out = append(out, o)
	}
	// Newest were fetched first (for the limit); show them in time order.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, kb.wrap("read observations", rows.Err())
}

// AddConcept creates a concept and returns its ID.
func (kb *Base) AddConcept(name, desc string) (int64, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return 0, errors.New("a concept needs a name")
	}
	res, err := kb.db.Exec("INSERT INTO concepts(name, description, created_at) VALUES (?, ?, ?)", name, strings.TrimSpace(desc), now())
	if isUnique(err) {
		return 0, fmt.Errorf("a concept named %q already exists", name)
	}
	if err != nil {
		return 0, kb.explain("add concept", err)
	}
	return res.LastInsertId()
}

// Concepts lists every concept with the number of projects linked to it.
func (kb *Base) Concepts() ([]Concept, error) {
	rows, err := kb.db.Query(`SELECT c.id, c.name, c.description,
		(SELECT count(*) FROM project_concepts pc WHERE pc.concept_id = c.id) FROM concepts c ORDER BY c.name`)
	if err != nil {
		return nil, kb.explain("list concepts", err)
	}
	defer rows.Close()
	var out []Concept
	for rows.Next() {
		var c Concept
		if err := rows.Scan(&c.ID, &c.Name, &c.Description, &c.Projects); err != nil {
			return nil, kb.explain("list concepts", err)
		}
		out = append(out, c)
	}
	return out, kb.wrap("list concepts", rows.Err())
}

// Concept finds a concept by ID or name.
func (kb *Base) Concept(ref string) (Concept, error) {
	ref = strings.TrimSpace(ref)
	var row *sql.Row
	if id, err := strconv.ParseInt(strings.TrimPrefix(ref, "#"), 10, 64); err == nil {
		row = kb.db.QueryRow("SELECT id, name, description FROM concepts WHERE id = ?", id)
	} else {
		row = kb.db.QueryRow("SELECT id, name, description FROM concepts WHERE name = ? COLLATE NOCASE", ref)
	}
	var c Concept
	err := row.Scan(&c.ID, &c.Name, &c.Description)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("no concept %q; /kb concept list shows them", ref)
	}
	return c, kb.wrap("find concept", err)
}

// LinkProject links a concept to a project (linking twice is not an error).
func (kb *Base) LinkProject(conceptID, projectID int64) error {
	_, err := kb.db.Exec("INSERT OR IGNORE INTO project_concepts(project_id, concept_id) VALUES (?, ?)", projectID, conceptID)
	if err != nil && strings.Contains(err.Error(), "FOREIGN KEY") {
		return fmt.Errorf("no project #%d or concept #%d", projectID, conceptID)
	}
	return kb.wrap("link", err)
}

// LinkObservation links a concept to an observation.
func (kb *Base) LinkObservation(conceptID, obsID int64) error {
	_, err := kb.db.Exec("INSERT OR IGNORE INTO observation_concepts(observation_id, concept_id) VALUES (?, ?)", obsID, conceptID)
	if err != nil && strings.Contains(err.Error(), "FOREIGN KEY") {
		return fmt.Errorf("no observation #%d", obsID)
	}
	return kb.wrap("link", err)
}

// Search finds observations by full-text match (every word, as a prefix),
// newest first, plus projects and concepts whose name or description
// contains the text (there are few of those; they are filtered here).
func (kb *Base) Search(text string, limit int) ([]Observation, []Project, []Concept, error) {
	words := strings.Fields(text)
	if len(words) == 0 {
		return nil, nil, nil, errors.New("search for what? /kb search TEXT")
	}
	var terms []string
	for _, w := range words {
		terms = append(terms, `"`+strings.ReplaceAll(w, `"`, `""`)+`"*`)
	}
	obs, err := kb.observations(`SELECT o.id, o.project_id, p.name, o.kind, o.body, o.created_at FROM observations_fts f
		JOIN observations o ON o.id = f.rowid JOIN projects p ON p.id = o.project_id
		WHERE observations_fts MATCH ? ORDER BY o.id DESC LIMIT ?`, strings.Join(terms, " "), limit)
	if err != nil {
		return nil, nil, nil, err
	}
	// Names and descriptions are matched first; only the projects found
	// are summarised (their observation counts cost a scan each).
	rows, err := kb.db.Query("SELECT id, name, description FROM projects ORDER BY id")
	if err != nil {
		return nil, nil, nil, kb.explain("search projects", err)
	}
	var found []int64
	for rows.Next() {
		var id int64
		var name, desc string
		if err := rows.Scan(&id, &name, &desc); err != nil {
			rows.Close()
			return nil, nil, nil, kb.explain("search projects", err)
		}
		if containsFold(name, text) || containsFold(desc, text) {
			found = append(found, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, nil, kb.explain("search projects", err)
	}
	var projects []Project
	for _, id := range found {
		p, err := kb.Project("#" + strconv.FormatInt(id, 10))
		if err != nil {
			return nil, nil, nil, err
		}
		projects = append(projects, p)
	}
	allConcepts, err := kb.Concepts()
	if err != nil {
		return nil, nil, nil, err
	}
	var concepts []Concept
	for _, c := range allConcepts {
		if containsFold(c.Name, text) || containsFold(c.Description, text) {
			concepts = append(concepts, c)
		}
	}
	return obs, projects, concepts, nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(strings.TrimSpace(sub)))
}

// Counts returns the number of projects, observations and concepts.
func (kb *Base) Counts() (projects, observations, concepts int, err error) {
	err = kb.db.QueryRow(`SELECT (SELECT count(*) FROM projects), (SELECT count(*) FROM observations),
		(SELECT count(*) FROM concepts)`).Scan(&projects, &observations, &concepts)
	return projects, observations, concepts, kb.wrap("count", err)
}

// Summary renders a project for the model: name, status, description,
// concepts and its latest observations. Every row set is read into memory
// and its cursor closed before the next query runs: with one connection, a
// cursor held open across a second query would deadlock (seed 003).
func (kb *Base) Summary(projectID int64, maxObs int) (string, error) {
	p, err := kb.Project(strconv.FormatInt(projectID, 10))
	if err != nil {
		return "", err
	}
	obs, err := kb.Observations(p.ID, maxObs)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Project #%d %s (%s)", p.ID, p.Name, p.Status)
	if p.Description != "" {
		fmt.Fprintf(&sb, ": %s", p.Description)
	}
	sb.WriteString("\n")
	if p.Concepts != "" {
		fmt.Fprintf(&sb, "Concepts: %s\n", p.Concepts)
	}
	if p.Observations > len(obs) {
		fmt.Fprintf(&sb, "Latest %d of %d observations:\n", len(obs), p.Observations)
	} else if len(obs) > 0 {
		sb.WriteString("Observations:\n")
	}
	for _, o := range obs {
		fmt.Fprintf(&sb, "- %s %s: %s\n", o.Created[:min(len(o.Created), 10)], o.Kind, o.Body)
	}
	return sb.String(), nil
}

// Check runs SQLite's quick integrity Check over the whole file.
func (kb *Base) Check() error {
	var check string
	if err := kb.db.QueryRow("PRAGMA quick_check").Scan(&check); err != nil {
		return kb.explain("open", err)
	}
	if check != "ok" {
		return fmt.Errorf("%s is damaged (%s); left unchanged — move it away to start a new one", kb.name, printableLine(check))
	}
	return nil
}

// printableLine is the first line of s, printable.
func printableLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r", ""))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
