package harvey

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/alive"
	"github.com/harvey-agent/harvey/internal/diff"
	"github.com/harvey-agent/harvey/internal/lineedit"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wsfile"
)

// LineReader reads lines from the input (REPL prompts, approvals, menus).
// It is shared so that an approval reads the next typed line.
type LineReader struct {
	mu     sync.Mutex
	sc     *bufio.Scanner
	prompt func(string) (string, error) // set by the terminal line editor
	answer func(string) (string, error) // the editor's reader for questions
	// show, without an editor, is where a question is written before its
	// answer is read (else nothing says what the wait is for).
	show io.Writer
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
// lineedit.ErrInterrupted and Ctrl-D io.EOF: both mean no answer, and neither ends
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
	if question {
		defer alive.QuestionOpens()()
	}
	if question && l.answer != nil {
		return l.answer(prompt)
	}
	if l.prompt != nil {
		return l.prompt(prompt)
	}
	if question && prompt != "" && l.show != nil {
		io.WriteString(l.show, prompt)
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

// requester is who asks for an effect. An "always" is kept per tool and
// requester, so the user's "always" for their own /write never answers for
// a model's write_file, and the kinds that must be asked each time are
// asked each time.
type requester int

const (
	byModel   requester = iota // a tool call (native, or printed as the reply's act)
	byUser                     // the user's own slash command (/write, /apply)
	bySandbox                  // a rerun without the sandbox rule that blocked a command
)

// approvalRequest is what is asked, as data: the tool, who asks, one line
// naming the effect on its real target, and a file change itself (shown as
// a diff only when someone will see it).
type approvalRequest struct {
	tool     string
	who      requester
	action   string         // "write a.go (through link.go)", "run: make test"
	change   *wsfile.Change // a planned file change, or nil
	note     string         // bySandbox: what the sandbox blocked
	question string         // bySandbox: what is asked ("Type yes to allow")
}

// changeApproval asks the approval service about a planned file change of
// tool (a slash command is the user's own): what internal/wsfile's transaction
// asks between plan and commit.
type changeApproval struct {
	p    *approvals
	tool string
}

func (c changeApproval) ApproveChange(ctx context.Context, fc *wsfile.Change) error {
	return c.p.approve(ctx, approvalRequest{tool: c.tool, who: requesterOf(c.tool), action: fc.Action, change: fc})
}

// changeDiff is a planned change as a person sees it: a unified diff of the
// real target.
func changeDiff(fc *wsfile.Change) string {
	return diff.Unified(fc.Target, fc.Old, fc.Content, fc.Existed)
}

// decision is the policy's answer before anyone is asked.
type decision int

const (
	allow   decision = iota
	refused          // nobody can be asked (headless)
	askYNA           // y / n [reason] / a (always)
	askYes           // only the word yes counts
)

// approvals is the one approval service: decide is the policy (--yes,
// "always", who may be asked, headless refusal) and ask the one terminal
// renderer. Every effect that needs a person's yes comes here: tool calls
// (built-in, user, MCP), /write and /apply, printed calls with prose around
// them, and the sandbox's rerun.
type approvals struct {
	auto        bool                 // --yes
	interactive func() bool          // someone is at the terminal
	always      map[approvalKey]bool // "always" answers, this session
	refusedN    int                  // refused headless for want of --yes
	ui          approvalUI           // asks; used only when interactive
	// expect, when set, is the only policy (the model check): what it
	// accepts runs, anything else is refused and counted in offTask.
	expect  func(approvalRequest) bool
	offTask []string
	// observe, when set, hears every decision: approved or not, and by
	// whom (--output json|stream-json reports them).
	observe func(r approvalRequest, approved bool, by string)
}

type approvalKey struct {
	who  requester
	tool string
}

// approvalUI asks one question of the user.
type approvalUI interface {
	ask(ctx context.Context, r approvalRequest, d decision) (answer, error)
}

// answer is what the user said.
type answer struct {
	yes, always bool
	reason      string // the words after "n", for the model
}

func newApprovals(interactive func() bool, ui approvalUI) *approvals {
	return &approvals{interactive: interactive, always: map[approvalKey]bool{}, ui: ui}
}

// decide is the policy table.
func (p *approvals) decide(r approvalRequest) decision {
	if p.expect != nil {
		if r.who != bySandbox && p.expect(r) {
			return allow
		}
		return refused
	}
	switch r.who {
	case bySandbox:
		if !p.interactive() {
			return refused
		}
		return askYes
	}
	if p.auto || p.always[approvalKey{r.who, r.tool}] {
		return allow
	}
	if !p.interactive() {
		return refused
	}
	return askYNA
}

// approve decides and, when the policy says so, asks. A refusal or a "no"
// is ErrDenied with a message for the model (the user's reason included).
func (p *approvals) approve(ctx context.Context, r approvalRequest) error {
	d := p.decide(r)
	err := p.answer(ctx, r, d)
	if p.observe != nil {
		by := "user"
		switch {
		case d == allow && p.expect != nil:
			by = "the task"
		case d == allow && p.auto:
			by = "--yes"
		case d == allow:
			by = "always"
		case d == refused:
			by = "headless"
		}
		p.observe(r, err == nil, by)
	}
	return err
}

// answer is the decision d made: allowed, refused, or asked.
func (p *approvals) answer(ctx context.Context, r approvalRequest, d decision) error {
	switch d {
	case allow:
		return nil
	case refused:
		if p.expect != nil {
			p.offTask = append(p.offTask, r.action)
			return fmt.Errorf("%w: %s was not run: the model check runs only the call its task asks for", refusal.ErrDenied, r.action)
		}
		switch r.who {
		case bySandbox:
			return fmt.Errorf("%w: the sandbox's rules are lifted only by a person at the terminal", refusal.ErrDenied)
		}
		p.refusedN++
		return fmt.Errorf("%w: %s needs approval; headless mode refuses it unless harvey runs with --yes", refusal.ErrDenied, r.tool)
	}
	ans, err := p.ui.ask(ctx, r, d)
	switch {
	case err != nil:
		return err
	case ans.yes:
		if ans.always && d == askYNA {
			p.always[approvalKey{r.who, r.tool}] = true
		}
		return nil
	case ans.reason != "":
		// The user's words go to the model, marked as theirs.
		return fmt.Errorf("%w: the user declined %s, saying: %q", refusal.ErrDenied, r.action, ans.reason)
	}
	return fmt.Errorf("%w: the user declined %s", refusal.ErrDenied, r.action)
}

// requesterOf: a slash command is the user's own; a tool name is a model's.
func requesterOf(tool string) requester {
	if strings.HasPrefix(tool, "/") {
		return byUser
	}
	return byModel
}

// terminalAsker is the one renderer: the action, a preview (a diff), and
// the question the decision calls for.
type terminalAsker struct {
	tm        *Terminal // the person asked (In, Err, colour, width)
	interrupt func()    // Ctrl-C at a question also stops the turn
}

func (t *terminalAsker) ask(ctx context.Context, r approvalRequest, d decision) (answer, error) {
	if d == askYes {
		return t.askYes(r), nil
	}
	head := r.action
	fmt.Fprintf(t.tm.Err, "%s %s\n", t.tm.colorize("33", "?"), termtext.Sanitize(head))
	if r.change != nil {
		t.preview(changeDiff(r.change))
	}
	always := d == askYNA
	for {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		ans, err := t.tm.In.Ask(t.question(r.tool, always)) // the width may change between tries
		if errors.Is(err, lineedit.ErrInterrupted) {
			// Ctrl-C: no, and stop the turn (the model is not asked again).
			if t.interrupt != nil {
				t.interrupt()
			}
			return answer{}, fmt.Errorf("%w: the user declined %s and stopped the turn (Ctrl-C)", refusal.ErrDenied, r.action)
		}
		if err != nil {
			return answer{}, fmt.Errorf("%w: no answer (%v)", refusal.ErrDenied, err)
		}
		if a, ok := readAnswer(ans, always); ok {
			return a, nil
		}
		if strings.TrimSpace(ans) == "" {
			// Enter alone: say what each answer means, once more.
			fmt.Fprintln(t.tm.Err, enterAtAllow(r.tool, always))
			continue
		}
		if always {
			fmt.Fprintln(t.tm.Err, "please answer y, n or a")
		} else {
			fmt.Fprintln(t.tm.Err, "please answer y or n")
		}
	}
}

// askYes is the sandbox's question: only "yes" answers it.
func (t *terminalAsker) askYes(r approvalRequest) answer {
	fmt.Fprintf(t.tm.Err, "%s the sandbox blocked: %s\n  %s\n", t.tm.colorize("33", "!"), termtext.Sanitize(r.action), termtext.Sanitize(r.note))
	ans, err := t.tm.In.Ask(r.question)
	if err != nil || strings.ToLower(strings.TrimSpace(ans)) != "yes" {
		return answer{}
	}
	return answer{yes: true}
}

// question is the y/n(/a) question, short on a narrow terminal.
func (t *terminalAsker) question(tool string, always bool) string {
	q := "Allow? [y]es / [n]o [reason] / [a]lways for " + tool + ": "
	if !always {
		q = "Allow? [y]es / [n]o [reason]: "
	}
	if w := t.tm.termWidth(); w > 0 && len(q) >= w {
		q = "Allow " + tool + "? [y/n/a] " // a narrow terminal
		if !always {
			q = "Allow " + tool + "? [y/n] "
		}
	}
	return q
}

// enterAtAllow is what Enter alone at an approval hears: nothing is taken
// as an answer, and what each one does.
func enterAtAllow(tool string, always bool) string {
	s := "Enter alone answers nothing: y runs it once, n refuses it (n REASON tells the model why)"
	if always {
		s += ", a allows " + tool + " for the rest of this session"
	}
	return s + "; Ctrl-C refuses and stops the turn."
}

// readAnswer reads y, n [reason] and (when always is offered) a; ok is
// false for anything else.
func readAnswer(ans string, always bool) (answer, bool) {
	word, reason, _ := strings.Cut(strings.TrimSpace(ans), " ")
	switch strings.ToLower(word) {
	case "y", "yes":
		if reason == "" {
			return answer{yes: true}, true
		}
	case "a", "always":
		if reason == "" && always {
			return answer{yes: true, always: true}, true
		}
	case "n", "no":
		return answer{reason: strings.TrimSpace(reason)}, true
	}
	return answer{}, false
}

// preview prints a diff, bounded.
func (t *terminalAsker) preview(diff string) {
	if diff == "" {
		return
	}
	lines := strings.Split(strings.TrimRight(termtext.Sanitize(diff), "\n"), "\n")
	more := 0
	if len(lines) > maxPreviewLines {
		lines, more = lines[:maxPreviewLines], len(lines)-maxPreviewLines
	}
	for _, line := range lines {
		fmt.Fprintln(t.tm.Err, "  "+colorDiffLine(t.tm.colorize, line))
	}
	if more > 0 {
		fmt.Fprintf(t.tm.Err, "  ... (%s not shown)\n", termtext.Plural(more, "more diff line"))
	}
}

// colorDiffLine colours one line of a diff or of git output the way git
// does on a terminal: added green, removed red, hunk headers cyan, commit
// lines yellow (nothing without colour).
func colorDiffLine(colorize func(code, s string) string, line string) string {
	switch {
	case strings.HasPrefix(line, "+++") || strings.HasPrefix(line, "---"):
		return colorize("1", line)
	case strings.HasPrefix(line, "+"):
		return colorize("32", line)
	case strings.HasPrefix(line, "-"):
		return colorize("31", line)
	case strings.HasPrefix(line, "@@"):
		return colorize("36", line)
	case strings.HasPrefix(line, "commit ") && len(line) >= 47:
		return colorize("33", line)
	}
	return line
}
