// Package diff renders the unified diffs Harvey shows: in approvals, in
// edit results and for /undo.
//
// Contract: Unified(name, old, new, existed) is never empty when old and new
// differ — a missing final newline is shown as git shows it, and a change
// too large to diff line by line (over maxDiffEdits changed lines, Myers'
// algorithm on the changed region only) is a summary hunk with the
// region's size and its first and last lines. Applying the + and context
// lines of a line-by-line diff to old gives new. It reads and writes no
// file; the caller passes text that is already redacted where it must be.
package diff

import (
	"fmt"
	"slices"
	"strings"
)

// maxDiffEdits bounds the line diff (Myers' algorithm, as git uses): past
// that many added plus removed lines, a summary hunk shows the changed
// region's size with its first and last lines.
const maxDiffEdits = 2000

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// Unified renders a unified diff (3 lines of context) of a file change,
// for approvals, edit results and /undo. It is never empty when the bytes
// differ: a missing final newline is shown as git shows it ("\ No newline
// at end of file"), and a change too large to diff line by line gets a
// summary hunk. Its cost follows the change, not the file: the common head
// and tail are skipped as bytes, and only the changed lines and their
// context are split and compared.
func Unified(name, old, new string, existed bool) string {
	if !existed {
		old = ""
	}
	var sb strings.Builder
	from := "a/" + name
	if !existed {
		from = "/dev/null"
	}
	fmt.Fprintf(&sb, "--- %s\n+++ b/%s\n", from, name)
	aw, bw, base := changedWindow(old, new)
	a, b := splitLines(aw), splitLines(bw)
	pre, suf := commonEnds(a, b)
	ops, ok := myersDiff(a[pre:len(a)-suf], b[pre:len(b)-suf], maxDiffEdits)
	if !ok {
		summaryHunk(&sb, a, b, pre, suf, base)
		return sb.String()
	}
	all := make([]diffOp, 0, pre+len(ops)+suf)
	for k := range pre {
		all = append(all, diffOp{' ', a[k], k, k})
	}
	for _, op := range ops {
		all = append(all, diffOp{op.kind, op.text, op.ai + pre, op.bi + pre})
	}
	for k := range suf {
		all = append(all, diffOp{' ', a[len(a)-suf+k], len(a) - suf + k, len(b) - suf + k})
	}
	for i := range all {
		all[i].ai += base
		all[i].bi += base
	}
	writeHunks(&sb, all)
	return sb.String()
}

// changedWindow trims what old and new share at their start and end down to
// diffContext whole lines on each side, comparing bytes: the windows to
// diff, and the number of lines before them (the same in both).
func changedWindow(old, new string) (string, string, int) {
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	head := strings.LastIndexByte(old[:p], '\n') + 1 // start of the first changed line
	q := 0
	for q < len(old)-head && q < len(new)-head && old[len(old)-1-q] == new[len(new)-1-q] {
		q++
	}
	// The shared tail starts at a line start in both texts: after a
	// newline inside it, or where both texts already start a line.
	tail := len(old) - q
	if !(tail == head || old[tail-1] == '\n') || !(len(new)-q == head || new[len(new)-q-1] == '\n') {
		if i := strings.IndexByte(old[tail:], '\n'); i >= 0 {
			tail += i + 1
		} else {
			tail = len(old)
		}
	}
	q = len(old) - tail
	start := head
	for range diffContext {
		if start == 0 {
			break
		}
		start = strings.LastIndexByte(old[:start-1], '\n') + 1
	}
	extra := 0
	for range diffContext {
		if tail+extra == len(old) {
			break
		}
		i := strings.IndexByte(old[tail+extra:], '\n')
		if i < 0 {
			extra = len(old) - tail
			break
		}
		extra += i + 1
	}
	return old[start : tail+extra], new[start : len(new)-q+extra], strings.Count(old[:start], "\n")
}

// writeHunks groups ops into hunks with 3 lines of context.
func writeHunks(sb *strings.Builder, ops []diffOp) {
	const ctx = 3
	i := 0
	for i < len(ops) {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		aStart, bStart, aN, bN := -1, -1, 0, 0
		for _, op := range ops[start:end] {
			if aStart < 0 && op.kind != '+' {
				aStart = op.ai + 1
			}
			if bStart < 0 && op.kind != '-' {
				bStart = op.bi + 1
			}
			if op.kind != '+' {
				aN++
			}
			if op.kind != '-' {
				bN++
			}
		}
		if aStart < 0 {
			aStart = ops[start].ai // an insertion: the line before it
		}
		if bStart < 0 {
			bStart = ops[start].bi
		}
		fmt.Fprintf(sb, "@@ -%d,%d +%d,%d @@\n", aStart, aN, bStart, bN)
		for _, op := range ops[start:end] {
			writeLine(sb, op.kind, op.text)
		}
		i = end
	}
}

// writeLine writes one diff line; a line without its newline (the last of
// a file that does not end in one) is followed by git's marker.
func writeLine(sb *strings.Builder, kind byte, line string) {
	sb.WriteByte(kind)
	if text, ok := strings.CutSuffix(line, "\n"); ok {
		sb.WriteString(text)
		sb.WriteByte('\n')
		return
	}
	sb.WriteString(line)
	sb.WriteString("\n\\ No newline at end of file\n")
}

// summaryHunk shows a change too large to diff by lines: one hunk over the
// changed region, with its first and last lines on each side.
func summaryHunk(sb *strings.Builder, a, b []string, pre, suf, base int) {
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	fmt.Fprintf(sb, "@@ -%d,%d +%d,%d @@ (too large to diff line by line: %d lines replaced by %d)\n", base+pre+1, len(am), base+pre+1, len(bm), len(am), len(bm))
	side := func(kind byte, lines []string) {
		const head, tail = 10, 3
		if len(lines) <= head+tail {
			for _, l := range lines {
				writeLine(sb, kind, l)
			}
			return
		}
		for _, l := range lines[:head] {
			writeLine(sb, kind, l)
		}
		fmt.Fprintf(sb, "%c... (%d more lines)\n", kind, len(lines)-head-tail)
		for _, l := range lines[len(lines)-tail:] {
			writeLine(sb, kind, l)
		}
	}
	side('-', am)
	side('+', bm)
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	text   string
	ai, bi int
}

// splitLines splits s into lines that keep their "\n", so a missing final
// newline is a difference like any other.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// commonEnds counts the lines a and b share at their start and end.
func commonEnds(a, b []string) (pre, suf int) {
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return pre, suf
}

// myersDiff is the shortest edit script from a to b (Myers' O(ND)
// algorithm), or false when it needs more than maxD added and removed lines.
func myersDiff(a, b []string, maxD int) ([]diffOp, bool) {
	n, m := len(a), len(b)
	limit := min(n+m, maxD)
	off := limit + 1
	v := make([]int, 2*limit+3)
	// trace[d] is v before step d, for k in [-d-1, d+1].
	var trace [][]int
	for d := 0; d <= limit; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // a line of b inserted
			} else {
				x = v[off+k-1] + 1 // a line of a removed
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return myersPath(a, b, trace, d, k), true
			}
		}
	}
	return nil, false
}

// myersPath walks the trace back from (len(a), len(b)) on diagonal k.
func myersPath(a, b []string, trace [][]int, d, k int) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for ; d > 0; d-- {
		vp := trace[d]
		at := func(k int) int { return vp[k+d+1] }
		prevK := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		}
		px := at(prevK)
		py := px - prevK
		sx := px
		if prevK == k-1 {
			sx++
		}
		for x > sx {
			x--
			y--
			rev = append(rev, diffOp{' ', a[x], x, y})
		}
		if prevK == k+1 {
			rev = append(rev, diffOp{'+', b[py], px, py})
		} else {
			rev = append(rev, diffOp{'-', a[px], px, py})
		}
		x, y, k = px, py, prevK
	}
	for x > 0 {
		x--
		y--
		rev = append(rev, diffOp{' ', a[x], x, y})
	}
	slices.Reverse(rev)
	return rev
}
