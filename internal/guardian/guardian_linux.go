//go:build linux

package guardian

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"golang.org/x/sys/unix"
)

// envKey names the guardian's pid in the session's environment (the
// session takes it out at once: nothing it starts inherits it).
const envKey = "HARVEY_GUARDIAN"

// lineFD is the session's end of the line to its guardian, on which it
// names what it leaves running on purpose (Keep).
const lineFD = 3

// Main makes this process the guardian of a session, where it is not one
// already: it runs the session to its end and returns its exit status and
// true. It returns false in the session itself (which goes on), and where
// the session cannot be started (this process is then the session,
// unguarded, as it would be on another system).
func Main() (int, bool) {
	if _, ok := os.LookupEnv(envKey); ok {
		Guarded() // the session: its mark out of the environment before anything starts
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	return run(exe)
}

// run starts the session (exe, with this process's arguments, environment
// and standard streams) and keeps its end.
func run(exe string) (int, bool) {
	// The session's parent-death signal follows the thread that started
	// it: this one, which lives as long as the guardian.
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != nil {
		return 0, false
	}
	term := saveTerminal()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, false
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT)
	env := append(os.Environ(), envKey+"="+strconv.Itoa(os.Getpid()))
	pid, err := syscall.ForkExec(exe, os.Args, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2, w.Fd()},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM},
	})
	w.Close()
	if err != nil {
		signal.Stop(sigs)
		r.Close()
		return 0, false
	}
	// Writes to a closed standard error fail from now on, rather than kill
	// the guardian before its work is done (the session, started, keeps
	// the default).
	signal.Ignore(unix.SIGPIPE)
	kept := readKept(r)
	target := newTarget(pid)
	go forward(sigs, target, term)
	ws := waitFor(pid)
	target.gone()
	code := finish(pid, ws, term, kept)
	signal.Stop(sigs)
	return code, true
}

// waitFor reaps what comes to the guardian (orphans the session left while
// it ran) until the session itself has ended, and returns its status.
func waitFor(pid int) unix.WaitStatus {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || got == pid {
			return ws
		}
	}
}

// finish ends what the session left and runs the checks it did not live to
// run, puts the terminal back, says what it did, and returns the session's
// exit status (128+N for signal N).
func finish(pid int, ws unix.WaitStatus, term *terminal, kept <-chan map[int]string) int {
	var spare map[int]string
	select {
	case spare = <-kept: // the line closed with the session
	case <-time.After(time.Second):
	}
	ended := sandbox.EndTree(func(p int) bool { return spare[p] == "" || spare[p] != sandbox.ProcStart(p) })
	said := guard.RecoverOf(pid)
	datadir.RemoveTemps(pid)
	term.restore()
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
		line := fmt.Sprintf("harvey: the session was ended by %s", sigName(ws.Signal()))
		if ended > 0 {
			line += fmt.Sprintf("; the %d processes it left were ended", ended)
		}
		fmt.Fprintln(os.Stderr, line)
	}
	for _, l := range said {
		fmt.Fprintln(os.Stderr, l)
	}
	return code
}

// readKept reads the processes the session names on the line (Keep: "pid
// start" each, NUL-terminated) until the line closes, and then hands them
// over, by pid (each with its start time: a pid taken again later is not
// the one kept).
func readKept(r *os.File) <-chan map[int]string {
	out := make(chan map[int]string, 1)
	go func() {
		defer r.Close()
		kept := map[int]string{}
		sc := bufio.NewScanner(r)
		sc.Split(splitNUL)
		for sc.Scan() && len(kept) < 64 {
			p, start, _ := strings.Cut(sc.Text(), " ")
			if pid, err := strconv.Atoi(p); err == nil && start != "" {
				kept[pid] = start
			}
		}
		out <- kept
	}()
	return out
}

// splitNUL splits NUL-terminated records.
func splitNUL(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// sigName is a signal's name as people know it (SIGKILL).
func sigName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}

// target is the session, to signal while it lives (a pidfd where the
// kernel has them: never another process that took its pid).
type target struct {
	mu   sync.Mutex
	pid  int
	fd   int
	done bool
}

func newTarget(pid int) *target {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fd = -1
	}
	return &target{pid: pid, fd: fd}
}

func (t *target) signal(s syscall.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.done:
	case t.fd >= 0:
		_ = unix.PidfdSendSignal(t.fd, s, nil, 0)
	default:
		_ = unix.Kill(t.pid, s)
	}
}

// gone: the session has been reaped; nothing is signalled any more.
func (t *target) gone() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.fd >= 0 {
		unix.Close(t.fd)
	}
}

// forward passes the signals the guardian gets to the session: SIGTERM
// and SIGHUP always (the session runs its end on either; the second of a
// pair is harmless); SIGINT and SIGQUIT only where the guardian is not in
// its terminal's foreground group — there the terminal sent them to the
// whole group, the session with it, and the session decides (a Ctrl-C
// while a reply runs stops the reply, not Harvey).
func forward(sigs <-chan os.Signal, t *target, term *terminal) {
	for s := range sigs {
		sig := s.(syscall.Signal)
		if (sig == unix.SIGINT || sig == unix.SIGQUIT) && term.foreground() {
			continue
		}
		t.signal(sig)
	}
}

// terminal is the guardian's controlling terminal (tty: -1 where it has
// none) and the state of the terminal on standard input when the session
// started (saved: nil where that is no terminal).
type terminal struct {
	tty   int
	saved *unix.Termios
}

func saveTerminal() *terminal {
	t := &terminal{tty: -1}
	if fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err == nil {
		t.tty = fd
	}
	if st, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
		t.saved = st
	}
	return t
}

// foreground reports whether the guardian's process group is its
// terminal's foreground one.
func (t *terminal) foreground() bool {
	if t.tty < 0 {
		return false
	}
	pg, err := unix.IoctlGetInt(t.tty, unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}

// restore puts the terminal on standard input back as it was when the
// session started, where the session left it otherwise (killed in raw
// mode) and the guardian's group still has it in the foreground.
func (t *terminal) restore() {
	if t.saved == nil {
		return
	}
	pg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	if err != nil || pg != unix.Getpgrp() {
		return
	}
	now, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil || *now == *t.saved {
		return
	}
	_ = unix.IoctlSetTermios(0, unix.TCSETS, t.saved)
}

// The session's side.

var line struct {
	sync.Mutex
	f *os.File
}

// Guarded is called first in the session: it returns its guardian's pid (0
// where none watches it), keeps the line to it, and takes the guardian's
// mark out of the environment, so nothing the session starts inherits it.
func Guarded() int {
	v, ok := os.LookupEnv(envKey)
	if !ok {
		return 0
	}
	os.Unsetenv(envKey)
	g, err := strconv.Atoi(v)
	if err != nil || g != os.Getppid() {
		return 0 // not set by this process's guardian
	}
	var st unix.Stat_t
	if unix.Fstat(lineFD, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return 0
	}
	unix.CloseOnExec(lineFD)
	line.Lock()
	line.f = os.NewFile(lineFD, "guardian")
	line.Unlock()
	return g
}

// Keep tells the guardian that process pid, which the session started
// outside the sandbox, is meant to outlive it (the ollama serve it
// started): it and what it starts are not ended with the session.
func Keep(pid int) {
	start := sandbox.ProcStart(pid)
	line.Lock()
	defer line.Unlock()
	if line.f != nil && start != "" {
		_, _ = line.f.Write([]byte(strconv.Itoa(pid) + " " + start + "\x00"))
	}
}
