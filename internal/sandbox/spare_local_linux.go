//go:build linux

package sandbox

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
)

// Harvey's own spare launcher, where commands have no namespaces
// (Landlock only: no session holder to keep one). Every command there
// used to start the whole Harvey binary as its launcher, and wait for its
// start (the runtime, every package's initialisers) before anything of
// its own ran. Harvey keeps one launcher started ahead instead: it waits,
// unconfined and not dumpable, on a socket for its command's spec and
// standard streams, then confines the command exactly as a launcher
// started for it would (launch: Landlock and the signal filter on the
// thread that starts it, the launcher its subreaper). What it cannot know
// ahead it is told with the spec; it reads nothing before. It ends with
// Harvey (its parent death signal, SIGTERM: the launcher's own end of
// everything its command started), and is stopped by SIGTERM as that
// launcher is. The next spare starts while the command runs.

var local struct {
	mu     sync.Mutex
	ready  *spare
	making bool
	wait   chan struct{} // closed when the spare being made is ready (making)
}

// StartSpared hands Harvey's spare launcher the command spec names (a
// spec of this machine's Landlock-only mode, from Wrap), with stdin,
// stdout and stderr as StartJoined takes them, and starts the next spare.
func (s *State) StartSpared(spec Spec, stdin io.Reader, stdout, stderr io.Writer) (*Joined, error) {
	if !spec.NoNS || spec.NoLandlock || spec.Session != "" || s.self == "" {
		return nil, errors.New("a spare launcher runs Landlock-only commands")
	}
	if spec.Dir == "" {
		// The command's directory is Harvey's now, not when the spare
		// started.
		spec.Dir, _ = os.Getwd()
	}
	j := &Joined{}
	fds, closeAll, err := j.streams(stdin, stdout, stderr)
	if err != nil {
		return nil, err
	}
	defer closeAll() // the command has them once handed over; the copies end when it does
	for try := 0; try < 2; try++ {
		// A spare that died waiting (a command may signal it where
		// Landlock does not scope signals) is replaced once.
		var sp *spare
		if sp, err = s.takeLocalSpare(); err != nil {
			break
		}
		if err = writeMsg(sp.conn, holderMsg{Op: "run", Spec: &spec}, fds); err == nil {
			j.c, j.pid, j.local = sp.conn, sp.cmd.Process.Pid, sp
			return j, nil
		}
		sp.conn.Close()
		sp.cmd.Process.Kill()
		<-sp.done
	}
	closeAll()
	j.copies.Wait()
	return nil, err
}

// takeLocalSpare is the spare started ahead (or the one being started,
// or a new one), and starts the next.
func (s *State) takeLocalSpare() (*spare, error) {
	local.mu.Lock()
	if local.making {
		wait := local.wait
		local.mu.Unlock()
		<-wait
		local.mu.Lock()
	}
	sp := local.ready
	local.ready = nil
	if sp != nil && !alive(sp) {
		sp.conn.Close()
		sp = nil
	}
	if sp == nil {
		local.mu.Unlock()
		var err error
		if sp, err = s.newLocalSpare(); err != nil {
			return nil, err
		}
		local.mu.Lock()
	}
	if !local.making && local.ready == nil {
		local.making, local.wait = true, make(chan struct{})
		go s.refillLocal(local.wait)
	}
	local.mu.Unlock()
	return sp, nil
}

// refillLocal starts the next spare and keeps it ready.
func (s *State) refillLocal(done chan struct{}) {
	next, err := s.newLocalSpare()
	local.mu.Lock()
	if err == nil {
		if local.ready != nil {
			next.cmd.Process.Kill()
		} else {
			local.ready = next
		}
	}
	local.making = false
	local.mu.Unlock()
	close(done)
}

func (s *State) newLocalSpare() (*spare, error) {
	return startSpare(s.self, Spec{Argv: []string{"spare"}, NoNS: true, Spare: true},
		&syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM})
}

// alive reports whether sp is still waiting (not ended).
func alive(sp *spare) bool {
	select {
	case <-sp.done:
		return false
	default:
		return true
	}
}
