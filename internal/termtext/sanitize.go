package termtext

import (
	"fmt"
	"io"
	"strings"
	"unicode"
)

// What reaches the terminal is made safe to print: escape sequences and
// other control characters shown escaped, invisible and bidi characters
// made visible (Writer wraps the session's Out and Err).

// Sanitize makes text safe to print: ANSI/OSC escape sequences and
// other control characters are shown escaped (an OSC 52 in a file cannot write
// the clipboard), and bidi overrides, zero-width and Unicode tag characters
// are made visible. Newlines and tabs are kept.
func Sanitize(s string) string {
	// A byte that is not UTF-8 (a raw 0x9b is an 8-bit CSI to some
	// terminals) becomes U+FFFD first.
	s = strings.ToValidUTF8(s, "\uFFFD")
	clean := true
	for _, r := range s {
		if !safeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case safeRune(r):
			b.WriteRune(r)
		case r == 0x1b:
			b.WriteString("\\e")
		case r < 0x20 || r == 0x7f:
			b.WriteString("^" + string(rune(r^0x40)))
		default:
			b.WriteString("<U+" + strings.ToUpper(strings.TrimLeft(hex4(r), "0")) + ">")
		}
	}
	return b.String()
}

// Writer is the one sanitizer for everything Harvey prints: every
// byte written to the terminal (answers, tool names, paths, listings,
// diffs, problem lines, model lists) passes through it. Only the harmless
// sequences Harvey itself uses get through whole — SGR colour (ESC[...m),
// erase-line (ESC[K) and carriage return — and only when complete within
// one write; every other control sequence (OSC 52 clipboard writes, titles,
// cursor moves) is shown escaped, never executed.
type Writer struct{ W io.Writer }

func (t *Writer) Write(p []byte) (int, error) {
	s := string(p)
	var b strings.Builder
	clean := 0 // s[clean:i] is plain text not yet sanitized
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != 0x1b && c != '\r' {
			continue
		}
		b.WriteString(Sanitize(s[clean:i]))
		if c == '\r' {
			b.WriteByte('\r')
			clean = i + 1
			continue
		}
		if n := harmlessCSI(s[i:]); n > 0 {
			b.WriteString(s[i : i+n])
			i += n - 1
			clean = i + 1
			continue
		}
		b.WriteString("\\e")
		clean = i + 1
	}
	b.WriteString(Sanitize(s[clean:]))
	if _, err := io.WriteString(t.W, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// harmlessCSI returns the length of an SGR (ESC[0;31m) or erase-line
// (ESC[K) sequence at the start of s, else 0.
func harmlessCSI(s string) int {
	if len(s) < 3 || s[1] != '[' {
		return 0
	}
	for j := 2; j < len(s) && j < 24; j++ {
		switch c := s[j]; {
		case c >= '0' && c <= '9' || c == ';':
			continue
		case c == 'm' || (c == 'K' && j == 2):
			return j + 1
		default:
			return 0
		}
	}
	return 0
}

func safeRune(r rune) bool {
	if r == '\n' || r == '\t' {
		return true
	}
	if r < 0x20 || r == 0x7f {
		return false
	}
	if r < 0x80 {
		return true
	}
	return printableRune(r)
}

// printableRune rejects C1 controls, bidi controls, zero-width characters and
// tag characters; everything else printable passes.
func printableRune(r rune) bool {
	switch {
	case r >= 0x80 && r < 0xa0: // C1 controls (0x9b is a CSI)
		return false
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return false
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff:
		return false
	case r >= 0xe0000 && r <= 0xe007f:
		return false
	case r == 0xfffd:
		return true
	}
	return unicode.IsPrint(r) || unicode.IsSpace(r)
}

func hex4(r rune) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 6)
	for shift := 20; shift >= 0; shift -= 4 {
		out = append(out, digits[(r>>uint(shift))&0xf])
	}
	return string(out)
}

// QuotePath shows a path safely: control characters escaped.
func QuotePath(p string) string {
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' || (r >= 0x80 && !printableRune(r)) {
			return fmt.Sprintf("%q", p)
		}
	}
	return p
}

// StripEscapes is s without its terminal escape sequences — CSI (colours,
// cursor moves: ESC [ ... final byte), OSC (titles, the clipboard: ESC ]
// ... BEL or ST) and two-byte escapes — and carriage returns that redraw a
// line (a progress bar's): what a model reads of a program's coloured
// output (issue 76). What is left may still hold other control characters;
// Sanitize is for what is shown.
func StripEscapes(s string) string {
	if !strings.ContainsAny(s, "\x1b\r") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r' && i+1 < len(s) && s[i+1] == '\n':
			continue // CRLF: the newline stays
		case c == '\r':
			// A redraw: what follows replaces the line so far.
			text := b.String()
			b.Reset()
			b.WriteString(text[:strings.LastIndexByte(text, '\n')+1])
		case c == 0x1b:
			i = escapeEnd(s, i)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escapeEnd is the index of the last byte of the escape sequence at s[i].
func escapeEnd(s string, i int) int {
	if i+1 >= len(s) {
		return i
	}
	switch s[i+1] {
	case '[': // CSI: parameters, then a final byte
		j := i + 2
		for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
			j++
		}
		return j
	case ']': // OSC: up to BEL or ST
		j := i + 2
		for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
			j++
		}
		if j < len(s) && s[j] == 0x1b {
			j++
		}
		return j
	}
	if strings.IndexByte("()*+-./#%", s[i+1]) >= 0 {
		return i + 2 // a character set's designation: ESC ( B
	}
	return i + 1 // ESC and the one byte after it
}
