package termtext

import "testing"

// What a model reads of coloured output: no escape sequence, a redrawn
// line as it ended, CRLF as LF.
func TestStripEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[33mwarn\x1b[0m: x\n":                "warn: x\n",
		"a\x1b]0;title\x07b\x1b]52;c;QQ==\x1b\\c": "abc",
		"10%\r50%\r100%\ndone\r\n":                "100%\ndone\n",
		"plain":                                   "plain",
		"\x1b(Bx\x1b[2K\x1b[1;1Hy":                "xy",
	} {
		if got := StripEscapes(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
