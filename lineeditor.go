package harvey

import (
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
	a       *Agent
	fd      int
	t       *term.Terminal
	hist    *history
	histRel string
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

func newLineEditor(a *Agent) *lineEditor {
	fd := int(os.Stdin.Fd())
	rw := struct {
		io.Reader
		io.Writer
	}{&ctrlCReader{r: os.Stdin}, os.Stderr}
	t := term.NewTerminal(rw, "")
	h := &history{}
	if data, err := a.Workspace.ReadInternal(historyPath); err == nil {
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		for _, l := range lines {
			if l != "" {
				h.Add(l)
			}
		}
	}
	t.History = h
	ed := &lineEditor{a: a, fd: fd, t: t, hist: h, histRel: historyPath}
	t.AutoCompleteCallback = ed.complete
	return ed
}

// readLine reads one line in raw mode and restores the terminal after, so
// model output and child processes see a normal terminal.
func (ed *lineEditor) readLine(prompt string) (string, error) {
	old, err := term.MakeRaw(ed.fd)
	if err != nil {
		return "", err
	}
	defer term.Restore(ed.fd, old)
	if w, h, err := term.GetSize(ed.fd); err == nil {
		ed.t.SetSize(w, h)
	}
	ed.t.SetPrompt(prompt)
	return ed.t.ReadLine()
}

// remember appends a line to agents/history.
func (ed *lineEditor) remember(line string) {
	if strings.ContainsAny(line, "\n\r") {
		return
	}
	if f, err := ed.a.Workspace.OpenInternalAppend(ed.histRel); err == nil {
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
	if isCommand {
		for _, n := range ed.a.commandNames() {
			if strings.HasPrefix("/"+n, word) {
				cands = append(cands, "/"+n+" ")
			}
		}
	} else {
		cands = completePath(ed.a.Workspace, word)
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

// ctrlCReader turns Ctrl-C at the prompt into Ctrl-U (clear the line): the
// editor would otherwise treat it as end of input. Ctrl-D on an empty line
// still leaves.
type ctrlCReader struct{ r io.Reader }

func (c *ctrlCReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == 3 {
			p[i] = 21
		}
	}
	return n, err
}

// runSuggestionRE finds `/run CMD` suggestions in prose-mode replies.
