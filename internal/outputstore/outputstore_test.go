package outputstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fill writes n numbered lines to e, in pieces that split lines.
func fill(e *Entry, n int) {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d of the test run\n", i)
	}
	s := b.String()
	for len(s) > 0 {
		k := min(len(s), 777)
		e.Write([]byte(s[:k]))
		s = s[k:]
	}
}

// A 200 KB output: a pattern finds a line from its middle with its line
// number; offset/limit page it; no id reads the last command's.
func TestReadFindsTheMiddle(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := New()
	defer s.Close()
	e := s.Command("go test ./...")
	fill(e, 8000)
	ref := e.Close()
	if ref.Lines != 8000 || ref.Bytes < 200<<10 || !strings.Contains(ref.Note(), `read_output {"id": "1"`) {
		t.Fatalf("%+v %s", ref, ref.Note())
	}
	got, err := s.Read(Query{Pattern: `line 40\d\d of`}, 64<<10)
	if err != nil || !strings.Contains(got, "4000: line 4000 of the test run\n") || strings.Contains(got, "3999:") || !strings.HasPrefix(got, "output 1: go test ./... (8,000 lines") && !strings.HasPrefix(got, "output 1: go test ./... (8000 lines") {
		t.Fatalf("%v\n%.300s", err, got)
	}
	got, _ = s.Read(Query{ID: "1", Offset: 7999, Limit: 5}, 64<<10)
	if !strings.Contains(got, "7999: line 7999") || !strings.Contains(got, "8000: line 8000") || strings.Contains(got, "reads on") {
		t.Errorf("the last lines: %s", got)
	}
	got, _ = s.Read(Query{Offset: 10, Limit: 3}, 64<<10)
	if !strings.Contains(got, "12: line 12") || strings.Contains(got, "13:") || !strings.Contains(got, "offset 13 reads on") {
		t.Errorf("a page: %s", got)
	}
	got, _ = s.Read(Query{}, 4096)
	if len(got) > 4096 || !strings.Contains(got, "reads on") {
		t.Errorf("within the cap: %d bytes\n%s", len(got), got)
	}
	if got, _ := s.Read(Query{Pattern: "line 5("}, 4096); !strings.Contains(got, "no line from 1 on matches") {
		t.Errorf("a literal pattern: %s", got)
	}
}

// What is kept is redacted, line by line, a key block across writes too;
// the file is the user's alone, and Close removes it.
func TestKeptIsRedactedPrivateAndRemoved(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := New()
	e := s.Command("cat secrets")
	token := "ghp_" + strings.Repeat("Ab1x", 9)
	e.Write([]byte("token=" + token + "\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"))
	e.Write([]byte("BG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\nafter"))
	e.Close()
	data, err := os.ReadFile(e.path)
	if err != nil || strings.Contains(string(data), token) || strings.Contains(string(data), "b3BlbnNzaC1") || !strings.Contains(string(data), "after\n") {
		t.Fatalf("%v\n%s", err, data)
	}
	for _, p := range []string{e.path, filepath.Dir(e.path)} {
		fi, _ := os.Stat(p)
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v", p, fi.Mode())
		}
	}
	if !strings.HasPrefix(filepath.Base(filepath.Dir(e.path)), fmt.Sprintf("harvey-out-%d-", os.Getpid())) {
		t.Errorf("not named for the guardian's sweep: %s", e.path)
	}
	s.Close()
	if _, err := os.Stat(filepath.Dir(e.path)); !os.IsNotExist(err) {
		t.Errorf("left after Close: %v", err)
	}
	if _, err := s.Read(Query{}, 4096); !errors.Is(err, ErrNone) {
		t.Errorf("read after Close: %v", err)
	}
}

// The session keeps at most Budget: the oldest outputs go, and reading one
// says why; a job's output is named by its job; an unknown id names
// those kept.
func TestBudgetDropsTheOldest(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := New()
	s.budget, s.perOutput = 4<<20, 1536<<10
	defer s.Close()
	big := []byte(strings.Repeat(strings.Repeat("x", 1023)+"\n", 1<<10)) // 1 MB
	for range 5 {
		e := s.Command("big")
		e.Write(big)
		e.Close()
	}
	if _, err := s.Read(Query{ID: "1"}, 4096); err == nil || !strings.Contains(err.Error(), "was dropped") {
		t.Errorf("the oldest: %v", err)
	}
	if _, err := s.Read(Query{ID: "5", Limit: 1}, 4096); err != nil {
		t.Errorf("the newest: %v", err)
	}
	j := s.Job(3, "npm run dev")
	j.Write([]byte("listening on 5173\n"))
	if got, err := s.Read(Query{ID: "job 3"}, 4096); err != nil || !strings.Contains(got, "still running") || !strings.Contains(got, "1: listening on 5173") {
		t.Errorf("a running job's: %v %s", err, got)
	}
	if got, _ := s.Read(Query{}, 4096); !strings.HasPrefix(got, "output 5:") {
		t.Errorf("no id is the last command's, not the job's: %.40s", got)
	}
	if _, err := s.Read(Query{ID: "99"}, 4096); err == nil || !strings.Contains(err.Error(), "job-3") {
		t.Errorf("unknown: %v", err)
	}
}

// One output keeps at most PerOutput; a line without an end is kept in
// pieces; a nil store keeps nothing and fails no command.
func TestBounds(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := New()
	s.perOutput = 2 << 20
	defer s.Close()
	e := s.Command("yes")
	line := []byte(strings.Repeat("y", 1<<20))
	for range 3 {
		e.Write(line)
	}
	ref := e.Close()
	if !ref.Cut || !strings.HasPrefix(ref.Note(), "[the output's start (") {
		t.Errorf("a cut output's note claims the whole: %s", ref.Note())
	}
	if ref.Bytes > s.perOutput+100 {
		t.Errorf("kept %d", ref.Bytes)
	}
	if got, _ := s.Read(Query{Pattern: "not kept"}, 4096); !strings.Contains(got, "is not kept") {
		t.Errorf("the cut is not said: %.200s", got)
	}
	var none *Store
	if n, err := none.Command("x").Write([]byte("a")); n != 1 || err != nil {
		t.Error("a nil entry")
	}
	if none.Command("x").Close() != nil {
		t.Error("a nil ref")
	}
	none.Close()
}

// A job's output is written while the model reads it and other commands
// are kept (run under -race in CI).
func TestConcurrentWritesAndReads(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := New()
	s.budget = 64 << 10
	defer s.Close()
	job := s.Job(1, "dev server")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			fmt.Fprintf(job, "request %d\n", i)
		}
	}()
	for i := range 50 {
		e := s.Command(fmt.Sprintf("cmd %d", i))
		fill(e, 100)
		e.Close()
		s.Read(Query{ID: "job-1", Pattern: "request 1"}, 4096)
		s.Read(Query{}, 4096)
	}
	<-done
	job.Close()
	if got, err := s.Read(Query{ID: "job-1", Offset: 2000}, 4096); err != nil || !strings.Contains(got, "2000: request 1999") {
		t.Errorf("the running job's output, older than what was dropped: %v %s", err, got)
	}
	if _, err := s.Read(Query{ID: "2"}, 4096); err == nil || !strings.Contains(err.Error(), "was dropped") {
		t.Errorf("past the budget, the oldest command's goes: %v", err)
	}
}
