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
// one more host service), pid (of the inner launcher the client with
// process id Pid started).
type holderMsg struct {
	Op   string `json:"op"`
	Spec *Spec  `json:"spec,omitempty"`
	Port int    `json:"port,omitempty"`
	Addr string `json:"addr,omitempty"`
	Pid  int    `json:"pid,omitempty"`
}

// holderReply answers a request: a command's exit status, a pid, or why not.
type holderReply struct {
	Exit int    `json:"exit"`
	Pid  int    `json:"pid,omitempty"`
	Err  string `json:"err,omitempty"`
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
	h := &holder{self: self, proxy: spec.Proxy, inners: map[int]*exec.Cmd{}, forwards: map[string]bool{}}
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
	case "pid":
		h.mu.Lock()
		r := holderReply{}
		if cmd := h.inners[m.Pid]; cmd != nil {
			r.Pid = cmd.Process.Pid
		}
		h.mu.Unlock()
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
	spec.Inner, spec.Joined, spec.Holder, spec.Session, spec.Network = true, true, false, "", false
	spec.ProxyURL = h.proxyURL
	b, _ := json.Marshal(spec)
	files := []*os.File{os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "stdout"), os.NewFile(uintptr(fds[2]), "stderr")}
	cmd := &exec.Cmd{Path: h.self, Args: []string{h.self, Arg, base64.StdEncoding.EncodeToString(b)}, Env: []string{},
		Stdin: files[0], Stdout: files[1], Stderr: files[2],
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}}
	// The parent death signal follows the thread that starts the child:
	// this goroutine keeps it until the child has ended.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := cmd.Start()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		writeMsg(c, holderReply{Exit: 126, Err: "new namespaces: " + unwrapExecErr(err).Error()}, nil)
		return
	}
	h.mu.Lock()
	h.inners[client] = cmd
	h.mu.Unlock()
	go func() {
		// Any further message (stop) or the client's end ends the command.
		var m holderMsg
		fds, _ := readMsg(c, &m)
		closeFds(fds)
		cmd.Process.Kill()
	}()
	code := exitCode(cmd.Wait())
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
	if _, err := readMsg(c, &r); err != nil {
		fmt.Fprintln(os.Stderr, "harvey sandbox: the session's network ended")
		return 126
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

// SessionPid is the inner launcher (PID 1 of the command's namespace) of
// the command whose client is pid, 0 when it is none of the session's.
func SessionPid(ctl string, pid int) int {
	r, err := ask(ctl, holderMsg{Op: "pid", Pid: pid})
	if err != nil {
		return 0
	}
	return r.Pid
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
