package termtext

import (
	"bytes"
	"io"
)

// WordWrap passes streamed prose to W broken at word boundaries to the
// terminal's width (Width, asked as each word starts; 0 or less: no
// wrapping), where the terminal would break a word in two. Every byte is
// shown as it comes: a word that reaches the edge is taken back (the line
// shown again from its start without it, its end erased: only a carriage
// return and erase-line, which the terminal's sanitizer lets through) and
// shown again on the next line. Lines inside a fenced code block (```), and a word that
// started a line, pass as they are: code keeps its lines for copying, and
// the terminal wraps those. W must be a terminal.
type WordWrap struct {
	W      io.Writer
	Width  func() int
	width  int    // the width the current word started with
	col    int    // runes on the current output line
	word   []byte // the current word, as shown so far
	wcol   int    // the column the current word started at
	wlen   int    // its runes
	wsp    int    // the spaces shown before it on its line
	shown  []byte // the current output line, as shown
	line   []byte // the current input line's start, to see a fence
	fence  bool   // inside a fenced code block
	spaces int    // spaces read before the next word (kept on its line, dropped at a break)
}

// Write shows p (it fails only with W).
func (w *WordWrap) Write(p []byte) (int, error) {
	var out bytes.Buffer
	for _, c := range p {
		w.step(&out, c)
	}
	if _, err := w.W.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// step adds one byte of input to out.
func (w *WordWrap) step(out *bytes.Buffer, c byte) {
	if c != '\n' && len(w.line) < 3 {
		w.line = append(w.line, c)
	}
	switch {
	case c == '\n':
		out.WriteByte('\n')
		fence := bytes.HasPrefix(bytes.TrimLeft(w.line, " "), []byte("```"))
		if fence {
			w.fence = !w.fence
		}
		w.line, w.col, w.spaces, w.word, w.wlen, w.shown = w.line[:0], 0, 0, w.word[:0], 0, w.shown[:0]
	case w.fence:
		out.WriteByte(c)
	case c == ' ':
		w.word, w.wlen = w.word[:0], 0
		w.spaces++
	default:
		w.char(out, c)
	}
}

// char shows one byte of a word, moving the word to the next line when it
// reaches the edge.
func (w *WordWrap) char(out *bytes.Buffer, c byte) {
	first := c&0xC0 != 0x80 // not a UTF-8 continuation byte: a new rune
	if len(w.word) == 0 {
		w.width = 0
		if w.Width != nil {
			w.width = w.Width()
		}
		if w.width > 0 && w.col > 0 && w.col+w.spaces+1 > w.width {
			out.WriteByte('\n')
			w.col, w.wsp, w.shown = 0, 0, w.shown[:0]
		} else {
			sp := bytes.Repeat([]byte{' '}, w.spaces)
			out.Write(sp)
			w.shown = append(w.shown, sp...)
			w.col += w.spaces
			w.wsp = w.spaces
		}
		w.spaces, w.wcol = 0, w.col
	}
	if first && w.width > 0 && w.col >= w.width && w.wcol > 0 && w.wlen < w.width {
		// The word reached the edge: take it back, show it on the next line.
		keep := w.shown[:len(w.shown)-len(w.word)-w.wsp]
		out.WriteByte('\r')
		out.Write(keep)
		out.WriteString("\x1b[K\n")
		out.Write(w.word)
		w.shown = append(w.shown[:0], w.word...)
		w.col, w.wcol, w.wsp = w.wlen, 0, 0
	}
	out.WriteByte(c)
	w.word = append(w.word, c)
	w.shown = append(w.shown, c)
	if first {
		w.col++
		w.wlen++
	}
}

// Reset starts a new line: others wrote to the terminal meanwhile (a
// tool's lines), which end with a line break.
func (w *WordWrap) Reset() {
	w.col, w.spaces, w.word, w.wlen, w.line, w.shown = 0, 0, w.word[:0], 0, w.line[:0], w.shown[:0]
}
