package wspath

import (
	"regexp"
	"strings"
)

// .gitignore rules for search_files: files a project ignores (build output,
// vendored trees, logs) are not searched. Rules are kept with the
// workspace-relative directory of their .gitignore and matched against
// workspace-relative paths, so a search from a subdirectory obeys the
// .gitignore files above it too.

type ignoreRule struct {
	base    string // workspace-relative directory of the .gitignore
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

type IgnoreSet struct{ rules []ignoreRule }

// Add parses the .gitignore found in the workspace directory dir.
func (s *IgnoreSet) Add(dir string, data []byte) {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{base: dir}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		}
		line = strings.TrimRight(line, " ")
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		expr := "(^|/)" + globToRegexp(line) + "(/.*)?$"
		if anchored {
			expr = "^" + globToRegexp(line) + "(/.*)?$"
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			continue
		}
		r.re = re
		s.rules = append(s.rules, r)
	}
}

// Ignored reports whether the workspace-relative path rel is ignored.
func (s *IgnoreSet) Ignored(rel string, isDir bool) bool {
	ign := false
	for _, r := range s.rules {
		sub := rel
		if r.base != "." {
			if len(rel) <= len(r.base) || rel[len(r.base)] != '/' || !strings.HasPrefix(rel, r.base) {
				continue
			}
			sub = rel[len(r.base)+1:]
		}
		if r.dirOnly && !isDir && !strings.Contains(sub, "/") {
			continue
		}
		if r.re.MatchString(sub) {
			ign = !r.negate
		}
	}
	return ign
}

// globToRegexp converts a gitignore glob to a regexp body.
func globToRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			if i+1 < len(g) && g[i+1] == '*' {
				i++
				if i+1 < len(g) && g[i+1] == '/' {
					i++
					b.WriteString("(.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(g[i:], ']')
			if j > 0 {
				b.WriteString(strings.Replace(g[i:i+j+1], "[!", "[^", 1))
				i += j
			} else {
				b.WriteString(`\[`)
			}
		case '\\':
			if i+1 < len(g) {
				i++
				b.WriteString(regexp.QuoteMeta(string(g[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// Mark is where the rules end now; Truncate(mark) drops the rules added
// since (a directory's .gitignore governs that directory only: a walk
// drops its rules when it leaves it).
func (s *IgnoreSet) Mark() int { return len(s.rules) }

// Truncate drops the rules added after mark.
func (s *IgnoreSet) Truncate(mark int) { s.rules = s.rules[:mark] }
