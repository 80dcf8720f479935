// Package spinner is the line that shows the model is working while a
// reply is awaited: a frame, a rotating line in the manner of Edward Lear,
// the time so far and the estimate, redrawn in place every 100 ms within
// the terminal's width, cleared by Stop or by the first byte of the reply
// (Writer).
//
// Contract: it writes only to the terminal it is given, one line, never
// wider than the width (a wrapped line cannot be redrawn in place); Stop
// is safe to call more than once, and on a nil Spinner.
package spinner

import (
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// learMessages rotate while the model thinks, in the manner of Edward Lear.
var learMessages = []string{
	"The Owl and the Pussy-cat went to sea",
	"Dancing by the light of the moon",
	"Far and few, far and few, are the lands where the Jumblies live",
	"They went to sea in a Sieve, they did",
	"The Pobble who has no toes",
	"The Quangle Wangle's hat is being knitted",
	"The Dong with a luminous Nose is searching",
	"Calico pie, the little birds fly",
	"The Courtship of the Yonghy-Bonghy-Bò continues",
	"A runcible spoon is being polished",
	"The Akond of Swat is considering",
	"Mr and Mrs Discobbolos climb the wall",
}

// Spinner shows progress on a terminal while the model works.
type Spinner struct {
	out      io.Writer
	width    func() int // the terminal's columns, read at every frame (0: unknown)
	estimate time.Duration
	start    time.Time
	stop     chan struct{}
	done     sync.WaitGroup
	once     sync.Once
}

// New starts a spinner on out (a TTY) with an optional estimate.
// width gives the terminal's columns: the line is cut to fit, because a
// line that wraps cannot be redrawn in place (each frame would leave one).
func New(out io.Writer, estimate time.Duration, width func() int) *Spinner {
	s := &Spinner{out: out, width: width, estimate: estimate, start: time.Now(), stop: make(chan struct{})}
	s.done.Add(1)
	go s.run()
	return s
}

func (s *Spinner) run() {
	defer s.done.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	frame := 0
	for {
		select {
		case <-s.stop:
			fmt.Fprint(s.out, "\r\x1b[K")
			return
		case <-t.C:
			el := time.Since(s.start)
			msg := learMessages[int(el/(4*time.Second))%len(learMessages)]
			w := 0
			if s.width != nil {
				w = s.width()
			}
			fmt.Fprintf(s.out, "\r\x1b[K\x1b[2m%s\x1b[0m", frameLine(spinnerFrames[frame%len(spinnerFrames)], msg, timerLabel(el, s.estimate), w))
			frame++
		}
	}
}

// frameLine is one frame in at most width-1 columns (one rune, one
// column: the frames and messages are narrow characters): the message is
// shortened first, then left out; the timer stays.
func frameLine(frame, msg, timer string, width int) string {
	line := frame + " " + msg + "… " + timer
	if width <= 0 || utf8.RuneCountInString(line) < width {
		return line
	}
	room := width - 1 - utf8.RuneCountInString(frame+" … "+timer)
	if room < 4 {
		short := frame + " " + timer
		if r := []rune(short); len(r) >= width {
			return string(r[:max(width-1, 1)])
		}
		return short
	}
	return frame + " " + string([]rune(msg)[:room]) + "… " + timer
}

// Stop clears the spinner line. Safe to call more than once.
func (s *Spinner) Stop() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		close(s.stop)
		s.done.Wait()
	})
}

// timerLabel renders [8s], [8s / ~12s], or [13s] once the estimate is passed.
func timerLabel(elapsed, estimate time.Duration) string {
	e := int(elapsed.Seconds())
	if estimate > 0 && elapsed < estimate {
		return fmt.Sprintf("[%ds / ~%ds]", e, int(estimate.Round(time.Second).Seconds()))
	}
	return fmt.Sprintf("[%ds]", e)
}

// Writer stops the spinner at the first byte written through it to W.
type Writer struct {
	W    io.Writer
	Spin *Spinner
}

func (s *Writer) Write(p []byte) (int, error) {
	if len(p) > 0 {
		s.Spin.Stop()
	}
	return s.W.Write(p)
}
