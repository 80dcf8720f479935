// Package lineedit is the REPL's line editor: golang.org/x/term in raw mode
// only while a line is being read (model output and child processes see a
// normal terminal), a history, Tab completion from what the caller offers,
// and Ctrl-C at the prompt clearing the line instead of leaving.
//
// Contract: ReadLine returns a line, or io.EOF for Ctrl-D on an empty
// line; ReadAnswer (a question: an approval, a menu) returns a line, or
// ErrInterrupted for Ctrl-C and io.EOF for Ctrl-D, neither of which ends
// the session. The terminal is restored after every read, whatever the
// outcome. Home and End in the spellings terminals and tmux send work.
// The editor reads and writes no file: the caller gives the history and
// is told each line to remember.
package lineedit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// ErrInterrupted is Ctrl-C pressed while a question waits for its answer.
var ErrInterrupted = errors.New("interrupted (Ctrl-C)")

// ErrCleared is Ctrl-C at the REPL's prompt: the line is dropped (ReadLine
// returns what was typed, so the caller knows whether it was empty), and
// the session goes on.
var ErrCleared = errors.New("line dropped (Ctrl-C)")

// Options are what the caller gives the editor.
type Options struct {
	// History is the earlier lines, oldest first (at most the last 1000
	// are kept).
	History []string
	// Complete offers the completions of word, the last word before the
	// cursor; head is the text ahead of it. command says the candidates
	// are commands or subcommands (they are never quoted).
	Complete func(head, word string) (cands []string, command bool)
	// Quote writes a single completed name with spaces or quotes the way
	// the caller's commands read it.
	Quote func(string) string
}

// Editor is line editing with history and tab completion on a TTY.
type Editor struct {
	opts Options
	fd   int
	t    *term.Terminal
	in   *ctrlCReader
	hist *history
}

// history is the editor's history, newest first.
type history struct{ lines []string }

func (h *history) Add(s string) {
	h.lines = append([]string{s}, h.lines...)
	if len(h.lines) > 1000 {
		h.lines = h.lines[:1000]
	}
}

// dropNewest removes the newest line when it is s (a line Ctrl-C dropped
// is not one to recall).
func (h *history) dropNewest(s string) {
	if len(h.lines) > 0 && h.lines[0] == s {
		h.lines = h.lines[1:]
	}
}

func (h *history) Len() int        { return len(h.lines) }
func (h *history) At(i int) string { return h.lines[i] }

// New makes an editor reading the process's stdin and drawing on stderr.
func New(o Options) *Editor {
	fd := int(os.Stdin.Fd())
	in := &ctrlCReader{r: os.Stdin}
	rw := struct {
		io.Reader
		io.Writer
	}{in, os.Stderr}
	t := term.NewTerminal(rw, "")
	h := &history{}
	for _, l := range o.History {
		if l != "" {
			h.Add(l)
		}
	}
	t.History = h
	ed := &Editor{opts: o, fd: fd, t: t, in: in, hist: h}
	t.AutoCompleteCallback = ed.complete
	return ed
}

// ReadLine reads the REPL's next line: Ctrl-C drops it (ErrCleared, with
// what was typed), Ctrl-D on an empty line leaves (io.EOF).
func (ed *Editor) ReadLine(prompt string) (string, error) {
	return ed.read(prompt, false)
}

// ReadAnswer reads the answer to a question (an approval, a menu): Ctrl-C
// gives ErrInterrupted and Ctrl-D io.EOF, and neither ends the session.
func (ed *Editor) ReadAnswer(prompt string) (string, error) {
	return ed.read(prompt, true)
}

// read reads one line in raw mode and restores the terminal after, so
// model output and child processes see a normal terminal.
func (ed *Editor) read(prompt string, question bool) (string, error) {
	old, err := term.MakeRaw(ed.fd)
	if err != nil {
		return "", err
	}
	defer term.Restore(ed.fd, old)
	if w, h, err := term.GetSize(ed.fd); err == nil {
		ed.t.SetSize(w, h)
	}
	ed.t.SetPrompt(prompt)
	ed.in.question, ed.in.interrupted, ed.in.eof = question, false, false
	line, err := ed.t.ReadLine()
	switch {
	case ed.in.interrupted && !question:
		ed.hist.dropNewest(line)
		return strings.TrimSuffix(line, "^C"), ErrCleared
	case ed.in.interrupted:
		return "", ErrInterrupted
	case ed.in.eof:
		return "", io.EOF
	}
	return line, err
}

// complete handles Tab with the caller's candidates: their common prefix,
// or the list when Tab cannot add to the word.
func (ed *Editor) complete(line string, pos int, key rune) (string, int, bool) {
	if key != '\t' || ed.opts.Complete == nil {
		return "", 0, false
	}
	head, tail := line[:pos], line[pos:]
	start := strings.LastIndexAny(head, " \t") + 1
	word := head[start:]
	cands, command := ed.opts.Complete(head[:start], word)
	if len(cands) == 0 {
		return "", 0, false
	}
	repl := commonPrefix(cands)
	if len(cands) > 1 && repl == word {
		fmt.Fprintf(ed.t, "\n%s\n", strings.Join(cands, "  "))
		return "", 0, false
	}
	if !command && len(cands) == 1 && strings.ContainsAny(repl, " \t'\"") && ed.opts.Quote != nil {
		repl = ed.opts.Quote(repl)
	}
	newHead := head[:start] + repl
	return newHead + tail, len(newHead), true
}

func commonPrefix(xs []string) string {
	p := xs[0]
	for _, x := range xs[1:] {
		for !strings.HasPrefix(x, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

// ctrlCReader is the editor's input. At the REPL prompt it turns Ctrl-C
// into End, "^C" and Enter, and notes it (the editor would otherwise treat
// it as end of input): the line stays on screen ending in ^C, as in a
// shell, and is dropped, not sent. At a question Ctrl-C and Ctrl-D end the
// line as typed "^C" or "^D" (so the editor leaves a clean line behind, as
// after Enter) and are noted, so they read as "no" rather than as the end
// of input. Home and
// End keys in the spellings terminals and tmux send (ESC [1~, ESC [7~,
// ESC OH, ...) become the ones the editor knows (ESC [H, ESC [F).
type ctrlCReader struct {
	r           io.Reader
	question    bool
	interrupted bool // Ctrl-C at a question
	eof         bool // Ctrl-D at a question
	pending     []byte
}

var keyAliases = [][2]string{
	{"\x1b[1~", "\x1b[H"}, {"\x1b[7~", "\x1b[H"}, {"\x1bOH", "\x1b[H"},
	{"\x1b[4~", "\x1b[F"}, {"\x1b[8~", "\x1b[F"}, {"\x1bOF", "\x1b[F"},
}

func (c *ctrlCReader) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		buf := make([]byte, len(p))
		n, err := c.r.Read(buf)
		if n == 0 {
			return 0, err
		}
		b := buf[:n]
		if bytes.IndexByte(b, 0x1b) >= 0 {
			for _, k := range keyAliases {
				b = bytes.ReplaceAll(b, []byte(k[0]), []byte(k[1]))
			}
		}
		var out []byte
		for _, ch := range b {
			switch {
			case ch == 3 && !c.question:
				c.interrupted = true
				out = append(out, "\x1b[F^C\r"...)
			case ch == 3 && c.question:
				c.interrupted = true
				out = append(out, 21, '^', 'C', '\r')
			case ch == 4 && c.question:
				c.eof = true
				out = append(out, 21, '^', 'D', '\r')
			default:
				out = append(out, ch)
			}
		}
		c.pending = out
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}
