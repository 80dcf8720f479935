package lineedit

import (
	"io"
	"strings"
	"testing"

	"golang.org/x/term"
)

// Ctrl-C ends the line at the prompt as a shell shows it (End, ^C, Enter:
// dropped, and noted) and is a "no" at a question (as is
// Ctrl-D there); Home and End arrive in the spelling the editor knows.
func TestCtrlCReader(t *testing.T) {
	for _, c := range []struct {
		in        string
		question  bool
		want      string
		interrupt bool
		eof       bool
	}{
		{"ab\x03c", false, "ab\x1b[F^C\rc", true, false},
		{"ab\x03", true, "ab\x15^C\r", true, false},
		{"\x04", true, "\x15^D\r", false, true},
		{"\x1b[1~x\x1bOF", false, "\x1b[Hx\x1b[F", false, false},
	} {
		r := &ctrlCReader{r: strings.NewReader(c.in), question: c.question}
		got, _ := io.ReadAll(r)
		if string(got) != c.want || r.interrupted != c.interrupt || r.eof != c.eof {
			t.Errorf("%q: got %q (interrupted %v, eof %v)", c.in, got, r.interrupted, r.eof)
		}
	}
}

// Tab completes to the candidates' common prefix, lists them when it
// cannot add to the word, quotes a single name with spaces (never a
// command), and keeps what follows the cursor.
func TestComplete(t *testing.T) {
	offer := func(head, word string) ([]string, bool) {
		if head == "" && strings.HasPrefix(word, "/") {
			var cands []string
			for _, c := range []string{"/read ", "/run "} {
				if strings.HasPrefix(c, word) {
					cands = append(cands, c)
				}
			}
			return cands, true
		}
		switch word {
		case "my":
			return []string{"my file.txt"}, false
		case "src/":
			return []string{"src/a.go", "src/b.go"}, false
		}
		return nil, false
	}
	var shown strings.Builder
	ed := &Editor{opts: Options{Complete: offer, Quote: func(s string) string { return "'" + s + "'" }},
		t: term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{strings.NewReader(""), &shown}, "")}
	for _, c := range []struct {
		line string
		pos  int
		want string
		ok   bool
	}{
		{"/r", 2, "/r", false}, // /read and /run: listed
		{"/re", 3, "/read ", true},
		{"cat my", 6, "cat 'my file.txt'", true},
		{"cat src/ -n", 8, "cat src/ -n", false}, // a and b: listed
		{"cat x", 5, "", false},
	} {
		line, _, ok := ed.complete(c.line, c.pos, '\t')
		if ok != c.ok || ok && line != c.want {
			t.Errorf("%q: %q %v, want %q %v", c.line, line, ok, c.want, c.ok)
		}
	}
	if !strings.Contains(shown.String(), "src/a.go  src/b.go") {
		t.Errorf("the list was not shown: %q", shown.String())
	}
	if _, _, ok := ed.complete("cat my", 6, 'x'); ok {
		t.Error("a key other than Tab completed")
	}
}

// The history comes oldest first and is searched newest first.
func TestHistoryOrder(t *testing.T) {
	h := &history{}
	for _, l := range []string{"first", "second"} {
		h.Add(l)
	}
	if h.Len() != 2 || h.At(0) != "second" {
		t.Fatalf("%d %q", h.Len(), h.At(0))
	}
}
