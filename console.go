package harvey

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/alive"
	"github.com/harvey-agent/harvey/internal/events"
	"github.com/harvey-agent/harvey/internal/termtext"
	"golang.org/x/term"
)

// The terminal service: the person at the keyboard, and how Harvey writes
// to them — colour when allowed, dim progress lines, tool lines, the width
// for wrapping. The REPL loop that reads from it is terminal.go.

// logf writes a progress line to Err.
func (tm *Terminal) logf(format string, args ...any) {
	fmt.Fprintf(tm.Err, format+"\n", args...)
}

// dim wraps s in the dim colour when colour is on.
func (tm *Terminal) dim(s string) string {
	if tm.Color {
		return "\x1b[2m" + s + "\x1b[0m"
	}
	return s
}

func (tm *Terminal) colorize(code, s string) string {
	if tm.Color {
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	return s
}

// colorAllowed says whether ANSI colour may be written to f.
func colorAllowed(isTTY bool) bool {
	if !isTTY {
		return false
	}
	if os.Getenv("NO_COLOR") != "" { // no-color.org: set and not empty
		return false
	}
	return os.Getenv("TERM") != "dumb"
}

// Terminal is the person at the keyboard: where questions and menus read
// answers (In), where answers go (Out) and where progress, tool activity
// and errors go (Err). Set up once at start (startup.go); In may be
// replaced by tests, nothing else changes during a session.
type Terminal struct {
	In          *LineReader
	Out         io.Writer
	Err         io.Writer
	Interactive bool      // a person at a terminal
	Color       bool      // ANSI colour allowed on Err/Out
	editor      lineInput // the REPL's line editor (lineeditor.go); nil unless stdin is a terminal
	tty         *os.File  // the terminal the user reads (stdout or stderr), for its width; nil headless
	outTTY      bool      // stdout is that terminal (replies are wrapped there, never into a file)
	// progressMu guards the MCP progress line (notifications arrive on the
	// SDK's goroutines while a call runs).
	progressMu    sync.Mutex
	progressShown bool      // a progress line is on the terminal
	progressAt    time.Time // the last one printed headless
	// events receives what a headless run does (--output json or
	// stream-json, internal/events); nil otherwise.
	events *events.Sink
	// later are lines from other goroutines (a background job ended),
	// said between turns (sayLater), never over a turn's output or your
	// typing.
	laterMu sync.Mutex
	later   []string
}

// sayLater keeps a line to say between turns (flushLater).
func (tm *Terminal) sayLater(line string) {
	tm.laterMu.Lock()
	tm.later = append(tm.later, line)
	tm.laterMu.Unlock()
}

// flushLater says the lines kept by sayLater.
func (tm *Terminal) flushLater() {
	tm.laterMu.Lock()
	lines := tm.later
	tm.later = nil
	tm.laterMu.Unlock()
	for _, l := range lines {
		tm.logf("%s", l)
	}
}

// isInteractive reports whether a person is at the terminal to be asked.
func (tm *Terminal) isInteractive() bool { return tm.Interactive }

func (tm *Terminal) note(s string) { tm.logf("%s", tm.dim(s)) }

func (tm *Terminal) warn(s string) { tm.logf("%s", tm.colorize("33", s)) }

func (tm *Terminal) toolLine(prefix, name, summary string) {
	tm.logf("%s %s %s", tm.colorize("36", prefix), termtext.Sanitize(termtext.Flat(name)), termtext.Sanitize(summary))
}

func (tm *Terminal) resultLine(ok bool, summary string, notes []string) {
	mark := tm.colorize("32", "✓")
	if !ok {
		mark = tm.colorize("31", "✗")
	}
	tm.logf("  %s %s", mark, termtext.Sanitize(summary))
	for _, n := range notes {
		tm.logf("    %s", tm.colorize("33", termtext.Sanitize(termtext.OneLine(n))))
	}
}

// termWidth is the width of the terminal the user reads, or 0 when output
// is not a terminal (nothing is wrapped or cut then). Read each time: the
// window can be resized.
func (tm *Terminal) termWidth() int {
	if !tm.Interactive || tm.tty == nil {
		return 0
	}
	if cols, _, err := term.GetSize(int(tm.tty.Fd())); err == nil && cols > 0 {
		return cols
	}
	return 0
}

// lineInput is what the REPL reads lines through when stdin is a terminal:
// the line editor (lineeditor.go), with editing, history and completion.
type lineInput interface {
	ReadLine(prompt string) (string, error)
	remember(line string)
}

// mcpProgress shows a long call's progress notification: on a terminal one
// line redrawn in place (cleared when the call ends); headless a line at
// most every five seconds.
func (tm *Terminal) mcpProgress(server, message string, progress, total float64) {
	line := server + ":"
	if message != "" {
		line += " " + termtext.OneLine(message)
	}
	if total > 0 {
		line += fmt.Sprintf(" (%g/%g)", progress, total)
	} else {
		line += fmt.Sprintf(" (%g)", progress)
	}
	tm.progressMu.Lock()
	defer tm.progressMu.Unlock()
	if tm.tty != nil && alive.Asking() {
		return // a question waits: it is not written over
	}
	if tm.tty != nil {
		fmt.Fprintf(tm.Err, "\r\x1b[K%s", tm.dim("⋯ "+termtext.Sanitize(line)))
		tm.progressShown = true
		alive.Show(tm, tm.mcpProgressDone)
		return
	}
	if time.Since(tm.progressAt) >= 5*time.Second {
		tm.progressAt = time.Now()
		tm.note("  ⋯ " + line)
	}
}

// mcpProgressDone clears a progress line left on the terminal.
func (tm *Terminal) mcpProgressDone() {
	tm.progressMu.Lock()
	defer tm.progressMu.Unlock()
	if tm.progressShown {
		fmt.Fprint(tm.Err, "\r\x1b[K")
		tm.progressShown = false
		alive.Hide(tm)
	}
	tm.progressAt = time.Time{}
}
