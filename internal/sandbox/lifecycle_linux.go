//go:build linux

package sandbox

import (
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A command's life where it has no PID namespace (Landlock only): the
// launcher, their subreaper, ends every process the command left when it
// ends, when Harvey asks (SIGTERM: a timeout, Ctrl-C, a flood of output),
// when Harvey is gone, and at its own deadline (Spec.Timeout, a little
// after Harvey's). Harvey, in this mode the subreaper of its launchers
// (AdoptOrphans), ends what a launcher that died anyway leaves behind
// (EndOrphans): the command's processes carry the signal filter, and so
// its mark.

// launcherGrace is how long after the command's timeout the launcher ends
// it itself, should Harvey not have.
const launcherGrace = 3 * time.Second

// onThreadOfItsOwn runs f on an OS thread locked to it that is not the
// process's leader thread, and waits for it. The thread ends with f's
// goroutine (it is never unlocked), so a thread f confined runs nothing
// else.
func onThreadOfItsOwn(f func()) {
	done := make(chan struct{})
	var run func()
	run = func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The leader: hold it, so the next goroutine gets another.
			go run()
			<-done
			runtime.UnlockOSThread()
			return
		}
		defer close(done)
		f()
	}
	go run()
	<-done
}

// endOnSignal ends the command and everything it started on SIGTERM,
// SIGINT or SIGHUP, when Harvey (pid harvey) exits, and at the spec's
// deadline; what it returns stops watching.
func endOnSignal(cmd *exec.Cmd, spec Spec, harvey int) func() {
	var once sync.Once
	end := func() {
		once.Do(func() {
			// The command's whole tree now (its own wait then returns, and
			// killDescendants ends what forked meanwhile).
			_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
			for _, k := range treeUnder(os.Getpid(), nil) {
				_ = unix.Kill(k, unix.SIGKILL)
			}
		})
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	quit := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			end()
		case <-quit:
		}
	}()
	go watchParent(harvey, quit, end)
	var timer *time.Timer
	if spec.Timeout > 0 {
		timer = time.AfterFunc(time.Duration(spec.Timeout)*time.Millisecond+launcherGrace, end)
		if spareReport != nil {
			go keepOnAsked(spareReport, timer)
		}
	}
	return func() {
		signal.Stop(sigs)
		close(quit)
		if timer != nil {
			timer.Stop()
		}
	}
}

// keepOnAsked stops the deadline when Harvey says on c (its spare's
// socket) that the command was moved to the background (Joined.Keep).
func keepOnAsked(c *net.UnixConn, deadline *time.Timer) {
	for {
		var m holderMsg
		fds, err := readMsg(c, &m)
		closeFds(fds)
		if err != nil {
			return
		}
		if m.Op == "keep" {
			deadline.Stop()
		}
	}
}

// watchParent calls end when the process harvey exits (or the launcher
// is no longer its child), until quit closes.
func watchParent(harvey int, quit <-chan struct{}, end func()) {
	if fd, err := unix.PidfdOpen(harvey, 0); err == nil {
		defer unix.Close(fd)
		for {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 250)
			if n > 0 {
				end()
				return
			}
			if err != nil && err != unix.EINTR {
				break
			}
			select {
			case <-quit:
				return
			default:
			}
		}
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
			if os.Getppid() != harvey {
				end()
				return
			}
		}
	}
}

// killDescendants kills what the command left behind (the launcher is
// their subreaper when there is no PID namespace), the whole tree at once
// (EndTree), reaps it, and says how many it killed.
func killDescendants() int {
	return EndTree(nil)
}

// AdoptOrphans makes this process (Harvey) the subreaper of what its
// launchers start, where commands have no PID namespace: a command whose
// launcher died anyway leaves its processes to Harvey, not to init, and
// EndOrphans ends them.
func AdoptOrphans() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// EndOrphans kills and reaps every child of this process that carries a
// command's mark (no_new_privs and more seccomp filters than this process:
// the launcher's signal filter, which a process can never drop), with all
// it started, the whole tree at once (EndTree); it returns how many it
// ended. Launchers are never marked (their leader thread is not the
// confined one), nor is any program Harvey starts outside the sandbox.
func EndOrphans() int {
	own, _, ok := seccompFilters(os.Getpid())
	if !ok {
		return 0
	}
	return EndTree(func(k int) bool {
		n, nnp, ok := seccompFilters(k)
		return ok && nnp && n > own
	})
}
