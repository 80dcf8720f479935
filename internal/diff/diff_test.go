package diff

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedDiffFinalNewlineAndLargeFiles(t *testing.T) {
	d := Unified("a.txt", "one\ntwo\n", "one\ntwo", true)
	if !strings.Contains(d, "-two\n+two\n\\ No newline at end of file\n") {
		t.Fatalf("final newline removed:\n%s", d)
	}
	d = Unified("a.txt", "one\ntwo", "one\ntwo\n", true)
	if !strings.Contains(d, "-two\n\\ No newline at end of file\n+two\n") {
		t.Fatalf("final newline added:\n%s", d)
	}
	// A one-line change in a 5,000-line file is a normal hunk.
	var big strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	changed := strings.Replace(big.String(), "line 2500\n", "LINE 2500\n", 1)
	d = Unified("big.txt", big.String(), changed, true)
	if !strings.Contains(d, "@@ -2498,7 +2498,7 @@\n line 2497\n") || !strings.Contains(d, "-line 2500\n+LINE 2500\n") {
		t.Fatalf("one change in a big file:\n%s", d)
	}
	// Rewriting every line of it: a summary hunk, not "too large".
	rewritten := strings.ReplaceAll(big.String(), "line", "row")
	d = Unified("big.txt", big.String(), rewritten, true)
	if !strings.Contains(d, "@@ -1,5000 +1,5000 @@ (too large to diff line by line") || !strings.Contains(d, "-line 0\n") || !strings.Contains(d, "+row 4999\n") || len(d) > 2000 {
		t.Fatalf("summary:\n%s", d)
	}
	// New and emptied files.
	if d := Unified("n.txt", "", "x\n", false); !strings.Contains(d, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+x\n") {
		t.Fatalf("new file:\n%s", d)
	}
	if d := Unified("n.txt", "x\n", "", true); !strings.Contains(d, "@@ -1,1 +0,0 @@\n-x\n") {
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
		d := Unified("f", old, new, true)
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

// applyDiff applies a unified diff made by unifiedDiff to old: a test of
// the hunk headers' line numbers and of every line the diff shows.
func applyDiff(t *testing.T, old, d string) string {
	t.Helper()
	a := splitLines(old)
	lines := strings.SplitAfter(d, "\n")[2:]
	var out []string
	next := 0 // index in a of the next line not yet copied
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "@@ ") {
			var as, an, bs, bn int
			if _, err := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@", &as, &an, &bs, &bn); err != nil {
				t.Fatalf("hunk header %q: %v", l, err)
			}
			start := as - 1
			if an == 0 {
				start = as
			}
			out = append(out, a[next:start]...)
			next = start
			continue
		}
		text := l[1:]
		if i+1 < len(lines) && lines[i+1] == "\\ No newline at end of file\n" {
			text = strings.TrimSuffix(text, "\n")
			i++
		}
		switch l[0] {
		case ' ':
			if a[next] != text {
				t.Fatalf("context line %q is %q in the old text", text, a[next])
			}
			out = append(out, text)
			next++
		case '-':
			if a[next] != text {
				t.Fatalf("removed line %q is %q in the old text", text, a[next])
			}
			next++
		case '+':
			out = append(out, text)
		default:
			t.Fatalf("unexpected diff line %q", l)
		}
	}
	return strings.Join(append(out, a[next:]...), "")
}

// Every diff applies: its hunks turn the old text into the new one, for
// changes at the start, the end, inside lines and across a missing final
// newline, in small and large texts (the window is cut by bytes).
func TestUnifiedDiffApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"a", "b", "c", "\n", "a\n", "b\n", "c\n", "x y\n"}
	gen := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString(words[r.IntN(len(words))])
		}
		return sb.String()
	}
	mutate := func(s string) string {
		for range 1 + r.IntN(4) {
			i := r.IntN(len(s) + 1)
			j := min(len(s), i+r.IntN(6))
			s = s[:i] + gen(r.IntN(4)) + s[j:]
		}
		return s
	}
	for it := range 20000 {
		n := 1 + r.IntN(12)
		if it%10 == 0 {
			n = 200 + r.IntN(400)
		}
		old := gen(n)
		new := mutate(old)
		if old == new {
			continue
		}
		d := Unified("f", old, new, true)
		if got := applyDiff(t, old, d); got != new {
			t.Fatalf("old %q\nnew %q\ndiff:\n%s\napplied: %q", old, new, d, got)
		}
	}
}

// A large file with changes spread through it still gets a line diff, and
// one change deep in it is numbered from the file's start.
func TestUnifiedDiffLargeFileShowsTheChange(t *testing.T) {
	var sb strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	old := sb.String()
	one := strings.Replace(old, "line 77777\n", "LINE 77777\n", 1)
	d := Unified("big.txt", old, one, true)
	if !strings.Contains(d, "@@ -77775,7 +77775,7 @@\n line 77774\n") || !strings.Contains(d, "-line 77777\n+LINE 77777\n") {
		t.Fatalf("one change:\n%s", d)
	}
	spread := old
	for i := 0; i < 100_000; i += 1000 {
		spread = strings.Replace(spread, fmt.Sprintf("line %d\n", i), fmt.Sprintf("line %d changed\n", i), 1)
	}
	d = Unified("big.txt", old, spread, true)
	if strings.Contains(d, "too large") || strings.Count(d, "\n@@ ") != 100 {
		t.Fatalf("100 changes in 100,000 lines: %d hunks\n%.500s", strings.Count(d, "\n@@ "), d)
	}
	if got := applyDiff(t, old, d); got != spread {
		t.Fatal("the diff does not apply")
	}
}

// FuzzUnifiedDiff: every diff an approval shows is the change itself —
// applied to the old text it gives the new one, and it shows a change
// exactly when the bytes differ.
func FuzzUnifiedDiff(f *testing.F) {
	f.Add("one\ntwo\nthree\n", "one\n2\nthree\n")
	f.Add("a\nb", "a\nb\n")
	f.Add("", "x\n")
	f.Add("x\r\ny\r\n", "x\ny\r\n")
	f.Add(strings.Repeat("same\n", 20)+"end", strings.Repeat("same\n", 21)+"end")
	f.Fuzz(func(t *testing.T, old, new string) {
		if len(old)+len(new) > 1<<16 {
			return
		}
		d := Unified("f", old, new, true)
		if strings.Contains(d, "(too large to diff line by line") {
			return // a summary hunk (over maxDiffEdits changed lines) shows ends, not every line
		}
		if got := applyDiff(t, old, d); got != new {
			t.Fatalf("old %q\nnew %q\ndiff:\n%s\napplied: %q", old, new, d, got)
		}
		body := strings.SplitN(d, "\n", 3)[2] // after the ---/+++ header
		changed := strings.HasPrefix(body, "@@") && (strings.Contains(body, "\n-") || strings.Contains(body, "\n+"))
		if changed != (old != new) {
			t.Fatalf("old %q new %q: diff shows a change %v:\n%s", old, new, changed, d)
		}
	})
}
