package gittool

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// What git may show: the path policy on both sides of a git command — the
// pathspecs that keep hidden files out of what git is asked, and the filter
// that drops what git prints of a denied file (a diff, a name in a list).

// gitPathspecs is what git is given after "--": the paths asked for (or
// what may be read of the whole tree), then the hidden set — agents/, the
// denylist and every directory permissions: gives no read — as excludes,
// generated from the same definitions as the path policy, so git is never
// asked about a file Harvey hides (its history queries included). git
// cannot include again below an exclude: a directory granted read inside
// one that is not stays out of git output (hidden too much, never too
// little).
func gitPathspecs(ws *wspath.Tree, paths []string) []string {
	out := append([]string{}, paths...)
	var perms map[string][]string
	if ws != nil {
		perms = ws.Permissions()
	}
	if len(out) == 0 {
		switch {
		case wspath.Permits(perms, ".", wspath.PermRead) || len(perms) == 0:
			out = append(out, ".")
		default:
			for _, prefix := range slices.Sorted(maps.Keys(perms)) {
				if p := path.Clean(strings.TrimSuffix(prefix, "/")); p != "." && slices.Contains(perms[prefix], wspath.PermRead) && !strings.HasPrefix(p, "..") {
					out = append(out, p)
				}
			}
			if len(out) == 0 {
				return append(out, ":(exclude,glob)**") // nothing may be read
			}
		}
	}
	out = append(out, gitDenylistPathspecs()...)
	for _, prefix := range slices.Sorted(maps.Keys(perms)) {
		if p := path.Clean(strings.TrimSuffix(prefix, "/")); p != "." && !slices.Contains(perms[prefix], wspath.PermRead) && !strings.HasPrefix(p, "..") {
			out = append(out, ":(exclude,literal)"+p)
		}
	}
	return out
}

// filterGitOutput drops what git printed about denied files: each
// "diff --git" section whose old or new path is denied (header and hunks,
// measured by the hunk headers' line counts), and each name, status or stat
// line that names a denied path. It returns the text and how many entries
// it dropped.
func filterGitOutput(out string, denied func(string) bool) (string, int) {
	lines := strings.SplitAfter(out, "\n")
	var b strings.Builder
	b.Grow(len(out))
	dropped := 0
	for i := 0; i < len(lines); {
		l := lines[i]
		if a, bp, ok := parseDiffGitHeader(l); ok {
			end := diffSectionEnd(lines, i)
			if gitPathDenied(a, denied) || gitPathDenied(bp, denied) {
				dropped++
			} else {
				for _, x := range lines[i:end] {
					b.WriteString(x)
				}
			}
			i = end
			continue
		}
		if lineNamesDenied(strings.TrimRight(l, "\r\n"), denied) {
			dropped++
			i++
			continue
		}
		b.WriteString(l)
		i++
	}
	return b.String(), dropped
}

// parseDiffGitHeader reads "diff --git a/X b/Y" (paths may be quoted).
func parseDiffGitHeader(l string) (a, b string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimRight(l, "\r\n"), "diff --git ")
	if !ok {
		return "", "", false
	}
	first, rest := takeGitPath(rest)
	second, _ := takeGitPath(strings.TrimLeft(rest, " "))
	return strings.TrimPrefix(first, "a/"), strings.TrimPrefix(second, "b/"), true
}

// takeGitPath takes one path, quoted ("a/x y") or up to " b/" / the end.
func takeGitPath(s string) (string, string) {
	if strings.HasPrefix(s, `"`) {
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' {
				i++
				continue
			}
			if s[i] == '"' {
				if u, err := strconv.Unquote(s[:i+1]); err == nil {
					return u, s[i+1:]
				}
				return s[1:i], s[i+1:]
			}
		}
		return s, ""
	}
	if i := strings.Index(s, " b/"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// diffSectionEnd finds where the diff section starting at lines[i] ends:
// the extended header lines, then hunks whose lengths the @@ lines give.
func diffSectionEnd(lines []string, i int) int {
	j := i + 1
	for j < len(lines) {
		l := lines[j]
		switch {
		case strings.HasPrefix(l, "@@ "):
			oldN, newN := hunkCounts(l)
			j++
			for j < len(lines) && (oldN > 0 || newN > 0) {
				switch c := lines[j]; {
				case strings.HasPrefix(c, "\\"):
				case strings.HasPrefix(c, "-"):
					oldN--
				case strings.HasPrefix(c, "+"):
					newN--
				default:
					oldN--
					newN--
				}
				j++
			}
			for j < len(lines) && strings.HasPrefix(lines[j], "\\") {
				j++
			}
		case isDiffHeaderLine(l):
			j++
		default:
			return j
		}
	}
	return j
}

var diffHeaderPrefixes = []string{"index ", "--- ", "+++ ", "new file mode", "deleted file mode", "old mode", "new mode",
	"similarity index", "dissimilarity index", "rename from", "rename to", "copy from", "copy to", "Binary files "}

func isDiffHeaderLine(l string) bool {
	for _, p := range diffHeaderPrefixes {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// hunkCounts reads "@@ -a,b +c,d @@" (a count defaults to 1).
func hunkCounts(l string) (int, int) {
	f := strings.Fields(l)
	if len(f) < 3 {
		return 0, 0
	}
	count := func(s string) int {
		_, n, ok := strings.Cut(s[1:], ",")
		if !ok {
			return 1
		}
		v, _ := strconv.Atoi(n)
		return v
	}
	return count(f[1]), count(f[2])
}

// lineNamesDenied reads the paths a name, status or stat line may carry
// and reports whether one is denied: "path", "M\tpath", "R100\told\tnew",
// "?? path", " M path", "R  old -> new", "\tmodified:   path", " path | 3 +-".
func lineNamesDenied(l string, denied func(string) bool) bool {
	if l == "" {
		return false
	}
	var cands []string
	if strings.Contains(l, "\t") {
		for _, f := range strings.Split(l, "\t") {
			cands = append(cands, strings.TrimSpace(f))
		}
		if _, after, ok := strings.Cut(l, ":"); ok {
			cands = append(cands, strings.TrimSpace(after))
		}
	}
	if len(l) > 3 && l[2] == ' ' {
		rest := l[3:]
		if old, nw, ok := strings.Cut(rest, " -> "); ok {
			cands = append(cands, old, nw)
		} else {
			cands = append(cands, rest)
		}
	}
	if p, _, ok := strings.Cut(l, " | "); ok {
		cands = append(cands, strings.TrimSpace(p))
	}
	cands = append(cands, strings.TrimSpace(l))
	for _, c := range cands {
		if c != "" && gitPathDenied(c, denied) {
			return true
		}
	}
	return false
}

// gitPathDenied applies the policy to a path as git printed it (quoted
// when it holds unusual bytes; "{old => new}" in rename stats).
func gitPathDenied(p string, denied func(string) bool) bool {
	if strings.HasPrefix(p, `"`) {
		if u, err := strconv.Unquote(p); err == nil {
			p = u
		}
	}
	p = strings.TrimPrefix(p, "./")
	if p == "" || p == "/dev/null" || strings.ContainsAny(p, " \x00") && !strings.Contains(p, "/") && !strings.HasPrefix(p, ".") {
		return false
	}
	clean := path.Clean(p)
	// denied is the caller's policy (it includes the lexical rules).
	return !strings.HasPrefix(clean, "../") && clean != ".." && !path.IsAbs(clean) && denied(clean)
}

// gitDenylistPathspecs are the pathspec excludes every git command Harvey
// runs carries: agents/, then the denylist's (secrets.GitExcludes).
func gitDenylistPathspecs() []string {
	return append([]string{":(exclude,icase)" + wspath.AgentsDir}, secrets.GitExcludes()...)
}
