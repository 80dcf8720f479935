package runner

import (
	"errors"
	"io"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/guardian"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// Started is a long-lived program Start started (a background job): in the
// sandbox its Proc names, with no deadline, ended by Stop, by its own
// exit, or with Harvey (its launcher gets SIGKILL when Harvey dies, and
// takes everything it started along).
type Started struct {
	cmd    *exec.Cmd       // a program started here, or
	joined *sandbox.Joined // a command of the session's network (its holder started it)
	sp     *sandbox.Spec
	stop   func() error
	once   sync.Once
	done   chan struct{}
	code   int
}

// starter is the one OS thread that starts long-lived programs: a parent
// death signal follows the thread that started the child, so it is a
// thread that lives as long as Harvey.
var starter = struct {
	once sync.Once
	reqs chan func()
}{reqs: make(chan func())}

func onStarterThread(f func()) {
	starter.once.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives with Harvey
			for r := range starter.reqs {
				r()
			}
		}()
	})
	done := make(chan struct{})
	starter.reqs <- func() { f(); close(done) }
	<-done
}

// Command makes s ready to start as a long-lived program and returns it
// unstarted, with the spec it will run under (nil where there is no
// sandbox here): through the sandbox launcher (its SysProcAttr set) or,
// unsandboxed, as the program itself in a process group of its own; its
// Timeout is ignored. The caller wires its streams (an MCP server's stdio
// transport); Start is the same for a background job.
func Command(s Proc) (*exec.Cmd, *sandbox.Spec, error) {
	if len(s.Argv) == 0 {
		return nil, nil, errors.New("empty command")
	}
	s.Timeout = 0
	argv, env, sp, err := sandboxed(s)
	if err != nil {
		return nil, nil, err
	}
	prog, err := sandboxpolicy.LookPath(argv[0])
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(prog, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir, cmd.Env = s.Dir, env
	SetProcessGroup(cmd)
	if sp != nil {
		cmd.SysProcAttr = sandbox.ProcAttr(*sp)
	}
	return cmd, sp, nil
}

// Start starts s (its Timeout is ignored: a job runs until it ends or is
// stopped) with stdout and stderr going to out, and returns at once.
func Start(s Proc, out io.Writer) (*Started, error) {
	cmd, sp, err := Command(s)
	if err != nil {
		return nil, err
	}
	if sp != nil && sp.Session != "" {
		return startJoined(sp, out) // its holder starts it; cmd is not used
	}
	cmd.Stdout, cmd.Stderr = out, out
	dieWithHarvey(cmd.SysProcAttr, sp)
	p := &Started{cmd: cmd, sp: sp, stop: stopFor(cmd, sp), done: make(chan struct{})}
	onStarterThread(func() { err = cmd.Start() })
	if err != nil {
		return nil, err
	}
	go p.wait()
	return p, nil
}

// startJoined hands the program to the session network's holder. It ends
// with Harvey too: the holder ends it when Harvey's connection closes.
func startJoined(sp *sandbox.Spec, out io.Writer) (*Started, error) {
	j, err := sandbox.StartJoined(*sp, nil, out, out)
	if err != nil {
		return nil, err
	}
	p := &Started{joined: j, sp: sp, done: make(chan struct{}), stop: func() error { j.Stop(); return nil }}
	go func() {
		p.code, _ = j.Wait()
		close(p.done)
	}()
	return p, nil
}

// wait reaps the program, then what it left in its group (and, where
// commands have no PID namespace, what a launcher that died left).
func (p *Started) wait() {
	p.cmd.Wait()
	KillProcessGroup(p.cmd)
	if p.sp != nil && p.sp.NoNS {
		sandbox.EndOrphans()
	}
	p.code = p.cmd.ProcessState.ExitCode()
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		p.code = 128 + int(ws.Signal())
	}
	close(p.done)
}

// Pid is the process whose tree is the program: the one Start started
// (the launcher, in the sandbox), or for a command of the session's
// network, the inner launcher its holder started.
func (p *Started) Pid() int {
	if p.joined != nil {
		return p.joined.Pid()
	}
	return p.cmd.Process.Pid
}

// Done is closed when the program and everything it started have ended.
func (p *Started) Done() <-chan struct{} { return p.done }

// ExitCode is the program's exit status (128+N for signal N), once Done.
func (p *Started) ExitCode() int { return p.code }

// Stop ends the program and everything it started, and waits for that
// (SIGKILL to what is left after two seconds).
func (p *Started) Stop() {
	p.once.Do(func() { p.stop() })
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		if p.cmd != nil {
			KillProcessGroup(p.cmd)
		}
		<-p.done
	}
}

// StartKept starts cmd outside the sandbox, in a session of its own, as a
// program meant to outlive Harvey (the ollama serve it starts for you): its
// guardian (internal/guardian) leaves it running when the session ends.
func StartKept(cmd *exec.Cmd) error {
	SetProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	guardian.Keep(cmd.Process.Pid)
	return nil
}

// RemoveTmp ends what the session started for its commands (the
// session's network, and every command in it) and removes its private
// TMPDIR and the proxy's directory (at exit).
func RemoveTmp() {
	stopSessionNet()
	sandbox.RemoveTmp()
	sandboxpolicy.StopProxy()
}

// StopCommand ends a program Command made and its caller started, with
// everything it started: the way a job is stopped (the launcher's group,
// or its holder asked). Nothing when it never started.
func StopCommand(cmd *exec.Cmd, sp *sandbox.Spec) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return stopFor(cmd, sp)()
}
