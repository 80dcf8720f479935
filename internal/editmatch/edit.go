// Package editmatch is edit_file's matching: where old_text is in a file,
// and the file with new_text in its place (Apply; ApplyInView over the
// redacted view the model was shown, applied to the real bytes).
//
// edit_file's matching pipeline (after seed 002, section 六): find old_text
// in a file at the first of four levels that gives exactly one match, from
// strict to lenient. Each level only tolerates a way small models mis-copy a
// snippet (CRLF, stray blank space around it, indentation drift); none of
// them guesses between candidates. More than one match is an error that
// asks for more context; none is an error that shows the closest region.
//
// The Result says how it matched (its Level), where, and what the model
// must know; an *Error is a failed match, its message for the model (the
// closest region, redacted). It knows nothing of the workspace: the gate
// reads the file and writes the result.
package editmatch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/harvey-agent/harvey/internal/secrets"
)

// Level names how a snippet matched, for the result shown to the model.
type Level int

const (
	Exact Level = iota + 1
	LineEndings
	Trimmed
	Indent
	Lenient
)

func (l Level) String() string {
	switch l {
	case Exact:
		return "exact"
	case LineEndings:
		return "line endings normalised"
	case Trimmed:
		return "surrounding blank space ignored"
	case Indent:
		return "indentation ignored"
	case Lenient:
		return "spacing, blank lines and typographic punctuation ignored"
	case Elided:
		return "the lines old_text left out with ... kept as they are"
	case Anchored:
		return "its first and last lines as anchors"
	}
	return "?"
}

// span is a byte range [start, end) of the original file.
type span struct{ start, end int }

// Result is the outcome of a successful match and replacement.
type Result struct {
	Text      string // the new file content
	Level     Level
	Count     int      // replacements made
	FirstLine int      // 1-based line of the first replacement in the old file
	OldLines  [2]int   // first and last line replaced (old file), first match
	NewLines  [2]int   // first and last line of the replacement (new file), first match
	Note      string   // what the model must know about the match, if anything
	spans     []span   // replaced ranges of the old file
	inserted  []string // replacement text per span
}

// Error is a failed match: the message for the model.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// ApplyInView is edit_file's matching over the model's view of the
// file: old_text is found in the redacted text (the only text the model was
// shown), so whether it is found, where, how many times, and whether the
// edit changes anything never depend on a hidden byte — a guess at a secret
// is "not found" whether it is right or wrong. The edit is then applied to
// the real bytes at the same places. An edit that would touch a line
// redaction changed is refused: the model cannot know what it would replace.
func ApplyInView(content, oldText, newText string, replaceAll bool) (*Result, error) {
	view := secrets.Redact(content)
	if view == content {
		return Apply(content, oldText, newText, replaceAll)
	}
	r, err := Apply(view, oldText, newText, replaceAll)
	if err != nil {
		return nil, err
	}
	// Redaction keeps the lines: line i of the view is line i of the
	// file, and a line it did not change is the same bytes in both.
	viewLines, rawLines := splitKeepEOL(view), splitKeepEOL(content)
	viewStart, rawStart := lineStarts(viewLines), lineStarts(rawLines)
	toRaw := func(off int, end bool) (int, bool) {
		i := sort.SearchInts(viewStart, off+1) - 1
		if end && i > 0 && off == viewStart[i] {
			i-- // a span ending at a line start ends on the line before
		}
		if i < 0 || i >= len(viewLines) || viewLines[i] != rawLines[i] {
			return 0, false
		}
		return rawStart[i] + off - viewStart[i], true
	}
	spans := make([]span, len(r.spans))
	inserted := make(map[int]string, len(r.spans))
	for k, sp := range r.spans {
		start, ok1 := toRaw(sp.start, false)
		end, ok2 := toRaw(sp.end, true)
		for i := sort.SearchInts(viewStart, sp.start+1) - 1; ok1 && ok2 && i < len(viewLines) && viewStart[i] < sp.end; i++ {
			ok1 = viewLines[i] == rawLines[i]
		}
		if !ok1 || !ok2 {
			return nil, &Error{fmt.Sprintf("old_text covers line %d, which holds text Harvey redacted: secrets are hidden from you, so edit around that line (old_text and new_text without it)",
				strings.Count(view[:sp.start], "\n")+1)}
		}
		spans[k] = span{start, end}
		inserted[start] = r.inserted[k]
	}
	return finishEdit(content, spans, r.Level, true, func(s span) string { return inserted[s.start] })
}

// wholeLines reports whether sp covers whole lines of text (only blank
// space before it on its first line, and it ends at a line's end) and n
// of them, and returns those lines.
func wholeLines(text string, sp span, n int) ([]string, bool) {
	start := strings.LastIndexByte(text[:sp.start], '\n') + 1
	if strings.TrimSpace(text[start:sp.start]) != "" || sp.end < len(text) && text[sp.end] != '\n' {
		return nil, false
	}
	w := splitKeepEOL(text[start:sp.end])
	return w, len(w) == n
}

// lineStarts is the offset of each line.
func lineStarts(lines []string) []int {
	out := make([]int, len(lines))
	off := 0
	for i, l := range lines {
		out[i] = off
		off += len(l)
	}
	return out
}

// Apply finds oldText in content and replaces it with newText. With
// replaceAll every match of the first level that matches is replaced;
// otherwise that level must match exactly once.
func Apply(content, oldText, newText string, replaceAll bool) (*Result, error) {
	if oldText == "" {
		return nil, &Error{"old_text is empty: give the exact text to replace (empty old_text only creates a new file)"}
	}
	// Level 1: the bytes as given.
	if spans := findAll(content, oldText); len(spans) > 0 {
		return finishEdit(content, spans, Exact, replaceAll, func(span) string { return newText })
	}
	if r, done, err := applyRewritten(content, oldText, newText, replaceAll); done {
		return r, err
	}
	// Level 2: CRLF and LF treated alike, on both sides.
	e := newNormalEdit(content, oldText, newText)
	if spans := findAll(e.norm, e.oldN); len(spans) > 0 {
		return finishEdit(content, mapSpans(spans, e.toOrig), LineEndings, replaceAll,
			func(span) string { return e.withEOL(e.newN) })
	}
	// Level 3: blank space around the snippet trimmed (on both sides, so the
	// replacement lands where the trimmed snippet starts).
	oldT := strings.TrimSpace(e.oldN)
	if oldT == "" {
		return nil, &Error{"old_text is only blank space: give the text to replace"}
	}
	if oldT != e.oldN {
		if spans := atTokenBoundaries(e.norm, findAll(e.norm, oldT)); len(spans) > 0 {
			if err := partOfLine(e.norm, spans); err != nil {
				return nil, err
			}
			newT := strings.TrimSpace(e.newN)
			return finishEdit(content, mapSpans(spans, e.toOrig), Trimmed, replaceAll,
				func(span) string { return e.withEOL(newT) })
		}
	}
	// Level 4: whole lines compared without their indentation; the
	// replacement is re-indented to the file's own indentation.
	if windows := findLineWindows(e.lines, e.snip); len(windows) > 0 {
		return e.byIndent(windows, replaceAll)
	}
	// Level 5: spacing inside lines, runs of blank lines, typographic
	// punctuation and zero-width characters ignored — for matching only:
	// the file keeps its bytes outside the replaced span.
	if spans := lenientFind(e.norm, e.oldN); len(spans) > 0 {
		if err := partOfLine(e.norm, spans); err != nil {
			return nil, err
		}
		return e.lenient(spans, replaceAll)
	}
	if r, done, err := applyMeant(e, oldText, newText, replaceAll); done {
		return r, err
	}
	// The hint shows a window of the file: found in the redacted file
	// (redaction keeps lines), never a window redacted on its own.
	return nil, &Error{"old_text was not found" + closestRegion(splitKeepEOL(secrets.Redact(e.norm)), e.snip)}
}

// partOfLine refuses a match found only with blank space ignored that does
// not cover whole lines: text around it on its line, or one of several on
// a line (Crush's matcher refuses the same). A wrong edit is worse than a
// refusal, and the model can send the line as the file has it.
func partOfLine(s string, spans []span) error {
	for _, sp := range spans {
		lineStart := strings.LastIndexByte(s[:sp.start], '\n') + 1
		lineEnd := len(s)
		if i := strings.IndexByte(s[sp.end:], '\n'); i >= 0 {
			lineEnd = sp.end + i
		}
		before, after := s[lineStart:sp.start], s[sp.end:lineEnd]
		if strings.TrimSpace(before) != "" || strings.TrimSpace(after) != "" {
			line := strings.Count(s[:sp.start], "\n") + 1
			return &Error{fmt.Sprintf("old_text matches only part of line %d once blank space is ignored (other text stands beside it on that line): send whole lines exactly as the file has them (read_file shows them)", line)}
		}
	}
	return nil
}

// applyRewritten tries old_text as the model meant it: a snippet copied
// with its wrapping (a code fence, the line-number gutter of read_file or
// of the miss hint) without it, and escapes written out (a snippet on one
// line with \n, \t, \" where the file has line breaks, as a model that
// escaped its JSON twice sends it) read — only when new_text is written
// the same way. done says an answer was reached.
func applyRewritten(content, oldText, newText string, replaceAll bool) (*Result, bool, error) {
	if o, n, ok := unwrapSnippet(oldText, newText); ok {
		if r, err := Apply(content, o, n, replaceAll); err == nil {
			return r, true, nil
		}
	}
	if o, n, why := unescapeSnippet(oldText, newText); o != "" {
		if r, err := Apply(content, o, n, replaceAll); err == nil {
			return r, true, nil
		}
	} else if why != "" {
		if _, err := Apply(content, unescapeText(oldText), oldText, false); err == nil {
			return nil, true, &Error{why}
		}
	}
	return nil, false, nil
}

// normalEdit is an edit over the file with its line endings made LF: the
// levels past the first match there and map back to the real bytes.
type normalEdit struct {
	content, norm string
	toOrig        func(int) int
	crlf          bool     // the file's line endings are mostly CRLF
	oldN, newN    string   // old_text and new_text with LF endings
	lines         []string // the file's lines, each with its line break
	snip          []string // old_text's lines, blank lines around it dropped
	lead          int      // blank lines dropped before old_text's first line
}

func newNormalEdit(content, oldText, newText string) *normalEdit {
	norm, toOrig := normaliseEOL(content)
	oldN := strings.ReplaceAll(oldText, "\r\n", "\n")
	all := strings.Split(oldN, "\n")
	snip := trimBlankLines(all)
	lead := 0
	for lead < len(all) && strings.TrimSpace(all[lead]) == "" {
		lead++
	}
	return &normalEdit{content: content, norm: norm, toOrig: toOrig, crlf: dominantCRLF(content),
		oldN: oldN, newN: strings.ReplaceAll(newText, "\r\n", "\n"),
		lines: splitKeepEOL(norm), snip: snip, lead: lead}
}

// newLines is new_text's lines for a match of whole lines: its trailing
// line breaks dropped, and as many leading blank lines as old_text had
// (a spurious blank line a model puts first in both, as Aider's matcher
// drops it), so the match's blank lines are not written twice.
func (e *normalEdit) newLines() []string {
	if strings.TrimSpace(e.newN) == "" {
		return nil
	}
	nl := strings.Split(strings.TrimRight(e.newN, "\n"), "\n")
	for k := 0; k < e.lead && len(nl) > 0 && strings.TrimSpace(nl[0]) == ""; k++ {
		nl = nl[1:]
	}
	return nl
}

// withEOL gives replacement text the file's line endings.
func (e *normalEdit) withEOL(s string) string {
	if e.crlf {
		return strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// byIndent replaces the line windows that matched without indentation,
// re-indenting new_text to each window's own indentation.
func (e *normalEdit) byIndent(windows []int, replaceAll bool) (*Result, error) {
	newLines := e.newLines()
	var spans []span
	repl := map[int]string{}
	unit := detectUnit(e.lines)
	for _, w := range windows {
		start := lineOffset(e.lines, w)
		end := lineOffset(e.lines, w+len(e.snip))
		s := span{e.toOrig(start), e.toOrig(end)}
		spans = append(spans, s)
		text := reindent(e.lines[w:w+len(e.snip)], e.snip, newLines, unit)
		if !strings.HasSuffix(e.lines[w+len(e.snip)-1], "\n") {
			text = strings.TrimSuffix(text, "\n")
		}
		repl[s.start] = e.withEOL(text)
	}
	return finishEdit(e.content, spans, Indent, replaceAll, func(s span) string { return repl[s.start] })
}

// lenient replaces what the lenient matcher found.
func (e *normalEdit) lenient(spans []span, replaceAll bool) (*Result, error) {
	newT := strings.TrimSpace(e.newN)
	repl := map[int]string{}
	for i, sp := range spans {
		// Whole lines matched with the same count: the replacement
		// takes the file's indentation (tabs stay tabs), as level 4.
		if w, ok := wholeLines(e.norm, sp, len(e.snip)); ok && strings.Contains(newT, "\n") {
			start := strings.LastIndexByte(e.norm[:sp.start], '\n') + 1
			spans[i] = span{start, sp.end}
			repl[e.toOrig(start)] = e.withEOL(strings.TrimSuffix(reindent(w, e.snip, e.newLines(), detectUnit(e.lines)), "\n"))
		}
	}
	return finishEdit(e.content, mapSpans(spans, e.toOrig), Lenient, replaceAll,
		func(s span) string {
			if r, ok := repl[s.start]; ok {
				return r
			}
			return e.withEOL(newT)
		})
}

func finishEdit(content string, spans []span, level Level, replaceAll bool, repl func(span) string) (*Result, error) {
	if len(spans) > 1 && !replaceAll {
		n := fmt.Sprint(len(spans))
		if len(spans) >= maxMatches {
			n = "more than " + n
		}
		return nil, &Error{fmt.Sprintf("old_text matches %s places (%s; at lines %s): include more surrounding lines so it matches exactly one, or set replace_all",
			n, level, lineList(content, spans))}
	}
	spans = nonOverlapping(spans)
	r := &Result{Level: level, Count: len(spans), spans: spans}
	size := len(content)
	for _, s := range spans {
		ins := repl(s)
		r.inserted = append(r.inserted, ins)
		size += len(ins) - (s.end - s.start)
	}
	var sb strings.Builder
	sb.Grow(size) // the new text is built in one allocation
	prev := 0
	for i, s := range spans {
		ins := r.inserted[i]
		sb.WriteString(content[prev:s.start])
		if i == 0 {
			first := strings.Count(content[:s.start], "\n") + 1
			r.FirstLine = first
			r.OldLines = [2]int{first, first + strings.Count(strings.TrimSuffix(content[s.start:s.end], "\n"), "\n")}
			newFirst := strings.Count(sb.String(), "\n") + 1
			r.NewLines = [2]int{newFirst, newFirst + strings.Count(strings.TrimSuffix(ins, "\n"), "\n")}
		}
		sb.WriteString(ins)
		prev = s.end
	}
	sb.WriteString(content[prev:])
	r.Text = sb.String()
	return r, nil
}

// findAll returns every occurrence of sub in s, overlapping ones included,
// so that "matches exactly once" really means one place. It stops
// counting at maxMatches.
func findAll(s, sub string) []span {
	var out []span
	for i := 0; i <= len(s)-len(sub) && len(out) < maxMatches; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			break
		}
		out = append(out, span{i + j, i + j + len(sub)})
		i += j + 1
	}
	return out
}

const maxMatches = 10000

// nonOverlapping keeps the spans that do not overlap an earlier kept one.
func nonOverlapping(spans []span) []span {
	var out []span
	for _, s := range spans {
		if len(out) == 0 || s.start >= out[len(out)-1].end {
			out = append(out, s)
		}
	}
	return out
}

func dominantCRLF(s string) bool {
	crlf := strings.Count(s, "\r\n")
	return crlf > 0 && crlf >= strings.Count(s, "\n")-crlf
}

// normaliseEOL turns CRLF into LF and returns a map from offsets in the
// normalised text back to offsets in the original.
func normaliseEOL(s string) (string, func(int) int) {
	if !strings.Contains(s, "\r\n") {
		return s, func(i int) int { return i }
	}
	var sb strings.Builder
	// removed[k] = original offset of the k-th dropped '\r'.
	var removed []int
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			removed = append(removed, i)
			continue
		}
		sb.WriteByte(s[i])
	}
	return sb.String(), func(n int) int {
		// The original offset is n plus the number of dropped '\r' before it.
		// A '\r' at original offset r sits before normalised offset r-k.
		lo, hi := 0, len(removed)
		for lo < hi {
			m := (lo + hi) / 2
			if removed[m]-m < n {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return n + lo
	}
}

func mapSpans(spans []span, f func(int) int) []span {
	out := make([]span, len(spans))
	for i, s := range spans {
		out[i] = span{f(s.start), f(s.end)}
	}
	return out
}

// splitKeepEOL splits text into lines that keep their "\n" (the last one
// has none when the text does not end in a newline).
func splitKeepEOL(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineList renders the first lines of each span, for ambiguity errors.
func lineList(content string, spans []span) string {
	var parts []string
	for i, s := range spans {
		if i == 8 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprint(strings.Count(content[:s.start], "\n")+1))
	}
	return strings.Join(parts, ", ")
}

// closestRegion finds the window of the file most like the snippet and
// shows it with line numbers, so the model can retry with the real text.
func closestRegion(lines, snip []string) string {
	if len(lines) == 0 {
		return " (the file is empty)"
	}
	if len(snip) == 0 {
		return ""
	}
	k := len(snip)
	if k > len(lines) {
		k = len(lines)
	}
	want := make([]string, len(snip))
	for i, l := range snip {
		want[i] = strings.TrimSpace(l)
	}
	cheap := len(lines)*k > 2_000_000
	best, bestScore := 0, -1.0
	for i := 0; i+k <= len(lines); i++ {
		score := 0.0
		for j := 0; j < k; j++ {
			got := strings.TrimSpace(lines[i+j])
			switch {
			case got == want[j]:
				score += 1
			case !cheap:
				score += similarity(got, want[j])
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if bestScore <= 0 {
		return " (nothing in the file looks like it; read the file first)"
	}
	from := max(best-2, 0)
	to := min(best+k+2, len(lines))
	if to-from > 40 {
		to = from + 40
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, ". The closest region is lines %d-%d (line numbers and the tab after them are not part of the file); copy old_text from it:\n", best+1, best+k)
	for i := from; i < to; i++ {
		fmt.Fprintf(&sb, "%d\t%s\n", i+1, strings.TrimRight(lines[i], "\r\n"))
	}
	return sb.String()
}

// similarity is a cheap 0..1 likeness of two lines: shared prefix plus
// shared suffix over the longer length.
func similarity(a, b string) float64 {
	if a == "" || b == "" {
		return 0
	}
	n := max(len(a), len(b))
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return float64(p+s) / float64(n)
}

// ---- lenient matching ----
