package termtext

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// Wrap and WrapHanging keep every word, in order, on lines no wider
// than the terminal (/help and the spinner on a 40-column terminal).
func TestWrapText(t *testing.T) {
	for _, c := range []struct {
		s string
		w int
	}{
		{"a bb ccc dddd eeeee ffffff gg h", 20},
		{strings.Repeat("x", 55) + " y zz", 20},
		{"/route add NAME PROVIDER URL MODEL|remove NAME|list|enable NAME|disable NAME", 40},
		{"", 40},
		{"one line when the width is unknown", 0},
	} {
		out := WrapHanging(c.s, c.w, "  ", "    ")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for i, l := range lines {
			if c.w > 0 && utf8.RuneCountInString(l) > c.w {
				t.Fatalf("%q: line %q is over %d columns", c.s, l, c.w)
			}
			if want := map[bool]string{true: "  ", false: "    "}[i == 0]; c.s != "" && !strings.HasPrefix(l, want) {
				t.Fatalf("%q: line %d %q does not start with %q", c.s, i, l, want)
			}
		}
		if strings.Join(strings.Fields(out), "") != strings.Join(strings.Fields(c.s), "") {
			t.Fatalf("%q: words lost or reordered: %q", c.s, out)
		}
		if c.w == 0 && len(lines) != 1 {
			t.Fatalf("unknown width wrapped: %q", out)
		}
	}
}

// What Harvey prints passes through Writer: a clipboard write (OSC 52),
// a screen clear, a cursor move and an 8-bit CSI are shown escaped;
// Harvey's own colours and erase-line pass whole.
func TestWriterSanitizes(t *testing.T) {
	osc := "\x1b]52;c;cHduZWQ=\x07"
	var buf bytes.Buffer
	w := &Writer{W: &buf}
	fmt.Fprintf(w, "\x1b[31mred\x1b[0m tool %s name\r\x1b[K%s\x1b[2J\x1b[1;1H\x9b31m done\n", osc, osc)
	got := buf.String()
	if strings.Contains(got, "\x1b]") || strings.Contains(got, "\x07") || strings.Contains(got, "\x1b[2J") || strings.Contains(got, "\x1b[1;1H") || strings.Contains(got, "\x9b") {
		t.Fatalf("a control sequence passed: %q", got)
	}
	if !strings.Contains(got, "\x1b[31mred\x1b[0m") || !strings.Contains(got, "\r\x1b[K") {
		t.Fatalf("Harvey's own colours were escaped: %q", got)
	}
}

// Sanitize shows escapes, controls and invisible characters, keeps
// newlines and tabs, and leaves clean text as it is.
func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":     "plain\ttext\n",
		"a\x1b]52;c;x\x07b": "a\\e]52;c;x^Gb",
		"rtl\u202eevil":     "rtl<U+202E>evil",
		"zero\u200bwidth":   "zero<U+200B>width",
		"bad\xffbyte":       "bad\uFFFDbyte",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// Counts in words and cuts that say they cut.
func TestWords(t *testing.T) {
	for _, c := range [][2]string{
		{Plural(1, "file"), "1 file"}, {Plural(2, "file"), "2 files"}, {Plural(3, "entry"), "3 entries"},
		{Clip("héllo", 2), "h..."}, {Clip("short", 10), "short"},
		{strings.Join(ClipList([]string{"a", "b", "c"}, 2), ","), "a,b,and 1 more"},
		{QuoteArgv([]string{"git", "commit", "-m", "a b"}), `git commit -m "a b"`},
		{Kilo(950), "950"}, {Kilo(3100), "3.1k"}, {OneLine(" one\ntwo "), "one …"},
	} {
		if c[0] != c[1] {
			t.Errorf("got %q, want %q", c[0], c[1])
		}
	}
	if !IsYes(" YES ") || !IsYes("y") || IsYes("") || IsYes("no") {
		t.Error("IsYes")
	}
}
