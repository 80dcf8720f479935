//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"syscall"
	"time"
)

// The session network's clients: the launcher's small client for a
// command started as a program (join), the control requests Harvey makes
// (ask: a host service, a port of the session), and a command Harvey hands
// the holder itself (StartJoined).

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

// Joined is a command handed to a launcher that was already running:
// the session's holder (StartJoined), or where there are no namespaces
// Harvey's own spare launcher (StartSpared).
type Joined struct {
	c      *net.UnixConn
	pid    int
	copies sync.WaitGroup
	once   sync.Once
	local  *spare // Harvey's own spare running the command (nil: the holder's)
}

// StartJoined hands the holder at spec.Session the command spec names,
// with stdin (nil: /dev/null) as its standard input and stdout and stderr
// as its output (each a pipe copied here, unless it is a file), and
// returns once its inner launcher has it.
func StartJoined(spec Spec, stdin io.Reader, stdout, stderr io.Writer) (*Joined, error) {
	j := &Joined{}
	theirs, closeAll, err := j.streams(stdin, stdout, stderr)
	if err != nil {
		return nil, err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: spec.Session, Net: "unix"})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("the session's network: %v", err)
	}
	j.c = c
	spec.Session = ""
	err = writeMsg(c, holderMsg{Op: "run", Spec: &spec}, theirs)
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

// streams makes the command's standard input, output and error (their
// descriptors) from stdin, stdout and stderr; closeAll closes those made
// here once the launcher has them.
func (j *Joined) streams(stdin io.Reader, stdout, stderr io.Writer) (fds []int, closeAll func(), err error) {
	var theirs, made []*os.File // the command's three; those made here
	closeAll = func() {
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
	err = add(j.input(stdin))
	if err == nil {
		err = add(j.output(stdout))
	}
	if err == nil && sameWriter(stdout, stderr) {
		// One pipe for both, as os/exec does: the two streams keep the
		// order the command wrote them in.
		theirs = append(theirs, theirs[1])
	} else if err == nil {
		err = add(j.output(stderr))
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	for _, f := range theirs {
		fds = append(fds, int(f.Fd()))
	}
	return fds, closeAll, nil
}

// sameWriter reports whether a and b are one writer (never panicking on a
// type that cannot be compared).
func sameWriter(a, b io.Writer) bool {
	if a == nil || b == nil || !reflect.TypeOf(a).Comparable() || !reflect.TypeOf(b).Comparable() {
		return false
	}
	return a == b
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

// Pid is the command's launcher (the holder's inner one: PID 1 of its
// namespace).
func (j *Joined) Pid() int { return j.pid }

// Stop ends the command and everything it started: the holder is asked
// to; Harvey's own spare is sent SIGTERM, as a launcher Harvey started
// for the command would be.
func (j *Joined) Stop() {
	j.once.Do(func() {
		if j.local != nil {
			// And killed should it not end (stopped, say): what its command
			// left is then Harvey's to end (EndOrphans).
			j.local.cmd.Process.Signal(syscall.SIGTERM)
			go func() {
				select {
				case <-j.local.done:
				case <-time.After(launcherGrace):
					j.local.cmd.Process.Kill()
				}
			}()
			return
		}
		writeMsg(j.c, holderMsg{Op: "stop"}, nil)
	})
}

// Keep lets the command run on past its deadline (it was moved to the
// background): where Harvey's own spare launched it (Landlock only), its
// launcher is told to forget its own deadline (Spec.Timeout; the
// holder's commands have none).
func (j *Joined) Keep() {
	if j.local != nil {
		writeMsg(j.c, holderMsg{Op: "keep"}, nil)
	}
}

// Wait waits for the command's end (every process of it ended) and its
// output copied, and returns its exit status.
func (j *Joined) Wait() (int, error) {
	var r holderReply
	_, err := readMsg(j.c, &r)
	j.c.Close()
	if j.local != nil {
		// Harvey's child: waited for (it exits once it has reported; one
		// killed first reports nothing, and its own status is the answer).
		<-j.local.done
		if err != nil {
			// Killed from outside (the OOM killer): what its command left
			// is Harvey's now (their subreaper), and holds the output's
			// pipes; waiting for them to end by themselves could be
			// forever (a server, sleep infinity).
			EndOrphans()
			j.copies.Wait()
			return j.local.code, nil
		}
	}
	j.copies.Wait()
	if err != nil {
		return 126, fmt.Errorf("the session's network ended: %v", err)
	}
	return r.Exit, nil
}
