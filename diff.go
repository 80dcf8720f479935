package harvey

import (
	"fmt"
	"strings"
)

// unifiedDiff renders a unified diff (3 lines of context) of a file change,
// for approvals. Very large files get a summary instead.
func unifiedDiff(name, old, new string, existed bool) string {
	a, b := splitLines(old), splitLines(new)
	if !existed {
		a = nil
	}
	if len(a)*len(b) > 4_000_000 {
		return fmt.Sprintf("--- %s\n+++ %s\n(%d lines → %d lines; too large to diff)\n", name, name, len(a), len(b))
	}
	ops := diffLines(a, b)
	var sb strings.Builder
	from := "a/" + name
	if !existed {
		from = "/dev/null"
	}
	fmt.Fprintf(&sb, "--- %s\n+++ b/%s\n", from, name)
	const ctx = 3
	// Group ops into hunks.
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
		aStart, bStart, aN, bN := 0, 0, 0, 0
		for _, op := range ops[start:end] {
			if aStart == 0 && op.kind != '+' {
				aStart = op.ai + 1
			}
			if bStart == 0 && op.kind != '-' {
				bStart = op.bi + 1
			}
			if op.kind != '+' {
				aN++
			}
			if op.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", aStart, aN, bStart, bN)
		for _, op := range ops[start:end] {
			sb.WriteByte(op.kind)
			sb.WriteString(op.text)
			sb.WriteByte('\n')
		}
		i = end
	}
	return sb.String()
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	text   string
	ai, bi int
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffLines computes a line diff by longest common subsequence.
func diffLines(a, b []string) []diffOp {
	// Trim common prefix and suffix to keep the table small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
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
	var ops []diffOp
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
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, diffOp{'+', bm[j], pre + i, pre + j})
			j++
		default:
			ops = append(ops, diffOp{'-', am[i], pre + i, pre + j})
			i++
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, diffOp{' ', a[len(a)-suf+k], len(a) - suf + k, len(b) - suf + k})
	}
	return ops
}
