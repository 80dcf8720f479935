package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/harvey-agent/harvey/internal/lineedit"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// ---- the REPL ----

// promptLine is the REPL's prompt, with the jobs and tasks still running.
func promptLine(g *Gate) string {
	var running []string
	if n := g.jobs.Running(); n > 0 {
		running = append(running, termtext.Plural(n, "job"))
	}
	if n := g.tasks.Running(); n > 0 {
		running = append(running, termtext.Plural(n, "task"))
	}
	if len(running) == 0 {
		return "harvey> "
	}
	return fmt.Sprintf("harvey (%s)> ", strings.Join(running, ", "))
}

// Run is the interactive loop. It returns when the user leaves.
func (a *Agent) Run(ctx context.Context, o Options) error {
	defer a.ollamaStillRunning(&a.Terminal)
	ed := a.editor
	if a.Interactive {
		fmt.Fprintf(a.Err, "Harvey %s — workspace %s. /help for commands, Ctrl-D to leave.\n", Version, a.Workspace.Root)
	}
	for {
		var line string
		var err error
		a.flushLater() // a job that ended meanwhile
		if ed != nil {
			line, err = ed.ReadLine(promptLine(a.gate))
		} else {
			line, err = a.In.ReadLine("")
		}
		if err == io.EOF {
			if a.Interactive {
				fmt.Fprintln(a.Err)
			}
			return nil
		}
		if errors.Is(err, lineedit.ErrCleared) {
			if strings.TrimSpace(line) == "" {
				// A newcomer's Ctrl-C at an empty prompt: say how to leave.
				a.logf("%s", a.dim("· Ctrl-D or /exit leaves Harvey (Ctrl-C drops the line you are typing, and stops a reply or a command)"))
			}
			continue
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "exit", "quit", "/quit", ":q":
			// What people type to leave a shell is not a prompt.
			return nil
		case "y", "n", "a":
			// A late answer to a question that is gone (an approval that
			// timed out, a menu already answered) is not a prompt either,
			// unless the model's last reply asked something.
			if !a.lastReplyAsks() {
				a.logf("%s", a.dim("· nothing is waiting for a y/n answer; type a request, or /help"))
				continue
			}
		}
		if ed != nil {
			ed.remember(line)
		}
		turnCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		turnCtx, a.cancelTurn = context.WithCancel(turnCtx)
		untrap := a.gate.jobs.TrapCtrlZ(func(l string) { a.logf("%s", a.dim("· "+l)) })
		err = a.RunPrompt(turnCtx, line)
		untrap()
		a.cancelTurn()
		a.cancelTurn = nil
		stop()
		if errors.Is(err, ErrExit) {
			return nil
		}
		var failed stepFailed
		if err != nil && !errors.As(err, &failed) { // a failed command said its status already
			a.logf("%s", a.colorize("31", termtext.OneLine(err.Error())))
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// lastReplyAsks reports whether the model's last answer ends with a
// question, so a bare "y" may be the user's reply to it.
func (cv *conversation) lastReplyAsks() bool {
	for i := len(cv.History) - 1; i >= 0; i-- {
		if m := cv.History[i]; m.Role == llm.RoleAssistant && strings.TrimSpace(m.Content) != "" {
			return strings.HasSuffix(strings.TrimRight(m.Content, " \n*_`)"), "?")
		}
	}
	return false
}
