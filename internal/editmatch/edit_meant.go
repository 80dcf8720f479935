package editmatch

import (
	"fmt"
	"strings"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// edit_file's last resorts, tried only when no level matched old_text as
// written: what the model meant when it wrote less than the text (lines
// elided with "...", as Aider's matcher reads them), quotes escaped once
// too often, or a block whose first and last lines are the file's but one
// line in between was misremembered (opencode's anchored matchers). Each
// takes exactly one candidate or refuses; none chooses between two.

// elisionRE is a line that stands for lines left out: "..." or "…"
// alone, or a comment that starts with them ("// ... existing code ...",
// "# ..."); never code that starts with dots (a spread "...props,").
var elisionRE = lazyre.New(`^(?:\.\.\.|…|(?://|#|--|;|/\*|<!--)[ \t]*(?:\.\.\.|…).*)$`)

func isElision(l string) bool { return elisionRE().MatchString(strings.TrimSpace(l)) }

// splitElided splits text at its elision lines; ok is false when it has
// none.
func splitElided(text string) (pieces []string, ok bool) {
	var cur strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if isElision(l) {
			pieces, ok = append(pieces, cur.String()), true
			cur.Reset()
			continue
		}
		cur.WriteString(l)
	}
	return append(pieces, cur.String()), ok
}

// Elided and Anchored extend Level for the last resorts.
const (
	Elided Level = iota + 100
	Anchored
)

// applyMeant tries the last resorts in turn; done says an answer (a result
// or a refusal that says what to send) was reached.
func applyMeant(e *normalEdit, oldText, newText string, replaceAll bool) (*Result, bool, error) {
	content := e.content
	if r, done, err := applyElided(content, oldText, newText, replaceAll); done {
		return r, true, err
	}
	if o, n, ok := unescapeQuotes(oldText, newText); ok {
		if r, err := Apply(content, o, n, replaceAll); err == nil {
			r.Note = strings.TrimPrefix(r.Note+"; "+`old_text's \" and \' were read as quotes (as in new_text)`, "; ")
			return r, true, nil
		}
	}
	if r, done, err := applyAnchored(e, replaceAll); done {
		return r, true, err
	}
	return nil, false, nil
}

// applyElided reads "..." lines in old_text as lines of the file left out:
// new_text must elide at the same places, and each piece between them is
// an edit of its own that must match exactly one place, the pieces in
// order and apart. The file keeps the elided lines.
func applyElided(content, oldText, newText string, replaceAll bool) (*Result, bool, error) {
	olds, ok := splitElided(oldText)
	if !ok {
		return nil, false, nil
	}
	news, _ := splitElided(newText)
	if len(news) != len(olds) {
		return nil, true, &Error{fmt.Sprintf("old_text leaves lines out with ... %d times and new_text %d times: use ... at the same places in both (the lines it stands for are kept), or copy the lines in full",
			len(olds)-1, len(news)-1)}
	}
	if replaceAll {
		return nil, true, &Error{"old_text leaves lines out with ...: it cannot be combined with replace_all; copy the lines in full"}
	}
	var spans []span
	repl := map[int]string{}
	for k := range olds {
		o, n := olds[k], news[k]
		if strings.TrimSpace(o) == "" {
			if strings.TrimSpace(n) != "" {
				return nil, true, &Error{"new_text adds lines where old_text has only ...: say where they go with a line of the file before them in old_text"}
			}
			continue
		}
		r, err := Apply(content, o, n, false)
		if err != nil {
			return nil, true, &Error{fmt.Sprintf("old_text's piece %d of %d (between the ... lines): %v", k+1, len(olds), err)}
		}
		sp := r.spans[0]
		if len(spans) > 0 && sp.start < spans[len(spans)-1].end {
			return nil, true, &Error{fmt.Sprintf("old_text's pieces between the ... lines are not in the file's order (piece %d comes before piece %d): copy them as the file has them", k+1, k)}
		}
		spans = append(spans, sp)
		repl[sp.start] = r.inserted[0]
	}
	if len(spans) == 0 {
		return nil, true, &Error{"old_text is only ... lines: give the text to replace"}
	}
	r, err := finishEdit(content, spans, Elided, true, func(s span) string { return repl[s.start] })
	return r, true, err
}

// unescapeQuotes reads \" and \' in old_text as the quotes a model
// escaped for its JSON twice; new_text is read the same way. ok is false
// when old_text escapes no quote.
func unescapeQuotes(oldText, newText string) (string, string, bool) {
	if !strings.Contains(oldText, `\"`) && !strings.Contains(oldText, `\'`) {
		return "", "", false
	}
	r := strings.NewReplacer(`\"`, `"`, `\'`, "'")
	return r.Replace(oldText), r.Replace(newText), true
}

// applyAnchored finds a block of old_text's number of lines whose first
// and last lines are old_text's (blank space, spacing and punctuation
// folded as the lenient level does) and most lines in between too: twice
// as many of them the same as different. The block must be the only one
// so; it is replaced whole, and the result says which lines differed (the
// diff shows them).
func applyAnchored(e *normalEdit, replaceAll bool) (*Result, bool, error) {
	n := len(e.snip)
	if n < 5 || replaceAll || n > len(e.lines) {
		return nil, false, nil
	}
	fold := func(l string) string { f, _, _ := lenientForm(l); return f }
	want := make([]string, n)
	for i, l := range e.snip {
		want[i] = fold(l)
	}
	if !distinctive(want[0]) && !distinctive(want[n-1]) {
		return nil, false, nil
	}
	var found []int
	var differs []int
	for i := 0; i+n <= len(e.lines); i++ {
		if fold(e.lines[i]) != want[0] || fold(e.lines[i+n-1]) != want[n-1] {
			continue
		}
		same, other := 0, []int(nil)
		for j := 1; j < n-1; j++ {
			got := fold(e.lines[i+j])
			switch {
			case got == want[j]:
				if want[j] != "" {
					same++
				}
			default:
				other = append(other, i+j+1)
			}
		}
		if same >= 2*len(other) {
			found = append(found, i+1)
			differs = other
		}
	}
	switch len(found) {
	case 0:
		return nil, false, nil
	case 1:
	default:
		return nil, true, &Error{fmt.Sprintf("old_text was not found as written; its first and last lines match %d places (lines %s) with other lines between: copy old_text from the file as it is",
			len(found), lineNumbers(found))}
	}
	r, err := e.byIndent([]int{found[0] - 1}, false)
	if err != nil {
		return nil, true, err
	}
	r.Level = Anchored
	what := "line %s of the file differed from old_text and was replaced as well: check the diff"
	if len(differs) > 1 {
		what = "lines %s of the file differed from old_text and were replaced as well: check the diff"
	}
	r.Note = fmt.Sprintf(what, lineNumbers(differs))
	return r, true, nil
}

// distinctive is an anchor line worth anchoring to: more than a closing
// brace or a keyword alone.
func distinctive(l string) bool {
	return len(strings.Trim(l, "{}()[];, \t")) >= 8
}

func lineNumbers(ls []int) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprint(l)
	}
	return strings.Join(parts, ", ")
}
