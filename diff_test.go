package harvey

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedDiffFinalNewlineAndLargeFiles(t *testing.T) {
	d := unifiedDiff("a.txt", "one\ntwo\n", "one\ntwo", true)
	if !strings.Contains(d, "-two\n+two\n\\ No newline at end of file\n") {
		t.Fatalf("final newline removed:\n%s", d)
	}
	d = unifiedDiff("a.txt", "one\ntwo", "one\ntwo\n", true)
	if !strings.Contains(d, "-two\n\\ No newline at end of file\n+two\n") {
		t.Fatalf("final newline added:\n%s", d)
	}
	// A one-line change in a 5,000-line file is a normal hunk.
	var big strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	changed := strings.Replace(big.String(), "line 2500\n", "LINE 2500\n", 1)
	d = unifiedDiff("big.txt", big.String(), changed, true)
	if !strings.Contains(d, "@@ -2498,7 +2498,7 @@\n line 2497\n") || !strings.Contains(d, "-line 2500\n+LINE 2500\n") {
		t.Fatalf("one change in a big file:\n%s", d)
	}
	// Rewriting every line of it: a summary hunk, not "too large".
	rewritten := strings.ReplaceAll(big.String(), "line", "row")
	d = unifiedDiff("big.txt", big.String(), rewritten, true)
	if !strings.Contains(d, "@@ -1,5000 +1,5000 @@ (too large to diff line by line") || !strings.Contains(d, "-line 0\n") || !strings.Contains(d, "+row 4999\n") || len(d) > 2000 {
		t.Fatalf("summary:\n%s", d)
	}
	// New and emptied files.
	if d := unifiedDiff("n.txt", "", "x\n", false); !strings.Contains(d, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+x\n") {
		t.Fatalf("new file:\n%s", d)
	}
	if d := unifiedDiff("n.txt", "x\n", "", true); !strings.Contains(d, "@@ -1,1 +0,0 @@\n-x\n") {
		t.Fatalf("emptied file:\n%s", d)
	}
}

// Whenever the bytes differ the diff shows a change, and applying its +
// and context lines gives back the new text.
func TestUnifiedDiffNeverEmpty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "b", "\n", "a\n", "b\n", "", "\r\n"}
	gen := func() string {
		var sb strings.Builder
		for range r.IntN(8) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		return sb.String()
	}
	for range 5000 {
		old, new := gen(), gen()
		d := unifiedDiff("f", old, new, true)
		hasChange := false
		for _, l := range strings.Split(d, "\n")[2:] {
			if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
				hasChange = true
			}
		}
		if (old != new) != hasChange {
			t.Fatalf("old %q new %q: diff\n%s", old, new, d)
		}
	}
}
