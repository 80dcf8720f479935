package harvey

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// ErrDenied is returned when an action is not approved: the user declined
// it, or headless mode without --yes cannot ask. The message, which says
// which, goes back to the model.
var ErrDenied = errors.New("not approved")

// LineReader reads lines from the input (REPL prompts, approvals, menus).
// It is shared so that an approval reads the next typed line.
type LineReader struct {
	mu     sync.Mutex
	sc     *bufio.Scanner
	prompt func(string) (string, error) // set by the terminal line editor
	answer func(string) (string, error) // the editor's reader for questions
}

// newLineReader reads lines from r.
func newLineReader(r io.Reader) *LineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &LineReader{sc: sc}
}

// ReadLine shows prompt (on a terminal) and returns the next line.
func (l *LineReader) ReadLine(prompt string) (string, error) {
	return l.read(prompt, false)
}

// Ask reads the answer to a question. On a terminal, Ctrl-C gives
// errInterrupted and Ctrl-D io.EOF: both mean no answer, and neither ends
// the session.
func (l *LineReader) Ask(prompt string) (string, error) {
	return l.read(prompt, true)
}

func (l *LineReader) read(prompt string, question bool) (string, error) {
	if l == nil {
		return "", io.EOF
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if question && l.answer != nil {
		return l.answer(prompt)
	}
	if l.prompt != nil {
		return l.prompt(prompt)
	}
	if !l.sc.Scan() {
		if err := l.sc.Err(); err != nil {
			return "", err
		}
		return "", io.EOF
	}
	return strings.TrimRight(l.sc.Text(), "\r"), nil
}

// maxPreviewLines bounds the diff an approval prints (a new 4 MB file
// would be 100,000 lines); the rest is counted.
const maxPreviewLines = 400

// confirm asks the user before a tool acts. Read-only tools never get here.
// In the REPL it shows the action and preview and accepts y (yes), n (no,
// and the model is told) or a (always, for this tool, this session).
// Headless, the action is refused unless --yes was given.
func (a *Agent) confirm(ctx context.Context, tool, action, preview string) error {
	if a.AutoApprove || a.approved[tool] {
		return nil
	}
	if !a.Interactive {
		a.unapproved++
		return fmt.Errorf("%w: %s needs approval; headless mode refuses it unless harvey runs with --yes", ErrDenied, tool)
	}
	return a.ask(ctx, tool, action, preview, true)
}

// confirmRecovered asks before running a call recovered from a reply that
// also holds prose: the model may only have quoted it (an example, a
// "do not run this"). Neither --yes nor an earlier "always" answers for it,
// and headless it is refused: a printed call runs unasked only when it is
// the whole reply (docs/tool-call-recovery.md).
func (a *Agent) confirmRecovered(ctx context.Context, tool, summary string) error {
	what := strings.TrimSpace(tool + " " + summary)
	if !a.Interactive {
		a.unapproved++
		return fmt.Errorf("%w: %s was not run: it was recovered from a reply with prose around it, which may only quote it; a printed call runs headless only when it is the whole reply — send the call alone, or as a tool call", ErrDenied, what)
	}
	return a.ask(ctx, tool, "recovered from text: run "+what+"? (the reply also has prose around it: it may only be an example)", "", false)
}

// ask is the one terminal question for an approval: the action, a preview
// (a diff), and y / n [reason] / a (always, when offered).
func (a *Agent) ask(ctx context.Context, tool, action, preview string, always bool) error {
	fmt.Fprintf(a.Err, "%s %s\n", a.colorize("33", "?"), sanitizeForTerminal(action))
	if preview != "" {
		lines := strings.Split(strings.TrimRight(sanitizeForTerminal(preview), "\n"), "\n")
		more := 0
		if len(lines) > maxPreviewLines {
			lines, more = lines[:maxPreviewLines], len(lines)-maxPreviewLines
		}
		for _, line := range lines {
			fmt.Fprintln(a.Err, "  "+a.colorDiffLine(line))
		}
		if more > 0 {
			fmt.Fprintf(a.Err, "  ... (%s not shown)\n", plural(more, "more diff line"))
		}
	}
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		q := "Allow? [y]es / [n]o [reason] / [a]lways for " + tool + ": "
		if !always {
			q = "Allow? [y]es / [n]o [reason]: "
		}
		if w := a.termWidth(); w > 0 && len(q) >= w {
			q = "Allow " + tool + "? [y/n/a] " // a narrow terminal
			if !always {
				q = "Allow " + tool + "? [y/n] "
			}
		}
		ans, err := a.In.Ask(q)
		if errors.Is(err, errInterrupted) {
			// Ctrl-C: no, and stop the turn (the model is not asked again).
			if a.cancelTurn != nil {
				a.cancelTurn()
			}
			return fmt.Errorf("%w: the user declined %s and stopped the turn (Ctrl-C)", ErrDenied, action)
		}
		if err != nil {
			return fmt.Errorf("%w: no answer (%v)", ErrDenied, err)
		}
		ans = strings.TrimSpace(ans)
		word, reason, _ := strings.Cut(ans, " ")
		switch strings.ToLower(word) {
		case "y", "yes":
			if reason == "" {
				return nil
			}
		case "a", "always":
			if reason == "" && always {
				a.approved[tool] = true
				return nil
			}
		case "n", "no":
			if reason = strings.TrimSpace(reason); reason != "" {
				// The user's words go to the model, marked as theirs.
				return fmt.Errorf("%w: the user declined %s, saying: %q", ErrDenied, action, reason)
			}
			return fmt.Errorf("%w: the user declined %s", ErrDenied, action)
		}
		if always {
			fmt.Fprintln(a.Err, "please answer y, n or a")
		} else {
			fmt.Fprintln(a.Err, "please answer y or n")
		}
	}
}

// colorDiffLine colours one line of a diff or of git output the way git
// does on a terminal: added green, removed red, hunk headers cyan, commit
// lines yellow (nothing without colour).
func (a *Agent) colorDiffLine(line string) string {
	switch {
	case strings.HasPrefix(line, "+++") || strings.HasPrefix(line, "---"):
		return a.colorize("1", line)
	case strings.HasPrefix(line, "+"):
		return a.colorize("32", line)
	case strings.HasPrefix(line, "-"):
		return a.colorize("31", line)
	case strings.HasPrefix(line, "@@"):
		return a.colorize("36", line)
	case strings.HasPrefix(line, "commit ") && len(line) >= 47:
		return a.colorize("33", line)
	}
	return line
}
