// Package alive is the terminal's lines redrawn in place, and the rule that
// a question is never covered: a command you watch in the REPL that prints
// nothing for a while gets one dim line (how long it has run, the last
// line it printed), redrawn each second and erased when it prints again or
// ends (Watch); another redrawn line (an MCP call's progress) registers
// its eraser (Show, Hide); while a question waits for an answer
// (QuestionOpens until its answer), none is drawn and one on the screen is
// erased first (Asking says whether one waits).
package alive

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/termtext"
)

// A command that shows it is alive: in the REPL, a command you watch that
// prints nothing for aliveAfter gets one dim line — how long it has run,
// and the last line it printed — redrawn each second and erased when it
// prints again or ends. Headless output never gets it (no echo there).

// aliveAfter is how long a command may be silent before the line shows.
const aliveAfter = 3 * time.Second

// aliveWriter is the terminal a command echoes to, with that line.
type aliveWriter struct {
	mu      sync.Mutex
	w       io.Writer
	width   func() int
	start   time.Time
	lastOut time.Time
	last    string // the last whole line printed
	partial []byte // what follows it
	shown   bool   // the alive line is on the screen
	stop    chan struct{}
	done    sync.WaitGroup
}

// A question is never covered (issue 76): while one waits for your answer
// (an approval, the second question that lifts a sandbox rule, a menu), no
// line redrawn in place — a command's alive line, an MCP call's progress —
// is drawn, and one on the screen is erased before the question is shown.
var (
	asking atomic.Int32 // questions waiting for an answer
	live   sync.Map     // what may be on the screen (an *aliveWriter, a Terminal's progress) → what erases it
)

// QuestionOpens erases the lines redrawn in place and keeps them off until
// the returned function (the answer came) runs.
func QuestionOpens() func() {
	asking.Add(1)
	live.Range(func(_, erase any) bool {
		erase.(func())()
		return true
	})
	return func() { asking.Add(-1) }
}

// Watch wraps w (nil: nothing to watch) until the returned stop.
func Watch(w io.Writer, width func() int) (io.Writer, func()) {
	if w == nil {
		return nil, func() {}
	}
	a := &aliveWriter{w: w, width: width, start: time.Now(), lastOut: time.Now(), stop: make(chan struct{})}
	live.Store(a, func() {
		a.mu.Lock()
		a.clear()
		a.mu.Unlock()
	})
	a.done.Add(1)
	go a.run()
	return a, func() {
		close(a.stop)
		a.done.Wait()
		live.Delete(a)
	}
}

func (a *aliveWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clear()
	a.lastOut = time.Now()
	a.partial = append(a.partial, p...)
	if i := bytes.LastIndexByte(a.partial, '\n'); i >= 0 {
		lines := strings.Split(strings.TrimRight(string(a.partial[:i]), "\n"), "\n")
		for j := len(lines) - 1; j >= 0; j-- {
			if l := strings.TrimSpace(lines[j]); l != "" {
				a.last = l
				break
			}
		}
		a.partial = append([]byte(nil), a.partial[i+1:]...)
	}
	if len(a.partial) > 4096 {
		a.partial = a.partial[len(a.partial)-4096:]
	}
	return a.w.Write(p)
}

// clear erases the alive line (a.mu held).
func (a *aliveWriter) clear() {
	if a.shown {
		fmt.Fprint(a.w, "\r\x1b[K")
		a.shown = false
	}
}

func (a *aliveWriter) run() {
	defer a.done.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			a.mu.Lock()
			a.clear()
			a.mu.Unlock()
			return
		case <-t.C:
			a.mu.Lock()
			if time.Since(a.lastOut) >= aliveAfter && len(a.partial) == 0 && asking.Load() == 0 {
				fmt.Fprintf(a.w, "\r\x1b[K\x1b[2m%s\x1b[0m", aliveLine(time.Since(a.start), a.last, a.width()))
				a.shown = true
			}
			a.mu.Unlock()
		}
	}
}

// aliveLine is "… running 12 s — last: LINE", cut to the width.
func aliveLine(el time.Duration, last string, width int) string {
	s := fmt.Sprintf("… running %s", el.Round(time.Second))
	if last != "" {
		s += " — last: " + termtext.Sanitize(last)
	}
	if r := []rune(s); width > 1 && len(r) >= width {
		s = string(r[:width-2]) + "…"
	}
	return s
}

// Asking reports whether a question waits for an answer.
func Asking() bool { return asking.Load() > 0 }

// Show registers a line redrawn in place under key, with what erases it.
func Show(key any, erase func()) { live.Store(key, erase) }

// Hide forgets key's line.
func Hide(key any) { live.Delete(key) }
