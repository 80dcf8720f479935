package guardian

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

// EndOnSignal has the session run end — its jobs, tasks and servers ended
// and checked, as at /exit — when its terminal closes (SIGHUP) or it is
// asked to stop (SIGTERM), put the terminal on standard input back as it
// was now, and exit 128+N. What end has not finished within grace is left
// to the guardian (which ends it all and runs the checks from their
// journals). The function it returns stops watching.
func EndOnSignal(end func(), grace time.Duration) (stop func()) {
	var saved *term.State
	if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
		saved, _ = term.GetState(fd)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			done := make(chan struct{})
			go func() { end(); close(done) }()
			select {
			case <-done:
			case <-time.After(grace):
			}
			if saved != nil {
				_ = term.Restore(int(os.Stdin.Fd()), saved)
			}
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-quit:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(quit)
	}
}
