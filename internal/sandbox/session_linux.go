//go:build linux

package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

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
	// Layers (prepare, to a spare): the cache layers to make ahead.
	Layers []CacheLayer `json:"layers,omitempty"`
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
	inners   map[int]*exec.Cmd // the commands running, by their run number
	forwards map[string]bool
	spares   chan *spare // one inner launcher started ahead, waiting for its command
	making   bool        // one is being started (under mu)
	handout  sync.Mutex  // held while a spare is taken or prepared
	runs     int         // commands started (under mu)
}

// prepareAfter is how long the session stays idle after a command before
// the spare makes that command's cache layers ahead.
const prepareAfter = 30 * time.Millisecond

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
		if sp != nil {
			sp.cmd.Process.Kill()
		}
	default:
	}
	return 0
}

// serve answers one connection, from a process of the user's only.
func (h *holder) serve(c *net.UnixConn) {
	_, ok := peerOf(c)
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
		h.run(c, m.Spec, fds)
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
func (h *holder) run(c *net.UnixConn, spec *Spec, fds []int) {
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
	h.runs++
	id := h.runs
	h.inners[id] = sp.cmd
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
	delete(h.inners, id)
	idle := len(h.inners) == 0
	h.mu.Unlock()
	writeMsg(c, holderReply{Exit: code}, nil)
	if idle && len(spec.Overlays) > 0 {
		// Once the session has stayed idle a moment: commands back to back
		// do better with the spare left as it is.
		h.mu.Lock()
		n := h.runs
		h.mu.Unlock()
		time.AfterFunc(prepareAfter, func() {
			h.mu.Lock()
			still := h.runs == n && len(h.inners) == 0
			h.mu.Unlock()
			if still {
				h.prepare(spec.Overlays)
			}
		})
	}
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
