//go:build linux

package sandbox

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The session's network. Every command of a session that has no network
// of the host's runs in one network namespace, so a later command reaches
// a server a background job listens on, as on the user's machine; the
// registry proxy stays the only way out. A holder process owns that
// namespace: Harvey starts it once (Spec.Holder, through the launcher's
// first stage: new user and network namespaces, nothing else), and it
// brings up loopback, listens there for the proxy and for the host
// services the user named (Forwards), and waits on a control socket in a
// directory of Harvey's that no command's root contains.
//
// A command joins (Spec.Session): Harvey starts the launcher's small
// client, which hands the holder the command's spec and its standard
// input, output and error, and waits for its exit status. The holder
// starts the inner launcher in new mount and PID namespaces in its own
// network, exactly as the first stage otherwise would, and kills it (and
// so everything in its PID namespace) when the client asks (SIGTERM to the
// client: a timeout, Ctrl-C) or goes away, and before it replies, so the
// client's exit means every process of the command has ended. Harvey
// reaches a port of the session (/ports) by asking the holder to dial it.
// The holder ends with Harvey (a parent death signal, and the end of its
// standard input), and every command with it.

// holderMsg is one request on the control socket: run (Spec, with the
// client's standard input, output and error), stop (the command run on
// this connection), dial (Port, on the session's loopback), forward (Addr:
// one more host service).
type holderMsg struct {
	Op   string `json:"op"`
	Spec *Spec  `json:"spec,omitempty"`
	Port int    `json:"port,omitempty"`
	Addr string `json:"addr,omitempty"`
}

// holderReply answers a request: a command's exit status, a pid, or why not.
type holderReply struct {
	Exit int    `json:"exit"`
	Pid  int    `json:"pid,omitempty"`
	Err  string `json:"err,omitempty"`
	// Started: the command's inner launcher (Pid) has its spec; its exit
	// status follows in a second reply.
	Started bool `json:"started,omitempty"`
}

// maxHolderMsg bounds one message (a spec names a few hundred paths).
const maxHolderMsg = 8 << 20

// writeMsg sends v as one message (a length, then JSON), with fds attached.
func writeMsg(c *net.UnixConn, v any, fds []int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := c.WriteMsgUnix(binary.BigEndian.AppendUint32(nil, uint32(len(b))), oob, nil); err != nil {
		return err
	}
	_, err = c.Write(b)
	return err
}

// readMsg reads one message into v, with the descriptors that came with
// it (received close-on-exec).
func readMsg(c *net.UnixConn, v any) ([]int, error) {
	hdr := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(hdr, oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	if oobn > 0 {
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if got, err := unix.ParseUnixRights(&m); err == nil {
					fds = append(fds, got...)
				}
			}
		}
	}
	fail := func(err error) ([]int, error) {
		closeFds(fds)
		return nil, err
	}
	if n == 0 {
		return fail(io.EOF)
	}
	if _, err := io.ReadFull(c, hdr[n:]); err != nil {
		return fail(err)
	}
	size := binary.BigEndian.Uint32(hdr)
	if size > maxHolderMsg {
		return fail(errors.New("message too long"))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		return fail(err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fail(err)
	}
	return fds, nil
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// holder is the session network's process.
type holder struct {
	self     string
	proxyURL string
	proxy    string // the registry proxy's unix socket
	mu       sync.Mutex
	inners   map[int]*exec.Cmd // by the pid of the client that asked
	forwards map[string]bool
	spares   chan *spare // one inner launcher started ahead, waiting for its command
	making   bool        // one is being started (under mu)
}

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
	b, _ := json.Marshal(Spec{Argv: []string{"spare"}, Inner: true, Spare: true})
	sp := &spare{conn: fc.(*net.UnixConn), done: make(chan struct{}),
		cmd: &exec.Cmd{Path: h.self, Args: []string{h.self, Arg, base64.StdEncoding.EncodeToString(b)}, Env: []string{},
			ExtraFiles:  []*os.File{theirs},
			SysProcAttr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}}}
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
// command's inner launcher (the holder gone first: nothing to do).
func runSpare() int {
	// What needs no spec is done while it waits: the mount namespace made
	// private, and the check os/exec makes once per process (a throw-away
	// child).
	if unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") == nil {
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
	fds, err := readMsg(c, &m)
	if err != nil || m.Spec == nil || len(fds) != 3 {
		closeFds(fds)
		return 0
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

// runHolder is the holder's main: loopback, the proxy's port, the host
// services, then the control socket; it answers until its standard input
// ends (Harvey closed it, or is gone), then ends every command.
func runHolder(spec Spec) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "harvey sandbox: the session's network: %v\n", err)
		return 126
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	if err := loopbackUp(); err != nil {
		return fail(err)
	}
	h := &holder{self: self, proxy: spec.Proxy, inners: map[int]*exec.Cmd{}, forwards: map[string]bool{}, spares: make(chan *spare, 1)}
	if spec.Proxy != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(err)
		}
		go forwardEach(ln, func() (net.Conn, error) { return net.Dial("unix", spec.Proxy) })
		h.proxyURL = "http://" + ln.Addr().String()
	}
	for _, f := range spec.Forwards {
		if err := h.forward(f); err != nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
		}
	}
	os.Remove(spec.Session)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: spec.Session, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	os.Chmod(spec.Session, 0o600)
	h.making = true
	go h.refill()
	fmt.Fprintln(os.Stdout, "ready")
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			go h.serve(c)
		}
	}()
	io.Copy(io.Discard, os.Stdin)
	ln.Close()
	os.Remove(spec.Session)
	h.mu.Lock()
	for _, cmd := range h.inners {
		cmd.Process.Kill()
	}
	h.mu.Unlock()
	select {
	case sp := <-h.spares:
		sp.cmd.Process.Kill()
	default:
	}
	return 0
}

// serve answers one connection, from a process of the user's only.
func (h *holder) serve(c *net.UnixConn) {
	peer, ok := peerOf(c)
	if !ok {
		c.Close()
		return
	}
	var m holderMsg
	fds, err := readMsg(c, &m)
	if err != nil {
		c.Close()
		return
	}
	switch m.Op {
	case "run":
		h.run(c, m.Spec, fds, int(peer.Pid))
		return
	case "dial":
		h.dial(c, m.Port)
		return
	case "forward":
		r := holderReply{}
		if err := h.forward(m.Addr); err != nil {
			r.Err = err.Error()
		}
		writeMsg(c, r, nil)
	}
	closeFds(fds)
	c.Close()
}

// peerOf is the connecting process's credentials, when it is the user.
func peerOf(c *net.UnixConn) (*unix.Ucred, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, false
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil || cred.Uid != uint32(os.Geteuid()) {
		return nil, false
	}
	return cred, true
}

// run starts spec's inner launcher in the session's network, with the
// client's descriptors as its standard input, output and error, ends it
// when the client asks or goes away, and replies with its exit status
// once everything in its PID namespace has ended.
func (h *holder) run(c *net.UnixConn, spec *Spec, fds []int, client int) {
	defer c.Close()
	if spec == nil || len(fds) != 3 {
		closeFds(fds)
		writeMsg(c, holderReply{Exit: 126, Err: "a command needs its spec and three descriptors"}, nil)
		return
	}
	spec.Inner, spec.Joined, spec.Holder, spec.Session, spec.Network, spec.Spare = true, true, false, "", false, false
	spec.ProxyURL = h.proxyURL
	sp, err := h.takeSpare()
	if err == nil {
		err = writeMsg(sp.conn, holderMsg{Op: "run", Spec: spec}, fds)
	}
	closeFds(fds)
	if err != nil {
		if sp != nil {
			sp.conn.Close()
			sp.cmd.Process.Kill()
		}
		writeMsg(c, holderReply{Exit: 126, Err: "new namespaces: " + unwrapExecErr(err).Error()}, nil)
		return
	}
	report := make(chan int, 1)
	go func() {
		var r holderReply
		if _, err := readMsg(sp.conn, &r); err == nil {
			report <- r.Exit
		}
		sp.conn.Close()
	}()
	h.mu.Lock()
	h.inners[client] = sp.cmd
	h.mu.Unlock()
	writeMsg(c, holderReply{Started: true, Pid: sp.cmd.Process.Pid}, nil)
	go func() {
		// Any further message (stop) or the client's end ends the command.
		var m holderMsg
		fds, _ := readMsg(c, &m)
		closeFds(fds)
		select {
		case <-sp.done:
		default:
			sp.cmd.Process.Kill()
		}
	}()
	code := 0
	select {
	case code = <-report: // everything but the launcher has ended; it is exiting
	case <-sp.done:
		code = sp.code
	}
	h.mu.Lock()
	delete(h.inners, client)
	h.mu.Unlock()
	writeMsg(c, holderReply{Exit: code}, nil)
}

// dial connects the caller to a port of the session's loopback.
func (h *holder) dial(c *net.UnixConn, port int) {
	up, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		up, err = net.Dial("tcp", net.JoinHostPort("::1", strconv.Itoa(port)))
	}
	if err != nil {
		writeMsg(c, holderReply{Err: fmt.Sprintf("nothing listens on port %d in the session", port)}, nil)
		c.Close()
		return
	}
	if writeMsg(c, holderReply{}, nil) != nil {
		up.Close()
		c.Close()
		return
	}
	Relay(c, c, up)
}

// forward listens on the session's loopback at addr (a host service the
// user named) and reaches it through the registry proxy, which lets
// through only what the user's config names.
func (h *holder) forward(addr string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.forwards[addr] {
		return nil
	}
	if h.proxy == "" {
		return fmt.Errorf("%s: no registry proxy to reach it through", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s on the session's loopback: %v", addr, err)
	}
	h.forwards[addr] = true
	go forwardEach(ln, func() (net.Conn, error) { return connectThrough(h.proxy, addr) })
	return nil
}

// connectThrough opens a tunnel to addr through the proxy at sock.
func connectThrough(sock, addr string) (net.Conn, error) {
	up, err := net.Dial("unix", sock)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	// Read the answer's head byte by byte: what follows it is the service's.
	var head []byte
	one := make([]byte, 1)
	for len(head) < 4096 {
		if _, err := up.Read(one); err != nil {
			up.Close()
			return nil, err
		}
		head = append(head, one[0])
		if n := len(head); n >= 4 && string(head[n-4:]) == "\r\n\r\n" {
			break
		}
	}
	if len(head) < 12 || string(head[9:12]) != "200" {
		up.Close()
		return nil, fmt.Errorf("the proxy refused %s", addr)
	}
	return up, nil
}

// join is the launcher's first stage for a command of the session's
// network: it hands the holder the spec and its standard input, output
// and error, asks it to stop the command on SIGTERM, SIGINT or SIGHUP, and
// exits with the command's status.
func join(spec Spec) int {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: spec.Session, Net: "unix"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "harvey sandbox: the session's network: %v\n", err)
		return 126
	}
	spec.Session = ""
	if err := writeMsg(c, holderMsg{Op: "run", Spec: &spec}, []int{0, 1, 2}); err != nil {
		fmt.Fprintf(os.Stderr, "harvey sandbox: the session's network: %v\n", err)
		return 126
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		<-sigs
		writeMsg(c, holderMsg{Op: "stop"}, nil)
	}()
	var r holderReply
	for {
		r = holderReply{}
		if _, err := readMsg(c, &r); err != nil {
			fmt.Fprintln(os.Stderr, "harvey sandbox: the session's network ended")
			return 126
		}
		if !r.Started {
			break
		}
	}
	if r.Err != "" {
		fmt.Fprintf(os.Stderr, "harvey sandbox: %s\n", r.Err)
	}
	return r.Exit
}

// ask sends the holder at ctl one request and reads its reply.
func ask(ctl string, m holderMsg) (holderReply, error) {
	var r holderReply
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: ctl, Net: "unix"})
	if err != nil {
		return r, err
	}
	defer c.Close()
	if err := writeMsg(c, m, nil); err != nil {
		return r, err
	}
	if _, err := readMsg(c, &r); err != nil {
		return r, err
	}
	if r.Err != "" {
		return r, errors.New(r.Err)
	}
	return r, nil
}

// SessionForward asks the session's holder at ctl to listen for one more
// host service (addr, as the user's config names it).
func SessionForward(ctl, addr string) error {
	_, err := ask(ctl, holderMsg{Op: "forward", Addr: addr})
	return err
}

// SessionDial connects to a port of the session's loopback.
func SessionDial(ctl string, port int) (net.Conn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: ctl, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := writeMsg(c, holderMsg{Op: "dial", Port: port}, nil); err != nil {
		c.Close()
		return nil, err
	}
	var r holderReply
	if _, err := readMsg(c, &r); err != nil {
		c.Close()
		return nil, err
	}
	if r.Err != "" {
		c.Close()
		return nil, errors.New(r.Err)
	}
	return c, nil
}

// Joined is a command of the session's network that Harvey handed the
// holder itself (no launcher's client between them): StartJoined.
type Joined struct {
	c      *net.UnixConn
	pid    int
	copies sync.WaitGroup
	once   sync.Once
}

// StartJoined hands the holder at spec.Session the command spec names,
// with stdin (nil: /dev/null) as its standard input and stdout and stderr
// as its output (each a pipe copied here, unless it is a file), and
// returns once its inner launcher has it.
func StartJoined(spec Spec, stdin io.Reader, stdout, stderr io.Writer) (*Joined, error) {
	j := &Joined{}
	var theirs, made []*os.File // the command's three; those made here
	closeAll := func() {
		for _, f := range made {
			f.Close()
		}
	}
	add := func(f *os.File, mine bool, err error) error {
		if err != nil {
			return err
		}
		theirs = append(theirs, f)
		if mine {
			made = append(made, f)
		}
		return nil
	}
	err := add(j.input(stdin))
	if err == nil {
		err = add(j.output(stdout))
	}
	if err == nil {
		err = add(j.output(stderr))
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: spec.Session, Net: "unix"})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("the session's network: %v", err)
	}
	j.c = c
	spec.Session = ""
	err = writeMsg(c, holderMsg{Op: "run", Spec: &spec}, []int{int(theirs[0].Fd()), int(theirs[1].Fd()), int(theirs[2].Fd())})
	closeAll() // the command has them now; the copies end when it does
	var r holderReply
	if err == nil {
		_, err = readMsg(c, &r)
	}
	if err == nil && !r.Started {
		err = fmt.Errorf("the session's network: %s", r.Err)
	}
	if err != nil {
		c.Close()
		j.copies.Wait()
		return nil, err
	}
	j.pid = r.Pid
	return j, nil
}

// input is the command's standard input: /dev/null, r itself when it is
// a file, or a pipe fed from r (mine: made here, closed once handed over).
func (j *Joined) input(r io.Reader) (f *os.File, mine bool, err error) {
	if r == nil {
		f, err = os.Open(os.DevNull)
		return f, true, err
	}
	if f, ok := r.(*os.File); ok {
		return f, false, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, false, err
	}
	go func() {
		io.Copy(pw, r)
		pw.Close()
	}()
	return pr, true, nil
}

// output is where the command writes for w: w itself when it is a file,
// else a pipe copied into w until the command's end.
func (j *Joined) output(w io.Writer) (f *os.File, mine bool, err error) {
	if w == nil {
		f, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		return f, true, err
	}
	if f, ok := w.(*os.File); ok {
		return f, false, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, false, err
	}
	j.copies.Add(1)
	go func() {
		defer j.copies.Done()
		io.Copy(w, pr)
		pr.Close()
	}()
	return pw, true, nil
}

// Pid is the command's inner launcher (PID 1 of its namespace).
func (j *Joined) Pid() int { return j.pid }

// Stop asks the holder to end the command and everything it started.
func (j *Joined) Stop() {
	j.once.Do(func() { writeMsg(j.c, holderMsg{Op: "stop"}, nil) })
}

// Wait waits for the command's end (every process of it ended) and its
// output copied, and returns its exit status.
func (j *Joined) Wait() (int, error) {
	var r holderReply
	_, err := readMsg(j.c, &r)
	j.c.Close()
	j.copies.Wait()
	if err != nil {
		return 126, fmt.Errorf("the session's network ended: %v", err)
	}
	return r.Exit, nil
}
