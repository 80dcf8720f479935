package harvey

import (
	"fmt"
	"strings"
)

// diffCells bounds the LCS table (lines of the changed middle, old × new,
// after the common head and tail are trimmed): past it a summary diff shows
// the changed region's size with its first and last lines.
const diffCells = 4_000_000

// unifiedDiff renders a unified diff (3 lines of context) of a file change,
// for approvals and /undo. It is never empty when the bytes differ: a
// missing final newline is shown as git shows it ("\ No newline at end of
// file"), and a change too large to diff line by line gets a summary hunk.
func unifiedDiff(name, old, new string, existed bool) string {
	a, b := splitLines(old), splitLines(new)
	if !existed {
		a = nil
	}
	var sb strings.Builder
	from := "a/" + name
	if !existed {
		from = "/dev/null"
	}
	fmt.Fprintf(&sb, "--- %s\n+++ b/%s\n", from, name)
	pre, suf := commonEnds(a, b)
	if (len(a)-pre-suf)*(len(b)-pre-suf) > diffCells {
		summaryHunk(&sb, a, b, pre, suf)
		return sb.String()
	}
	writeHunks(&sb, diffLines(a, b, pre, suf))
	return sb.String()
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
func summaryHunk(sb *strings.Builder, a, b []string, pre, suf int) {
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	fmt.Fprintf(sb, "@@ -%d,%d +%d,%d @@ (too large to diff line by line: %d lines replaced by %d)\n", pre+1, len(am), pre+1, len(bm), len(am), len(bm))
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

// diffLines computes a line diff by longest common subsequence of the
// middle that differs (pre and suf lines are shared).
func diffLines(a, b []string, pre, suf int) []diffOp {
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(am), len(bm)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if am[i] == bm[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	ops := make([]diffOp, 0, len(a)+m)
	for k := 0; k < pre; k++ {
		ops = append(ops, diffOp{' ', a[k], k, k})
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && am[i] == bm[j]:
			ops = append(ops, diffOp{' ', am[i], pre + i, pre + j})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', am[i], pre + i, pre + j})
			i++
		default:
			ops = append(ops, diffOp{'+', bm[j], pre + i, pre + j})
			j++
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, diffOp{' ', a[len(a)-suf+k], len(a) - suf + k, len(b) - suf + k})
	}
	return ops
}
