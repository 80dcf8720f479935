package termtext

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// Text helpers every layer uses: the first line of a
// text, one-line and flat forms for the terminal and the model, counts in
// words, sizes in k.

// FirstLine is the first non-blank line of s.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Wrap breaks s at spaces into lines of at most width columns, each
// starting with indent (a word longer than a line is cut). width 0: one line.
func Wrap(s string, width int, indent string) string {
	return WrapHanging(s, width, indent, indent)
}

// WrapHanging is Wrap with its own indent for the lines after the
// first (a usage line's continuation sits deeper than the next usage).
func WrapHanging(s string, width int, first, rest string) string {
	words := strings.Fields(s)
	if width <= 0 {
		return first + strings.Join(words, " ") + "\n"
	}
	var sb strings.Builder
	indent, lines, cur := first, 0, 0
	room := func() int { return max(width-len([]rune(indent)), 8) }
	newLine := func() {
		sb.WriteString("\n")
		lines++
		indent, cur = rest, 0
	}
	for _, w := range words {
		r := []rune(w)
		for len(r) > room() { // a word longer than a line
			if cur > 0 {
				newLine()
			}
			n := room()
			sb.WriteString(indent + string(r[:n]))
			r = r[n:]
			newLine()
		}
		switch {
		case cur == 0:
			sb.WriteString(indent)
		case cur+1+len(r) > room():
			newLine()
			sb.WriteString(indent)
		default:
			sb.WriteString(" ")
			cur++
		}
		sb.WriteString(string(r))
		cur += len(r)
	}
	if cur > 0 || sb.Len() == 0 {
		sb.WriteString("\n")
	}
	return sb.String()
}

// OneLine folds a message onto one line.
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r", "")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return Sanitize(s)
}

// Flat keeps model-chosen text (a tool name, a path) on the delimiter
// line: control characters become spaces, and it is cut at 120 bytes.
func Flat(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 120 {
		s = strings.ToValidUTF8(s[:120], "") + "..."
	}
	return s
}

// Kilo writes a token count as 950, 3.1k or 131k.
func Kilo(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	}
	return fmt.Sprintf("%dk", (n+500)/1000)
}

// Plural renders "1 problem" or "3 problems" ("1 entry", "2 entries").
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func CountLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// QuoteArgv renders argv for approvals and the audit log, quoting what a
// shell would split, so the user sees exactly the arguments.
func QuoteArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`;&|<>(){}[]*?!#~") {
			parts[i] = strconv.Quote(a)
		} else {
			parts[i] = a
		}
	}
	return strings.Join(parts, " ")
}

// Clip cuts s to n bytes (on a rune boundary), marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// ClipList keeps the first n of l and says how many more there are.
func ClipList(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(slices.Clone(l[:n]), fmt.Sprintf("and %d more", len(l)-n))
}

// IsYes reports whether an answer to a [y/N] question is yes: y or yes,
// in any case (everything else, an empty answer too, is no).
func IsYes(ans string) bool {
	a := strings.ToLower(strings.TrimSpace(ans))
	return a == "y" || a == "yes"
}

// Tone is how a line for the person is shown: as it is (an address to
// copy), a step (dim), something that worked (green), a warning (yellow),
// or what they are asked to do next (cyan). Packages that speak to the
// person through the session's terminal say it in a Tone; the terminal
// chooses the colour.
type Tone int

// The tones of a line.
const (
	Plain Tone = iota
	Note
	Done
	Warn
	Prompt
)

// Size is a byte count as people read it: B, KB, MB or GB, one decimal.
func Size(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	case n < 1<<30:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
}

// IsTTY reports whether x is a terminal (an *os.File on one).
func IsTTY(x any) bool {
	f, ok := x.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
