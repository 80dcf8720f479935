package harvey

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/term"
)

// The REPL's line editor: golang.org/x/term in raw mode only while a line is
// being read (model output and child processes see a normal terminal),
// history kept in agents/history, Tab completion of commands and workspace
// paths, and Ctrl-C at the prompt clearing the line instead of leaving.

// lineEditor is line editing with history and tab completion on a TTY.
type lineEditor struct {
	ws       *Workspace // for the history file and path completion
	commands commandSet // for command completion
	fd       int
	t        *term.Terminal
	in       *ctrlCReader
	hist     *history
	histRel  string
}

// history is the editor's history, newest first, saved to agents/history.
type history struct{ lines []string }

func (h *history) Add(s string) {
	h.lines = append([]string{s}, h.lines...)
	if len(h.lines) > 1000 {
		h.lines = h.lines[:1000]
	}
}
func (h *history) Len() int        { return len(h.lines) }
func (h *history) At(i int) string { return h.lines[i] }

const historyPath = AgentsDir + "/history"

func newLineEditor(ws *Workspace, commands commandSet) *lineEditor {
	fd := int(os.Stdin.Fd())
	in := &ctrlCReader{r: os.Stdin}
	rw := struct {
		io.Reader
		io.Writer
	}{in, os.Stderr}
	t := term.NewTerminal(rw, "")
	h := &history{}
	if data, err := ws.ReadInternal(historyPath); err == nil {
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		for _, l := range lines {
			if l != "" {
				h.Add(l)
			}
		}
	}
	t.History = h
	ed := &lineEditor{ws: ws, commands: commands, fd: fd, t: t, in: in, hist: h, histRel: historyPath}
	t.AutoCompleteCallback = ed.complete
	return ed
}

// readLine reads the REPL's next line: Ctrl-C clears it, Ctrl-D on an
// empty line leaves (io.EOF).
func (ed *lineEditor) readLine(prompt string) (string, error) {
	return ed.read(prompt, false)
}

// readAnswer reads the answer to a question (an approval, a menu): Ctrl-C
// gives errInterrupted and Ctrl-D io.EOF, and neither ends the session.
func (ed *lineEditor) readAnswer(prompt string) (string, error) {
	return ed.read(prompt, true)
}

// read reads one line in raw mode and restores the terminal after, so
// model output and child processes see a normal terminal.
func (ed *lineEditor) read(prompt string, question bool) (string, error) {
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
	case ed.in.interrupted:
		return "", errInterrupted
	case ed.in.eof:
		return "", io.EOF
	}
	return line, err
}

// remember appends a line to agents/history.
func (ed *lineEditor) remember(line string) {
	if strings.ContainsAny(line, "\n\r") {
		return
	}
	if f, err := ed.ws.OpenInternalAppend(ed.histRel); err == nil {
		f.WriteString(line + "\n")
		f.Close()
	}
}

// complete handles Tab: slash commands, then workspace paths.
func (ed *lineEditor) complete(line string, pos int, key rune) (string, int, bool) {
	if key != '\t' {
		return "", 0, false
	}
	head, tail := line[:pos], line[pos:]
	start := strings.LastIndexAny(head, " \t") + 1
	word := head[start:]
	var cands []string
	isCommand := start == 0 && strings.HasPrefix(word, "/")
	before := strings.Fields(head[:start])
	switch {
	case isCommand:
		for _, n := range ed.commands.names() {
			if strings.HasPrefix("/"+n, word) {
				cands = append(cands, "/"+n+" ")
			}
		}
	case len(before) == 1 && strings.HasPrefix(before[0], "/"):
		// The word after a command: its subcommands, as its usage names
		// them (/git st<Tab> → /git status); else a path.
		if c, ok := ed.commands[strings.ToLower(before[0][1:])]; ok {
			for _, sub := range subcommands(c.Usage) {
				if strings.HasPrefix(sub, word) {
					cands = append(cands, sub+" ")
				}
			}
			isCommand = len(cands) > 0
		}
		if len(cands) == 0 {
			cands = completePath(ed.ws, word)
		}
	default:
		cands = completePath(ed.ws, word)
	}
	if len(cands) == 0 {
		return "", 0, false
	}
	repl := commonPrefix(cands)
	if len(cands) > 1 && repl == word {
		fmt.Fprintf(ed.t, "\n%s\n", strings.Join(cands, "  "))
		return "", 0, false
	}
	if !isCommand && len(cands) == 1 && strings.ContainsAny(repl, " \t'\"") {
		// A name with spaces is quoted the way the commands read it.
		repl = quoteArgv([]string{repl})
	}
	newHead := head[:start] + repl
	return newHead + tail, len(newHead), true
}

// subcommands reads a command's subcommands from its usage line, the one
// place they are written: "/git status|diff|log [ARGS...]" gives status,
// diff, log; "/tools [on|off]" gives on, off; placeholders (NAME) are not
// words to complete.
func subcommands(usage string) []string {
	_, rest, _ := strings.Cut(usage, " ")
	var out []string
	for _, alt := range strings.Split(rest, "|") {
		f := strings.Fields(strings.Trim(strings.TrimSpace(alt), "[]"))
		if len(f) == 0 {
			continue
		}
		w := strings.Trim(f[0], "[]")
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz-") == "" && !contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// completePath completes a workspace path (never into agents/).
func completePath(ws *Workspace, word string) []string {
	dir, base := path.Split(word)
	d := strings.TrimSuffix(dir, "/")
	if d == "" {
		d = "."
	}
	entries, err := readWorkspaceDir(ws, d)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name, base) {
			continue
		}
		name := e.Name
		if e.Mode.IsDir() {
			name += "/"
		}
		out = append(out, dir+name)
	}
	return out
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
// into Ctrl-U (clear the line): the editor would otherwise treat it as end
// of input. At a question Ctrl-C and Ctrl-D end the line as typed "^C" or
// "^D" (so the editor leaves a clean line behind, as after Enter) and are
// noted, so they read as "no" rather than as the end of input. Home and
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
				out = append(out, 21) // Ctrl-U
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
