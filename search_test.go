package harvey

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/walk"
)

// The parallel search gives the same output as a sequential one, every
// time: walk order, and the first 200 matches when capped.
func TestSearchDeterministicAndCapped(t *testing.T) {
	env := newTestEnv(t, nil, "")
	for d := 0; d < 20; d++ {
		for f := 0; f < 15; f++ {
			e2e.WriteFile(t, env.dir, fmt.Sprintf("d%02d/f%02d.go", d, f), "package x\n// needle one\n// needle two\n")
		}
	}
	first, n, err := searchWorkspace(context.Background(), env.ws, "needle", ".", 0)
	if err != nil || n != walk.MaxMatches || !strings.Contains(first, "[results capped: 200 matches shown, and there are more") {
		t.Fatalf("n = %d, err = %v", n, err)
	}
	lines := strings.Split(first, "\n")
	if lines[0] != "d00/f00.go:2: // needle one" || lines[199] != "d06/f09.go:3: // needle two" {
		t.Fatalf("order: first %q, 200th %q", lines[0], lines[199])
	}
	for i := 0; i < 20; i++ {
		again, _, _ := searchWorkspace(context.Background(), env.ws, "needle", ".", 0)
		if again != first {
			t.Fatal("results differ between runs")
		}
	}
	// A search from a subdirectory obeys the .gitignore above it.
	e2e.WriteFile(t, env.dir, ".gitignore", "f01.go\n")
	out, _, _ := searchWorkspace(context.Background(), env.ws, "needle", "d03", 0)
	if strings.Contains(out, "f01.go") || !strings.Contains(out, "d03/f02.go:2:") {
		t.Fatalf("subdirectory search: %s", out)
	}
	// A single file.
	out, n, _ = searchWorkspace(context.Background(), env.ws, "two", "d03/f02.go", 0)
	if n != 1 || out != "d03/f02.go:3: // needle two\n" {
		t.Fatalf("single file: %q", out)
	}
}

// Search skips files it must not read even when they match.
func TestSearchSkipsHardLinksAndFIFOs(t *testing.T) {
	env := newTestEnv(t, nil, "")
	outside := t.TempDir()
	e2e.WriteFile(t, outside, "s.txt", "needle "+secret+"\n")
	os.Link(filepath.Join(outside, "s.txt"), filepath.Join(env.dir, "hard.txt"))
	e2e.WriteFile(t, env.dir, "ok.txt", "needle ok\n")
	if out, _, _ := searchWorkspace(context.Background(), env.ws, "needle", ".", 0); strings.Contains(out, secret) || !strings.Contains(out, "ok.txt") {
		t.Fatalf("search = %q", out)
	}
}

// A pattern whose matching cost would explode is refused with what to do;
// a slow search stops when cancelled (Ctrl-C) and when its time is up,
// keeping what it found.
func TestSearchStopsOnTime(t *testing.T) {
	env := newTestEnv(t, nil, "")
	if _, _, err := searchWorkspace(t.Context(), env.ws, `[a-z]{0,1000}c`, ".", 0); err == nil || !strings.Contains(err.Error(), "too costly") {
		t.Fatalf("costly pattern: %v", err)
	}
	e2e.WriteFile(t, env.dir, "a.txt", "match c here\n")
	for _, name := range []string{"b.txt", "c.txt", "d.txt"} { // 6.6 MB each (under the size limit): over a second in all on a fast machine
		e2e.WriteFile(t, env.dir, name, strings.Repeat("aaaaaaaaab\n", 600_000))
	}
	slow := `[a-z]{0,300}c`
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, _, err := searchWorkspace(ctx, env.ws, slow, ".", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled search: %v", err)
	}
	defer func(d time.Duration) { walk.Timeout = d }(walk.Timeout)
	walk.Timeout = 100 * time.Millisecond
	out, n, err := searchWorkspace(t.Context(), env.ws, slow, ".", 0)
	if err != nil || n != 1 || !strings.Contains(out, "a.txt:1: match c here") || !strings.Contains(out, "[search stopped after 100ms") {
		t.Fatalf("timed-out search: %d %q %v", n, out, err)
	}
}

// A cap reached inside one file is said, to the model and the user: how
// many are shown, that there are more, and how to narrow (issue 40). A
// file with exactly the cap's number of matches is not called capped.
func TestSearchCappedInOneFile(t *testing.T) {
	env := newTestEnv(t, nil, "")
	e2e.WriteFile(t, env.dir, "big.txt", strings.Repeat("needle\n", 500))
	e2e.WriteFile(t, env.dir, "exact/e.txt", strings.Repeat("pin\n", walk.MaxMatches))
	h, err := env.a.gate.searchChecked(context.Background(), "needle", ".")
	if err != nil || h.Shown != walk.MaxMatches || !h.More || !strings.Contains(h.Text, "200 matches shown, and there are more; narrow the pattern, or give a path") {
		t.Fatalf("capped in one file: %v %d %v\n%s", err, h.Shown, h.More, h.Text[max(0, len(h.Text)-200):])
	}
	if s := h.Summary(); !strings.Contains(s, "more exist") {
		t.Errorf("the user's line: %q", s)
	}
	h, _ = env.a.gate.searchChecked(context.Background(), "pin", "exact")
	if h.Shown != walk.MaxMatches || h.More || strings.Contains(h.Text, "capped") {
		t.Errorf("exactly the cap: %d %v", h.Shown, h.More)
	}
}
