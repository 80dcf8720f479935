package editmatch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// edit_file's matching as models copy text: a snippet with its wrapping
// (a fence, a line-number gutter) or its escapes written out, whole lines
// at another indentation, and the lenient level that folds spacing,
// typographic punctuation and invisible characters — for matching only.

// lineOffset is the byte offset where line i starts (the text's length for
// i == len(lines)).
func lineOffset(lines []string, i int) int {
	n := 0
	for _, l := range lines[:i] {
		n += len(l)
	}
	return n
}

func trimBlankLines(ls []string) []string {
	for len(ls) > 0 && strings.TrimSpace(ls[0]) == "" {
		ls = ls[1:]
	}
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// findLineWindows finds runs of file lines equal to the snippet's lines
// when blank space at both ends of each line is ignored (overlapping
// windows included, as for findAll).
func findLineWindows(lines, snip []string) []int {
	if len(snip) == 0 || len(snip) > len(lines) {
		return nil
	}
	want := make([]string, len(snip))
	for i, l := range snip {
		want[i] = strings.TrimSpace(l)
	}
	var out []int
	for i := 0; i+len(snip) <= len(lines); i++ {
		ok := true
		for j := range want {
			if strings.TrimSpace(lines[i+j]) != want[j] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, i)
			if len(out) == maxMatches {
				break
			}
		}
	}
	return out
}

// indentOf returns a line's leading blank space.
func indentOf(l string) string {
	return l[:len(l)-len(strings.TrimLeft(l, " \t"))]
}

// detectUnit guesses a file's indentation unit: a tab when indented lines
// mostly start with tabs, else the smallest space indent seen (2 or 4...).
func detectUnit(lines []string) string {
	tabs, spaces, unit := 0, 0, 0
	for _, l := range lines {
		ind := indentOf(l)
		if ind == "" || strings.TrimSpace(l) == "" {
			continue
		}
		if ind[0] == '\t' {
			tabs++
			continue
		}
		spaces++
		if n := len(ind) - len(strings.TrimLeft(ind, " ")); n > 0 && (unit == 0 || n < unit) {
			unit = n
		}
	}
	if tabs >= spaces && tabs > 0 {
		return "\t"
	}
	if unit == 0 {
		unit = 4
	}
	return strings.Repeat(" ", unit)
}

// width measures an indentation, a tab counting as four columns.
func width(ind string) int {
	return len(ind) + 3*strings.Count(ind, "\t")
}

// snippetUnit is the snippet's indentation step in columns: the smallest
// positive difference between a line's indentation and the first line's.
func snippetUnit(base string, groups ...[]string) int {
	unit := 0
	for _, g := range groups {
		for _, l := range g {
			if strings.TrimSpace(l) == "" {
				continue
			}
			d := width(indentOf(l)) - width(base)
			if d < 0 {
				d = -d
			}
			if d > 0 && (unit == 0 || d < unit) {
				unit = d
			}
		}
	}
	return unit
}

// reindent renders newLines for the place of fileLines (the matched lines),
// given the snippet lines the model believed were there. A new line equal to
// a snippet line (taken in order) keeps the file's own line byte for byte;
// any other line keeps its indentation relative to the line before it,
// re-expressed in the file's indentation unit.
func reindent(fileLines, snip, newLines []string, fileUnit string) string {
	prevNew := width(indentOf(snip[0]))
	prevOut := indentOf(fileLines[0])
	uw := snippetUnit(indentOf(snip[0]), snip, newLines)
	if uw == 0 {
		uw = width(fileUnit)
	}
	next := 0 // the next snippet line a new line may match
	var sb strings.Builder
	for _, nl := range newLines {
		body := strings.TrimLeft(nl, " \t")
		if body == "" {
			sb.WriteByte('\n')
			continue
		}
		matched := false
		for k := next; k < len(snip); k++ {
			if snip[k] == nl {
				line := strings.TrimSuffix(fileLines[k], "\n")
				sb.WriteString(line)
				sb.WriteByte('\n')
				prevNew, prevOut, next, matched = width(indentOf(nl)), indentOf(line), k+1, true
				break
			}
		}
		if matched {
			continue
		}
		rel := width(indentOf(nl)) - prevNew
		ind := prevOut
		if rel >= 0 {
			ind += strings.Repeat(fileUnit, rel/uw) + strings.Repeat(" ", rel%uw)
		} else {
			cut := (-rel + uw - 1) / uw * len(fileUnit)
			ind = prevOut[:max(0, len(prevOut)-cut)]
		}
		sb.WriteString(ind)
		sb.WriteString(body)
		sb.WriteByte('\n')
		prevNew, prevOut = width(indentOf(nl)), ind
	}
	return sb.String()
}

// gutterRE is a line-number gutter: "12\t", "  12: ", "12 | ", "12│",
// "  12→" (Claude Code's reads), "L12: ".
var gutterRE = lazyre.New(`^[ \t]*L?\d+(?:\t|: |[ ]?[|│→][ ]?)`)

// unwrapSnippet removes what a model copied around the text: a code fence
// around the whole snippet, or a line-number gutter on every line. new_text
// loses the same wrapping when it has it too. ok is false when nothing was
// removed.
func unwrapSnippet(oldText, newText string) (string, string, bool) {
	o, n := oldText, newText
	if f, ok := unfence(dropNameLine(o)); ok {
		o = f
		if g, ok := unfence(dropNameLine(n)); ok {
			n = g
		}
	}
	if g, ok := ungutter(o); ok {
		o = g
		if h, ok := ungutter(n); ok {
			n = h
		}
	}
	return o, n, o != oldText
}

// unescapeSnippet reads old_text and new_text written with their escapes
// spelled out (a one-line "func a() {\\n\\treturn 1\\n}"). o is empty when
// old_text is not written so; why is set when new_text is not written the
// same way (then neither can be read without a guess).
func unescapeSnippet(oldText, newText string) (o, n, why string) {
	if strings.Contains(oldText, "\n") || !strings.Contains(oldText, `\n`) && !strings.Contains(oldText, `\t`) {
		return "", "", ""
	}
	if strings.Contains(newText, "\n") && strings.Contains(oldText, `\n`) {
		return "", "", `old_text has its line breaks written as \n but new_text has real ones: send both with real line breaks (as the file has them)`
	}
	return unescapeText(oldText), unescapeText(newText), ""
}

var spelledEscapes = map[byte]string{'n': "\n", 't': "\t", 'r': "\r", '"': `"`, '\'': "'", '\\': `\`}

// unescapeText turns \n, \t, \r, \", \' and \\ into what they stand for.
func unescapeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if r, ok := spelledEscapes[s[i+1]]; ok {
				b.WriteString(r)
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dropNameLine drops a file name written on the line before a fence (as
// models write a SEARCH block: "src/x.py" then the fence).
func dropNameLine(s string) string {
	first, rest, ok := strings.Cut(strings.TrimLeft(s, " \t\r\n"), "\n")
	first = strings.TrimSpace(first)
	if !ok || first == "" || strings.ContainsAny(first, " \t`") || !strings.ContainsAny(first, "./") ||
		!strings.HasPrefix(strings.TrimSpace(rest), "```") {
		return s
	}
	return rest
}

func unfence(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return s, false
	}
	nl := strings.IndexByte(t, '\n')
	if nl < 0 {
		return s, false
	}
	body := t[nl+1 : len(t)-3]
	if strings.Contains(body, "```") {
		return s, false
	}
	// The line break before the closing fence belongs to the fence: a
	// fenced old_text with a bare new_text must not take the file's line
	// break with it.
	return strings.TrimSuffix(strings.TrimSuffix(body, "\n"), "\r"), true
}

// ungutter strips a gutter that every non-blank line has.
func ungutter(s string) (string, bool) {
	lines := strings.SplitAfter(s, "\n")
	seen := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if !gutterRE().MatchString(l) {
			return s, false
		}
		seen = true
	}
	if !seen {
		return s, false
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(gutterRE().ReplaceAllString(l, ""))
	}
	return b.String(), true
}

// atTokenBoundaries keeps the spans that do not start or end inside a
// word: " count + 1 " must not edit "count + 10".
func atTokenBoundaries(s string, spans []span) []span {
	var out []span
	for _, sp := range spans {
		if sp.end > sp.start && splitsWord(s, sp.start, sp.end) {
			continue
		}
		out = append(out, sp)
	}
	return out
}

func splitsWord(s string, a, b int) bool {
	word := func(c byte) bool { return isWordByte(c) || c >= 0x80 }
	if a > 0 && word(s[a-1]) && word(s[a]) {
		return true
	}
	return b < len(s) && word(s[b-1]) && word(s[b])
}

// punctFold maps typographic punctuation to what a model types instead.
var punctFold = map[rune]string{
	'\u201c': `"`, '\u201d': `"`, '\u201e': `"`, '\u201f': `"`, '\u2033': `"`, '\u00ab': `"`, '\u00bb': `"`,
	'\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u2032': "'", '\u2039': "'", '\u203a': "'", '\u00b4': "'",
	'\u2010': "-", '\u2011': "-", '\u2012': "-", '\u2013': "-", '\u2014': "-", '\u2015': "-", '\u2212': "-",
	'\u2026': "...",
}

func zeroWidth(r rune) bool {
	return r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\u2060' || r == '\ufeff' || r == '\u00ad'
}

// lenientForm is s with each line trimmed, inner blank space runs as one
// space, runs of blank lines as one, typographic punctuation folded and
// zero-width characters dropped; from[k] and to[k] give the original byte
// range that produced byte k.
func lenientForm(s string) (string, []int, []int) {
	var b strings.Builder
	var from, to []int
	emit := func(text string, a, z int) {
		for i := 0; i < len(text); i++ {
			from, to = append(from, a), append(to, z)
		}
		b.WriteString(text)
	}
	lineStart, blankRun := true, 0
	pendingSpace := -1
	for i, r := range s {
		_, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n':
			if !lineStart {
				blankRun = 0
			} else if b.Len() > 0 {
				blankRun++
			}
			lineStart, pendingSpace = true, -1
			continue
		case zeroWidth(r):
			continue
		case r == ' ' || r == '\t' || r == '\r' || unicode.IsSpace(r):
			if !lineStart {
				pendingSpace = i
			}
			continue
		}
		if lineStart && b.Len() > 0 {
			sep := "\n"
			if blankRun > 0 {
				sep = "\n\n"
			}
			emit(sep, i, i)
		}
		if pendingSpace >= 0 {
			emit(" ", pendingSpace, pendingSpace+1)
		}
		lineStart, blankRun, pendingSpace = false, 0, -1
		if f, ok := punctFold[r]; ok {
			emit(f, i, i+size)
		} else {
			emit(s[i:i+size], i, i+size)
		}
	}
	return b.String(), from, to
}

// lenientFind finds old in content in lenient form, at token boundaries,
// and maps the matches back to content's bytes.
func lenientFind(content, old string) []span {
	nc, from, to := lenientForm(content)
	no, _, _ := lenientForm(old)
	if no == "" {
		return nil
	}
	var out []span
	for _, sp := range atTokenBoundaries(nc, findAll(nc, no)) {
		out = append(out, span{from[sp.start], to[sp.end-1]})
	}
	return out
}

// isWordByte reports an ASCII letter, digit or underscore.
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
