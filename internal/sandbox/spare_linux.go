//go:build linux

package sandbox

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Spare launchers (session_linux.go's holder keeps one ready): an inner
// launcher started before its command is known, which gets its spec and
// standard streams on a socket, and reports its command's end there.

// spare is an inner launcher started before its command is known (in its
// own mount and PID namespaces, its start-up done), waiting on a socket
// for the spec and standard input, output and error: the next command
// does not wait for a program's start.
type spare struct {
	cmd  *exec.Cmd
	conn *net.UnixConn // the holder's end
	done chan struct{} // closed once cmd has ended (code is its status)
	code int
}

// newSpare starts a spare inner launcher.
func (h *holder) newSpare() (*spare, error) {
	return startSpare(h.self, Spec{Argv: []string{"spare"}, Inner: true, Spare: true},
		&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL})
}

// startSpare starts self as a launcher for spec (a spare's), with attr,
// its end of a socket pair on descriptor 3.
func startSpare(self string, spec Spec, attr *syscall.SysProcAttr) (*spare, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "spare"), os.NewFile(uintptr(fds[1]), "holder")
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		theirs.Close()
		return nil, err
	}
	b, _ := json.Marshal(spec)
	sp := &spare{conn: fc.(*net.UnixConn), done: make(chan struct{}),
		cmd: &exec.Cmd{Path: self, Args: []string{self, Arg, base64.StdEncoding.EncodeToString(b)}, Env: []string{},
			ExtraFiles: []*os.File{theirs}, SysProcAttr: attr}}
	started := make(chan error, 1)
	go func() {
		// The parent death signal follows the thread that starts the
		// child: this goroutine keeps it until the child has ended.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := sp.cmd.Start()
		theirs.Close()
		started <- err
		if err != nil {
			return
		}
		sp.code = exitCode(sp.cmd.Wait())
		close(sp.done)
	}()
	if err := <-started; err != nil {
		sp.conn.Close()
		return nil, err
	}
	return sp, nil
}

// takeSpare is the spare started ahead (waiting for the one being
// started, or starting one, when there is none ready), and starts the
// next. (Starting the next only once the command ended was slower for
// commands in a row, even on two cores: the start overlaps the command.)
func (h *holder) takeSpare() (*spare, error) {
	h.handout.Lock()
	defer h.handout.Unlock()
	h.mu.Lock()
	pending := h.making
	h.mu.Unlock()
	var sp *spare
	if pending {
		sp = <-h.spares
	} else {
		select {
		case sp = <-h.spares:
		default:
		}
	}
	if sp != nil {
		select {
		case <-sp.done: // it died waiting
			sp = nil
		default:
		}
	}
	if sp == nil {
		var err error
		if sp, err = h.newSpare(); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	h.making = true
	h.mu.Unlock()
	go h.refill()
	return sp, nil
}

// prepare has the waiting spare make layers ahead (stage_linux.go), when
// no command runs: so no layer is mounted twice at once.
func (h *holder) prepare(layers []CacheLayer) {
	h.handout.Lock()
	defer h.handout.Unlock()
	var sp *spare
	select {
	case sp = <-h.spares:
	default:
		return
	}
	h.mu.Lock()
	idle := len(h.inners) == 0
	h.mu.Unlock()
	if idle && sp != nil {
		writeMsg(sp.conn, holderMsg{Op: "prepare", Layers: layers}, nil)
	}
	h.spares <- sp
}

// refill starts the next spare (h.making is set), and hands it over.
func (h *holder) refill() {
	next, err := h.newSpare()
	h.mu.Lock()
	h.making = false
	h.mu.Unlock()
	if err != nil {
		select {
		case h.spares <- nil:
		default:
		}
		return
	}
	select {
	case h.spares <- next:
	default:
		next.cmd.Process.Kill()
	}
}

// spareReport is where a spare launcher reports its command's end to the
// holder (reportEnd), before its own exit.
var spareReport *net.UnixConn

// reportEnd tells the holder the command's exit status as soon as every
// other process of its namespace has ended (reaped here, PID 1) and the
// launcher holds none of its output: the holder answers Harvey then, not
// after this process's own exit.
func reportEnd(code int) {
	if spareReport == nil {
		return
	}
	for {
		if _, err := unix.Wait4(-1, nil, 0, nil); err != nil && err != unix.EINTR {
			break // ECHILD: none left
		}
	}
	if null, err := unix.Open(os.DevNull, unix.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			unix.Dup3(null, fd, 0)
		}
		unix.Close(null)
	}
	writeMsg(spareReport, holderReply{Exit: code}, nil)
}

// runSpare is a spare launcher's start: it waits on descriptor 3 for its
// command's spec and standard input, output and error, and becomes that
// command's launcher (the holder, or Harvey, gone first: nothing to do).
// nons: Harvey's own spare where there are no namespaces (Landlock only),
// in the host's mount namespace, which it must never touch.
func runSpare(nons bool) int {
	// What needs no spec is done while it waits: the mount namespace made
	// private (an inner spare's own), and the check os/exec makes once per
	// process (a throw-away child). Harvey's spare is not dumpable from
	// its start: a command of the same user cannot read or trace it.
	if nons {
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	} else if unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") == nil {
		mountsPrivate = true
	}
	os.FindProcess(os.Getpid())
	f := os.NewFile(3, "holder")
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return 126
	}
	c := fc.(*net.UnixConn)
	var m holderMsg
	var fds []int
	for {
		m = holderMsg{}
		if fds, err = readMsg(c, &m); err != nil || m.Op != "prepare" || nons {
			break
		}
		stageLayers(m.Layers)
	}
	if err != nil || m.Op != "run" || m.Spec == nil || len(fds) != 3 || m.Spec.Spare || m.Spec.NoNS != nons {
		closeFds(fds)
		return 0
	}
	if !nons {
		unstage(m.Spec.Overlays) // before any mount of its own
	}
	spareReport = c
	for i, fd := range fds {
		if err := unix.Dup3(fd, i, 0); err != nil {
			return 126
		}
		unix.Close(fd)
	}
	return launch(*m.Spec)
}
