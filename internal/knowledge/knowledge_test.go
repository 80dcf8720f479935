package knowledge

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openTestKB opens a new knowledge base in a directory of its own, as the
// agent keeps it (agents/knowledge.db), and returns it with that path.
func openTestKB(t *testing.T) (*Base, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "knowledge.db")
	kb, err := openKB(path, "agents/knowledge.db", SchemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	return kb, path
}

// TestMain also plays a knowledge base killed mid-transaction when a test
// starts the test binary again as that helper.
func TestMain(m *testing.M) {
	if os.Getenv("HARVEY_TEST_HELPER") == "kb-crash" {
		os.Exit(kbCrashHelper(os.Getenv("HARVEY_TEST_HELPER_ARG")))
	}
	os.Exit(m.Run())
}

// helperCmd starts the test binary as the helper name with arg.
func helperCmd(name, arg string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HARVEY_TEST_HELPER="+name, "HARVEY_TEST_HELPER_ARG="+arg)
	return cmd
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestKnowledgeBaseCRUD(t *testing.T) {
	kb, _ := openTestKB(t)
	id := must[int64](t)
	p1 := id(kb.AddProject("harvey", "terminal agent"))
	p2 := id(kb.AddProject("pi-cluster", ""))
	o1 := id(kb.AddObservation(p1, "decision", "Use os.Root for every file operation"))
	id(kb.AddObservation(p1, "finding", "llama3.2 drops enum values from schemas"))
	id(kb.AddObservation(p2, "note", "Four Raspberry Pi 5 boards"))
	c1 := id(kb.AddConcept("TOCTOU", "symlink swap races"))
	if err := kb.LinkProject(c1, p1); err != nil {
		t.Fatal(err)
	}
	if err := kb.LinkProject(c1, p1); err != nil { // twice is fine
		t.Fatal(err)
	}
	if err := kb.LinkProject(c1, p2); err != nil {
		t.Fatal(err)
	}
	if err := kb.LinkObservation(c1, o1); err != nil {
		t.Fatal(err)
	}
	ps := must[[]Project](t)(kb.Projects())
	if len(ps) != 2 || ps[0].Name != "harvey" || ps[0].Observations != 2 || ps[0].Concepts != "TOCTOU" || ps[1].Observations != 1 {
		t.Fatalf("projects = %+v", ps)
	}
	cs := must[[]Concept](t)(kb.Concepts())
	if len(cs) != 1 || cs[0].Projects != 2 {
		t.Fatalf("concepts = %+v", cs)
	}
	if err := kb.SetProjectStatus(p2, "Concluded"); err != nil {
		t.Fatal(err)
	}
	if p := must[Project](t)(kb.Project("PI-CLUSTER")); p.Status != "concluded" || p.ID != p2 {
		t.Fatalf("project = %+v", p)
	}
	if p := must[Project](t)(kb.Project("#1")); p.Name != "harvey" {
		t.Fatalf("project #1 = %+v", p)
	}
	// The active project survives a reopen.
	must[Project](t)(kb.UseProject("pi-cluster"))
	s := must[string](t)(kb.Summary(p1, 1))
	if !strings.Contains(s, "Project #1 harvey (active): terminal agent") || !strings.Contains(s, "Concepts: TOCTOU") ||
		!strings.Contains(s, "Latest 1 of 2 observations") || !strings.Contains(s, "finding: llama3.2 drops enum") || strings.Contains(s, "os.Root") {
		t.Fatalf("summary = %s", s)
	}
	p, c, o, err := kb.Counts()
	if err != nil || p != 2 || c != 3 || o != 1 {
		t.Fatalf("counts = %d %d %d %v", p, c, o, err)
	}
}

func TestKnowledgeBaseSearch(t *testing.T) {
	kb, _ := openTestKB(t)
	p := must[int64](t)(kb.AddProject("harvey", "terminal coding agent"))
	must[int64](t)(kb.AddObservation(p, "finding", "Ollama reloads the model when num_ctx changes"))
	must[int64](t)(kb.AddObservation(p, "note", "mistral prints [TOOL_CALLS] as text"))
	must[int64](t)(kb.AddConcept("context window", "num_ctx and the KV cache"))
	obs, ps, cs, err := kb.Search("reload num_ctx", 10)
	if err != nil || len(obs) != 1 || !strings.Contains(obs[0].Body, "reloads") || len(cs) != 0 || len(ps) != 0 {
		t.Fatalf("search = %+v %+v %+v %v", obs, ps, cs, err)
	}
	obs, _, cs, _ = kb.Search("num_ctx", 10)
	if len(obs) != 1 || len(cs) != 1 {
		t.Fatalf("num_ctx: %+v %+v", obs, cs)
	}
	_, ps, _, _ = kb.Search("CODING", 10)
	if len(ps) != 1 {
		t.Fatalf("project search: %+v", ps)
	}
	// FTS syntax in the text is searched for, not interpreted.
	for _, q := range []string{`"`, `*`, `NEAR(a b)`, `a OR`, `[TOOL_CALLS]`, `-x`, `%`, `_`, `\`} {
		if _, _, _, err := kb.Search(q, 10); err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
	}
	obs, _, _, _ = kb.Search("[TOOL_CALLS]", 10)
	if len(obs) != 1 {
		t.Fatalf("bracket search: %+v", obs)
	}
	if _, _, cs, _ := kb.Search("%", 10); len(cs) != 0 {
		t.Fatalf("%% matched everything: %+v", cs)
	}
}

// Each bad input gets one line, and nothing stored changes.
func TestKnowledgeBaseBadInput(t *testing.T) {
	kb, _ := openTestKB(t)
	p := must[int64](t)(kb.AddProject("harvey", ""))
	must[int64](t)(kb.AddConcept("rag", ""))
	before := dumpKB(t, kb)
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(kb.AddProject("Harvey", "dup")), `a project named "harvey" already exists (#1)`},
		{second(kb.AddProject("  ", "")), "needs a name"},
		{second(kb.AddProject("42", "")), "cannot be a number"},
		{second(kb.AddConcept("RAG", "")), `a concept named "RAG" already exists`},
		{second(kb.AddObservation(p, "idea", "x")), `unknown kind "idea"`},
		{second(kb.AddObservation(p, "note", " \n ")), "needs text"},
		{second(kb.AddObservation(99, "note", "x")), `no project "99"`},
		{kb.SetProjectStatus(p, "done"), `unknown status "done"`},
		{kb.SetProjectStatus(99, "paused"), "no project #99"},
		{second(kb.Project("nope")), `no project "nope"`},
		{second(kb.Concept("nope")), `no concept "nope"`},
		{kb.LinkProject(1, 99), "no project #99 or concept #1"},
		{kb.LinkObservation(1, 99), "no observation #99"},
		{second(kb.UseProject("7")), `no project "7"`},
		{thirdOf(kb.Search("  ", 5)), "search for what?"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || strings.Contains(c.err.Error(), "\n") {
			t.Errorf("err = %v, want one line with %q", c.err, c.want)
		}
	}
	if after := dumpKB(t, kb); after != before {
		t.Fatalf("stored data changed:\n%s\n---\n%s", before, after)
	}
}

func second[T any](_ T, err error) error { return err }

func thirdOf[A, B, C any](_ A, _ B, _ C, err error) error { return err }

// dumpKB renders every row, to prove a failed command changed nothing.
func dumpKB(t *testing.T, kb *Base) string {
	t.Helper()
	var sb strings.Builder
	for _, q := range []string{"SELECT id, name, description, status FROM projects", "SELECT id, project_id, kind, body FROM observations",
		"SELECT id, name FROM concepts", "SELECT * FROM project_concepts", "SELECT * FROM observation_concepts", "SELECT * FROM kb_meta"} {
		rows, err := kb.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			fmt.Fprintf(&sb, "%q\n", fmt.Sprint(vals...))
		}
		rows.Close()
	}
	return sb.String()
}

// A database from the previous schema version is migrated in place and
// keeps every row; search finds observations written before FTS existed.
func TestKnowledgeBaseMigrationFromPreviousVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "knowledge.db")
	old, err := openKB(path, "knowledge.db", SchemaVersion-1)
	if err != nil {
		t.Fatal(err)
	}
	var v int
	old.db.QueryRow("PRAGMA user_version").Scan(&v)
	if v != SchemaVersion-1 {
		t.Fatalf("old version = %d", v)
	}
	// Rows written the way the previous release wrote them.
	for _, q := range []string{
		"INSERT INTO projects(name, description, created_at) VALUES ('legacy', 'from v1', '2026-01-02T03:04:05Z')",
		"INSERT INTO observations(project_id, kind, body, created_at) VALUES (1, 'decision', 'keep the wire types from anyllm', '2026-01-02T03:04:05Z')",
		"INSERT INTO concepts(name, created_at) VALUES ('wire', '2026-01-02T03:04:05Z')",
		"INSERT INTO project_concepts VALUES (1, 1)",
	} {
		if _, err := old.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	kb, err := openKB(path, "knowledge.db", SchemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	kb.db.QueryRow("PRAGMA user_version").Scan(&v)
	if v != SchemaVersion {
		t.Fatalf("version after migration = %d", v)
	}
	ps, _ := kb.Projects()
	if len(ps) != 1 || ps[0].Name != "legacy" || ps[0].Concepts != "wire" || ps[0].Observations != 1 {
		t.Fatalf("projects after migration = %+v", ps)
	}
	obs, _, _, err := kb.Search("wire types", 5)
	if err != nil || len(obs) != 1 {
		t.Fatalf("search after migration = %+v %v", obs, err)
	}
	if _, err := kb.AddObservation(1, "note", "written after the upgrade"); err != nil {
		t.Fatal(err)
	}
}

// Files Harvey must not touch: a newer schema, a corrupt file, a symlink.
// Each is refused in one line and left byte for byte as it was.
func TestKnowledgeBaseRefusesFilesItCannotUse(t *testing.T) {
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.db")
	db, _ := sql.Open("sqlite", newer)
	db.Exec("CREATE TABLE future(x); PRAGMA user_version = 99")
	db.Close()
	corrupt := filepath.Join(dir, "corrupt.db")
	os.WriteFile(corrupt, bytes.Repeat([]byte("not a database at all "), 400), 0o644)
	target := filepath.Join(dir, "elsewhere.db")
	os.WriteFile(target, nil, 0o644)
	link := filepath.Join(dir, "link.db")
	os.Symlink(target, link)

	for _, c := range []struct{ path, want string }{
		{newer, "written by a newer Harvey (schema 99; this one knows 2); left unchanged"},
		{corrupt, "is not a usable SQLite database"},
		{link, "is not a regular file"},
	} {
		before, _ := os.ReadFile(c.path)
		kb, err := openKB(c.path, filepath.Base(c.path), SchemaVersion)
		if err == nil {
			kb.Close()
			t.Fatalf("%s opened", c.path)
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: err = %v", c.path, err)
		}
		after, _ := os.ReadFile(c.path)
		if !bytes.Equal(before, after) {
			t.Fatalf("%s was changed", c.path)
		}
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Stat(c.path + suffix); err == nil && c.path != newer {
				t.Fatalf("%s%s created", c.path, suffix)
			}
		}
	}
	if st, _ := os.Stat(target); st.Size() != 0 {
		t.Fatal("symlink target written")
	}
}

// Another process holding the write lock gets a one-line "locked" message
// after the busy timeout, not a hang and not a lost row.
func TestKnowledgeBaseLocked(t *testing.T) {
	t.Parallel()
	kb, path := openTestKB(t)
	must[int64](t)(kb.AddProject("first", ""))
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	conn, _ := other.Conn(t.Context())
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err = kb.AddProject("second", "")
	if err == nil || !strings.Contains(err.Error(), "is locked by another process") {
		t.Fatalf("err = %v", err)
	}
	conn.ExecContext(t.Context(), "ROLLBACK")
	if _, err := kb.AddProject("second", ""); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	if ps, _ := kb.Projects(); len(ps) != 2 {
		t.Fatalf("projects = %+v", ps)
	}
}

// A Harvey killed in the middle of a knowledge-base transaction leaves a
// database that opens cleanly with every committed row and none of the
// uncommitted ones.
func TestKnowledgeBaseCrashMidTransaction(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "knowledge.db")
	cmd := helperCmd("kb-crash", path)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	ready := false
	for sc.Scan() {
		if sc.Text() == "in-transaction" {
			ready = true
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !ready {
		t.Fatal("helper never reached the transaction")
	}
	kb, err := openKB(path, "knowledge.db", SchemaVersion)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer kb.Close()
	ps, err := kb.Projects()
	if err != nil || len(ps) != 1 || ps[0].Name != "committed" || ps[0].Observations != 1 {
		t.Fatalf("after crash: %+v %v", ps, err)
	}
	var check string
	kb.db.QueryRow("PRAGMA integrity_check").Scan(&check)
	if check != "ok" {
		t.Fatalf("integrity_check = %s", check)
	}
	if obs, _, _, _ := kb.Search("uncommitted", 5); len(obs) != 0 {
		t.Fatalf("uncommitted rows visible: %+v", obs)
	}
}

func kbCrashHelper(path string) int {
	kb, err := openKB(path, "knowledge.db", SchemaVersion)
	if err != nil {
		os.Exit(3)
	}
	id, _ := kb.AddProject("committed", "")
	kb.AddObservation(id, "note", "committed row")
	tx, err := kb.db.Begin()
	if err != nil {
		os.Exit(4)
	}
	for i := 0; i < 2000; i++ {
		tx.Exec("INSERT INTO observations(project_id, kind, body, created_at) VALUES (?, 'note', ?, '')", id, "uncommitted "+strings.Repeat("x", 500))
	}
	tx.Exec("INSERT INTO projects(name, created_at) VALUES ('uncommitted', '')")
	os.Stdout.WriteString("in-transaction\n")
	time.Sleep(time.Minute) // until the test kills it
	return 5
}
