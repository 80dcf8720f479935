package harvey

import (
	"path"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/lineedit"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wsfile"
)

// The REPL's line editor (internal/lineedit) as the session uses it: the
// history kept in agents/history, Tab completion of slash commands, their
// subcommands and workspace paths.

// lineEditor is the editor with the workspace its history is kept in.
type lineEditor struct {
	*lineedit.Editor
	ws *Workspace
}

const historyPath = AgentsDir + "/history"

func newLineEditor(ws *Workspace, commands commandSet, models func() []string) *lineEditor {
	var hist []string
	if data, err := ws.ReadInternal(historyPath); err == nil {
		hist = strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	}
	ed := lineedit.New(lineedit.Options{History: hist, Complete: completer(ws, commands, models),
		Quote: func(s string) string { return termtext.QuoteArgv([]string{s}) }})
	return &lineEditor{Editor: ed, ws: ws}
}

// remember appends a line to agents/history.
func (ed *lineEditor) remember(line string) {
	if strings.ContainsAny(line, "\n\r") {
		return
	}
	if f, err := ed.ws.OpenInternalAppend(historyPath); err == nil {
		f.WriteString(line + "\n")
		f.Close()
	}
}

// completer offers, for Tab: slash commands at the start of the line, a
// command's subcommands after it (/git st<Tab> → /git status), the
// installed models after /model (models: nil, none), else workspace paths.
func completer(ws *Workspace, commands commandSet, models func() []string) func(head, word string) ([]string, bool) {
	return func(head, word string) ([]string, bool) {
		var cands []string
		if head == "" && strings.HasPrefix(word, "/") {
			for _, n := range commands.names() {
				if strings.HasPrefix("/"+n, word) {
					cands = append(cands, "/"+n+" ")
				}
			}
			return cands, true
		}
		if before := strings.Fields(head); len(before) == 1 && strings.HasPrefix(before[0], "/") {
			if c, ok := commands[strings.ToLower(before[0][1:])]; ok {
				words := subcommands(c.Usage)
				if c.Name == "model" && models != nil {
					words = append(words, models()...)
				}
				for _, sub := range words {
					if strings.HasPrefix(sub, word) {
						cands = append(cands, sub+" ")
					}
				}
				if len(cands) > 0 {
					return cands, true
				}
			}
		}
		return completePath(ws, word), false
	}
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
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz-") == "" && !slices.Contains(out, w) {
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
	entries, err := wsfile.ReadDir(ws.Tree, d)
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
