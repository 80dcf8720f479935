package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/outputcap"
	"github.com/harvey-agent/harvey/internal/outputstore"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// Child processes (/run, !, run_command, git): the workspace as working
// directory, stdin from /dev/null, an environment built from an allowlist
// minus anything that looks secret, their own session so a timeout kills the
// whole process group, and output capped while it streams.

// floodLimit stops a child whose output keeps pouring after the cap.
const floodLimit = 16 << 20

// CapWriter keeps the head and the tail of what is written to it within
// limit bytes (the first two fifths, the last three: a test suite's first
// failure and its verdict), counts what it cut from the middle and keeps
// draining so the child never blocks on a full pipe. One that stops at its
// cap keeps the head only. Safe for stdout and stderr together.
type CapWriter struct {
	tee     *streamRedactor // what the user watches (Proc.Echo)
	keep    io.Writer       // the whole output (Proc.Keep)
	mu      sync.Mutex
	buf     []byte // the head
	tail    []byte // the latest bytes past the head (up to twice tailRoom held)
	limit   int
	total   int64
	flood   func() // called once when the cut passes floodLimit
	flooded bool
	// stopAtCap calls flood as soon as the cap is full (cut records it).
	stopAtCap bool
	cut       bool
	moved     io.Writer // the background job's, once moved (move.go): all of it goes there
}

// markerRoom is kept free within the limit for the line that says what
// was cut from the middle.
const markerRoom = 80

// rooms are the head's and the tail's shares of the limit.
func (w *CapWriter) rooms() (head, tail int) {
	if w.stopAtCap || w.limit <= 2*markerRoom {
		return w.limit, 0
	}
	room := w.limit - markerRoom
	return room * 2 / 5, room - room*2/5
}

// dropped is what is in neither the head nor the tail.
func (w *CapWriter) dropped() int64 {
	_, t := w.rooms()
	return w.total - int64(len(w.buf)) - int64(min(len(w.tail), t))
}

// stopped reports whether the child should be killed: a flood, or a full
// cap when the caller wants no more.
func (w *CapWriter) stopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flooded || w.cut
}

func (w *CapWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tee != nil {
		w.tee.Write(p)
	}
	if w.keep != nil {
		w.keep.Write(p)
	}
	if w.moved != nil {
		w.moved.Write(p)
		return len(p), nil
	}
	n := len(p)
	w.total += int64(n)
	h, t := w.rooms()
	if room := h - len(w.buf); room > 0 {
		k := min(room, len(p))
		w.buf, p = append(w.buf, p[:k]...), p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if t > 0 {
		w.tail = append(w.tail, p...)
		if len(w.tail) > 2*t {
			w.tail = append(make([]byte, 0, 2*t), w.tail[len(w.tail)-t:]...)
		}
	}
	if w.stopAtCap && !w.cut && w.flood != nil {
		w.cut = true
		go w.flood()
	}
	if w.dropped() > floodLimit && !w.flooded && !w.cut && w.flood != nil {
		w.flooded = true
		go w.flood()
	}
	return n, nil
}

// Bytes is what was kept — the head, and past a cut the line saying how
// much was cut and the tail (from its first whole line) — and how many
// bytes were cut.
func (w *CapWriter) Bytes() ([]byte, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, t := w.rooms()
	tail := w.tail[max(0, len(w.tail)-t):]
	dropped := w.dropped()
	if dropped == 0 {
		return append(append([]byte(nil), w.buf...), tail...), 0
	}
	if len(tail) == 0 {
		return append([]byte(nil), w.buf...), dropped
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 && i < 512 {
		dropped += int64(i + 1)
		tail = tail[i+1:]
	}
	out := append([]byte(nil), w.buf...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, outputcap.MiddleMarker(dropped)...)
	return append(out, tail...), dropped
}

// Result is what a child process produced.
type Result struct {
	Output []byte // stdout and stderr interleaved, at most the cap
	Stderr []byte // stderr alone, when the spec split it
	// StdoutPart and StderrPart are each stream alone, besides Output,
	// when the spec kept them (KeepStreams), each within the cap.
	StdoutPart, StderrPart []byte
	Note                   string   // one line added after the status (a sandbox refusal)
	Undone                 []string // what the check after the command undid in .git, a line each
	Changed                string   // the files it changed in the workspace, one line ("" when none)
	Blocked                sandboxpolicy.Rule
	Outside                string // with Proc.Refusals: a path outside the sandbox it tried ("": none)
	Dropped                int64  // bytes past the cap (cut from the middle, said in Output, or past the end)
	ExitCode               int
	TimedOut               bool
	Flooded                bool
	Err                    error // could not start, or cancelled
	Duration               time.Duration
	// Kept is where the whole output is kept (Proc.Keep): a result cut to
	// the cap says how to read the rest.
	Kept *outputstore.Ref
	// Moved: the command was moved to the background (Proc.Detach) and
	// runs on; Output is what it printed before.
	Moved *Moved
}

// Text renders the result for the model or the terminal: capped output,
// secrets redacted, and a status line.
func (r Result) Text(limit int) string {
	// A cut in the middle is said where it is (CapWriter.Bytes); one at
	// the end, by the marker after.
	atEnd := r.Dropped > 0 && !bytes.Contains(r.Output, []byte(outputcap.MiddleMarkerPrefix))
	red := []byte(secrets.RedactWindow(string(r.Output)))
	out := outputcap.Cap(red, limit, atEnd)
	status := r.Status()
	if r.Kept != nil && (r.Dropped > 0 || len(red) > limit) {
		status += "\n" + r.Kept.Note()
	}
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	if r.Note != "" {
		status += "\n" + r.Note
	}
	for _, u := range r.Undone {
		status += "\n" + u
	}
	if r.Changed != "" {
		status += "\n" + r.Changed
	}
	return out + status
}

// Notes are the lines after the status for the user: the sandbox rule
// that stopped it, what the check after it undid, the files it changed.
func (r Result) Notes() []string {
	var out []string
	if r.Note != "" {
		out = append(out, r.Note)
	}
	out = append(out, r.Undone...)
	if r.Changed != "" {
		out = append(out, r.Changed)
	}
	return out
}

// Failed reports whether the command did not succeed: a non-zero exit, a
// timeout, a flood, a start that failed or a cancel.
func (r Result) Failed() bool {
	return r.ExitCode != 0 || r.TimedOut || r.Flooded || r.Err != nil
}

// Status is how the command ended, in one bracketed line.
func (r Result) Status() string {
	switch {
	case r.Moved != nil:
		return "[running in the background]"
	case r.Err != nil && errors.Is(r.Err, context.Canceled):
		return "[cancelled]"
	case r.TimedOut:
		return fmt.Sprintf("[timed out after %s; process group killed (a server or watcher that keeps running is a background job: run_command with background: true)]", r.Duration.Round(time.Second))
	case r.Flooded:
		return "[stopped: output flood]"
	case r.Err != nil:
		return "[error: " + r.Err.Error() + "]"
	}
	return fmt.Sprintf("[exit %d]", r.ExitCode)
}

// RunArgv runs argv in dir with the given environment and timeout, stdout
// and stderr interleaved and capped at limit.
func RunArgv(ctx context.Context, dir string, argv []string, env []string, timeout time.Duration, limit int) Result {
	return Run(ctx, Proc{Dir: dir, Argv: argv, Env: env, Timeout: timeout, Limit: limit})
}

// Proc describes one child process.
type Proc struct {
	Dir     string
	Argv    []string
	Env     []string
	Timeout time.Duration
	Limit   int // cap on the output kept (stdout and stderr together unless SplitStderr)
	// SplitStderr keeps stderr apart (at most 4 KB, in Result.Stderr).
	SplitStderr bool
	// StopAtCap kills the child once the cap is full: for programs whose
	// later output is worthless (git log of a long history), not for
	// commands whose exit status matters.
	StopAtCap bool
	// KeepStreams keeps stdout and stderr apart besides the combined
	// output (Result.StdoutPart, StderrPart): read through two pipes,
	// so their lines may interleave a little differently in Output.
	KeepStreams bool
	// Stdin is written to the child's standard input ("" is /dev/null).
	Stdin string
	// Sandbox, when set, runs the command through the sandbox launcher
	// with these rules (argv, dir and env are filled in here).
	Sandbox *sandbox.Spec
	// Echo, when set, gets the output as it arrives, redacted line by line
	// and cut after echoLimit bytes (what the user watches; the result is
	// built as always).
	Echo io.Writer
	// Refusals: Result.Outside names a path outside the sandbox the
	// program tried, whatever its exit status (a hook that logs and goes on).
	Refusals bool
	// Keep gets every byte of the output, past the cap too (an
	// outputstore.Entry: the whole output, for read_output).
	Keep io.Writer
	// Detach: a writer that comes on it while the child runs moves the
	// child to the background there (move.go; nil: never).
	Detach <-chan io.Writer
}

// echoLimit is how much of a command's output is shown while it runs.
const echoLimit = 32 << 10

// streamRedactor passes complete lines to w, redacted (key blocks tracked
// across lines), up to a limit; it never blocks the child.
type streamRedactor struct {
	w       io.Writer
	red     secrets.LineRedactor
	pending []byte
	left    int
	cut     bool
}

func (s *streamRedactor) Write(p []byte) (int, error) {
	s.pending = append(s.pending, p...)
	if i := bytes.LastIndexByte(s.pending, '\n'); i >= 0 {
		s.emit(string(s.pending[:i+1]))
		s.pending = append(s.pending[:0], s.pending[i+1:]...)
	}
	if len(s.pending) > 64<<10 { // a very long line: show it in pieces
		s.emit(string(s.pending))
		s.pending = s.pending[:0]
	}
	return len(p), nil
}

func (s *streamRedactor) emit(text string) {
	if s.cut {
		return
	}
	text = s.red.Text(text)
	if len(text) > s.left {
		text = strings.ToValidUTF8(text[:s.left], "") + "\n[... more output; the whole result follows]\n"
		s.cut = true
	}
	s.left -= len(text)
	io.WriteString(s.w, text)
}

// flush shows the last, unfinished line.
func (s *streamRedactor) flush() {
	if len(s.pending) > 0 {
		s.emit(string(s.pending) + "\n")
		s.pending = nil
	}
}

// Run starts a child as RunArgv describes and waits for it (or, moved to
// the background through s.Detach, returns it as Result.Moved).
func Run(ctx context.Context, s Proc) Result {
	start := time.Now()
	if len(s.Argv) == 0 {
		return Result{Err: errors.New("empty command")}
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = config.DefaultRunTimeout
	}
	argv, env, sp, err := sandboxed(s)
	if err != nil {
		return Result{Err: err, ExitCode: 127}
	}
	prog, err := sandboxpolicy.LookPath(argv[0])
	if err != nil {
		return Result{Err: err, ExitCode: 127}
	}
	l := newLife(ctx, timeout)
	floodCtx, flood := context.WithCancel(l.ctx)
	w := outputWriter(s, flood)
	o := wireStreams(s, w)
	var stdin io.Reader // nil: /dev/null
	if s.Stdin != "" {
		stdin = strings.NewReader(s.Stdin)
	}
	refusedBefore := sandboxpolicy.ProxyRefusals()
	oc, moved := l.follow(func() outcome {
		var oc outcome
		switch {
		case sp != nil && sp.Session != "":
			oc.code, oc.started, oc.err = runJoined(floodCtx, l, w, sp, stdin, o, sandbox.StartJoined)
		case sp != nil && sp.NoNS:
			oc.code, oc.started, oc.err = runJoined(floodCtx, l, w, sp, stdin, o, sandbox.Available().StartSpared)
			sandbox.EndOrphans()
		default:
			oc.code, oc.started, oc.err = runExec(l, floodCtx, w, s.Dir, prog, argv, env, sp, stdin, o)
		}
		return oc
	}, s.Detach, w)
	if moved != nil {
		out, dropped := w.Bytes()
		return Result{Output: out, Dropped: dropped, Duration: time.Since(start), Moved: moved}
	}
	defer flood()
	defer l.cancel(nil)
	if !oc.started {
		return Result{Err: oc.err, ExitCode: 127, Duration: time.Since(start)}
	}
	if w.tee != nil {
		w.mu.Lock()
		w.tee.flush()
		w.mu.Unlock()
	}
	out, dropped := w.Bytes()
	res := Result{Output: out, Dropped: dropped, Duration: time.Since(start), ExitCode: oc.code}
	if o.errw != nil {
		res.Stderr, _ = o.errw.Bytes()
	}
	if sp != nil {
		blockedBy(&res, s, sp, refusedBefore)
	}
	if o.outPart != nil {
		res.StdoutPart, _ = o.outPart.Bytes()
		res.StderrPart, _ = o.errPart.Bytes()
	}
	settle(ctx, l.timedOut(), &res, w, oc.err)
	return res
}

// blockedBy says what the sandbox refused the child, which shows in either
// stream (a hook's stderr is kept apart), or the host the proxy refused.
func blockedBy(res *Result, s Proc, sp *sandbox.Spec, refusedBefore int) {
	out := string(res.Output) + "\n" + string(res.Stderr)
	res.Blocked, res.Note = sandboxpolicy.Blocked(out, res.ExitCode, sp)
	if s.Refusals {
		res.Outside = sandboxpolicy.OutsidePath(out, sp)
	}
	if hosts := sandboxpolicy.ProxyRefusalsSince(refusedBefore); len(hosts) > 0 && sp.Proxy != "" {
		// The proxy said no: name the host, whatever the tool printed.
		res.Blocked, res.Note = sandboxpolicy.RuleNetwork, sandboxpolicy.ProxyRefusal(strings.Join(hosts, ", "))
	}
}

// runExec runs the child as a program Harvey starts itself (the launcher,
// or the command where there is no sandbox), stopped when stopCtx ends
// (its deadline, or a flood of output), and returns its exit status and
// the Wait error (started false: it did not start, err says why).
func runExec(l *life, stopCtx context.Context, w *CapWriter, dir, prog string, argv, env []string, sp *sandbox.Spec, stdin io.Reader, o streams) (code int, started bool, err error) {
	cmd := exec.CommandContext(l.ctx, prog, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = stdin
	cmd.Stdout, cmd.Stderr = o.stdout, o.stderr
	SetProcessGroup(cmd)
	if sp != nil {
		cmd.SysProcAttr = sandbox.ProcAttr(*sp)
	}
	stop := stopFor(cmd, sp)
	cmd.Cancel = stop
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return 127, false, err
	}
	l.running(cmd.Process.Pid, nil)
	done := make(chan struct{})
	go func() {
		select {
		case <-stopCtx.Done():
			if w.stopped() {
				stop()
			}
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		l.sig = int(ws.Signal())
	}
	// Kill anything left in the group (a backgrounded grandchild), and
	// where commands have no PID namespace, what a launcher that died
	// anyway left to Harvey.
	KillProcessGroup(cmd)
	if sp != nil && sp.NoNS {
		sandbox.EndOrphans()
	}
	return cmd.ProcessState.ExitCode(), true, err
}

// runJoined runs the child on a launcher already running, handed to it
// from here by start (the session network's holder; where commands have
// no namespaces, Harvey's spare launcher), stopped when stopCtx ends. Its
// status comes once every process of it has ended.
func runJoined(stopCtx context.Context, l *life, w *CapWriter, sp *sandbox.Spec, stdin io.Reader, o streams,
	start func(sandbox.Spec, io.Reader, io.Writer, io.Writer) (*sandbox.Joined, error)) (code int, started bool, err error) {
	j, err := start(*sp, stdin, o.stdout, o.stderr)
	if err != nil {
		return 127, false, err
	}
	l.running(j.Pid(), j.Keep)
	done := make(chan struct{})
	go func() {
		select {
		case <-stopCtx.Done():
			j.Stop()
		case <-done:
		}
	}()
	code, err = j.Wait()
	close(done)
	if stopCtx.Err() != nil && !w.stopped() && err == nil {
		code = -1 // ended by its deadline or the caller, as a killed program reads
	}
	return code, true, err
}

// stopFor is how a child is stopped early (a timeout, Ctrl-C, a flood):
// its process group killed, or where commands have no PID namespace, its
// launcher asked to end the command and everything it started (it is
// their subreaper; killed, it could not).
func stopFor(cmd *exec.Cmd, sp *sandbox.Spec) func() error {
	if sp != nil && (sp.NoNS || sp.Session != "") {
		// A command of the session's network: its launcher's client asks
		// the holder to end it, and exits once everything has ended.
		return func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	}
	return func() error { return KillProcessGroup(cmd) }
}

// streams is where the child's stdout and stderr go, and the writers
// kept besides the combined output.
type streams struct {
	stdout, stderr         io.Writer
	errw, outPart, errPart *CapWriter
}

// wireStreams wires the child's stdout and stderr: both into w, or stderr
// apart (SplitStderr: errw), or each kept besides (KeepStreams: outPart
// and errPart).
func wireStreams(s Proc, w *CapWriter) streams {
	o := streams{stdout: w, stderr: w}
	switch {
	case s.SplitStderr:
		o.errw = &CapWriter{limit: 4096}
		o.stderr = o.errw
	case s.KeepStreams:
		o.outPart, o.errPart = &CapWriter{limit: w.limit}, &CapWriter{limit: w.limit}
		o.stdout, o.stderr = io.MultiWriter(w, o.outPart), io.MultiWriter(w, o.errPart)
	}
	return o
}

// sandboxed is the argv and environment that start s: through the
// sandbox launcher when s asks for the sandbox and it is enforced here
// (the spec it runs under is returned), else s's own.
func sandboxed(s Proc) (argv, env []string, sp *sandbox.Spec, err error) {
	argv, env = s.Argv, s.Env
	if s.Sandbox == nil {
		return argv, env, nil, nil
	}
	sb := sandbox.Available()
	if !sb.Enforced() {
		return argv, env, nil, nil
	}
	if _, err := sandboxpolicy.LookPath(argv[0]); err != nil {
		return nil, nil, nil, err
	}
	spec := *s.Sandbox
	spec.Argv, spec.Dir, spec.Env = argv, s.Dir, sandboxpolicy.Env(env, &spec)
	spec.Timeout = s.Timeout.Milliseconds()
	joinSession(&spec)
	return sb.Wrap(&spec), nil, &spec, nil
}

// outputWriter keeps a child's output within s's cap (flood is called
// when the output floods past it) and, with s.Echo, shows it redacted as
// it arrives.
func outputWriter(s Proc, flood func()) *CapWriter {
	limit := s.Limit
	if limit <= 0 {
		limit = config.DefaultMaxOutputBytes
	}
	w := &CapWriter{limit: limit, flood: flood, stopAtCap: s.StopAtCap, keep: s.Keep}
	if s.Echo != nil {
		w.tee = &streamRedactor{w: s.Echo, left: echoLimit}
	}
	return w
}

// settle says how the child ended: cancelled, timed out, stopped on
// purpose at the cap, or failed to run (an exit status is not an error).
func settle(ctx context.Context, timedOut bool, res *Result, w *CapWriter, err error) {
	w.mu.Lock()
	res.Flooded = w.flooded
	cut := w.cut
	w.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		res.Err = ctx.Err()
	case timedOut:
		res.TimedOut = true
	case cut:
		// Stopped on purpose once the cap was full: what was kept is the
		// answer, and the kill says nothing about the command.
		res.ExitCode = 0
		res.Flooded = false
	case err != nil && !res.Flooded:
		var ee *exec.ExitError
		if !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
			res.Err = err
		}
	}
}

// shellMeta are characters that need a shell to mean anything.
const shellMeta = "|&;<>()$`*?[]{}~!#\n"

// ParseCommandLine splits a command line into argv with single quotes,
// double quotes and backslash escapes, without a shell. needsShell reports
// unquoted shell syntax (pipes, redirection, globbing, substitution).
func ParseCommandLine(s string) (argv []string, needsShell bool, err error) {
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			n, shell, err := quoted(s[i:], &cur)
			if err != nil {
				return nil, false, err
			}
			i += n - 1
			needsShell = needsShell || shell
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				argv = append(argv, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			if strings.IndexByte(shellMeta, c) >= 0 {
				needsShell = true
			}
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		argv = append(argv, cur.String())
	}
	if len(argv) == 0 {
		return nil, false, errors.New("empty command")
	}
	// VAR=value cmd needs a shell too.
	if strings.Contains(argv[0], "=") {
		needsShell = true
	}
	return argv, needsShell, nil
}

// quoted reads the quoted word s starts with ('...' or "...") into cur
// and returns how many bytes it took. In double quotes \" \\ \$ and \`
// are escapes, and $ or ` mean the shell is needed.
func quoted(s string, cur *strings.Builder) (n int, needsShell bool, err error) {
	if s[0] == '\'' {
		j := strings.IndexByte(s[1:], '\'')
		if j < 0 {
			return 0, false, errors.New("unclosed single quote")
		}
		cur.WriteString(s[1 : 1+j])
		return j + 2, false, nil
	}
	i := 1
	for ; i < len(s) && s[i] != '"'; i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
			i++
		} else if s[i] == '$' || s[i] == '`' {
			needsShell = true
		}
		cur.WriteByte(s[i])
	}
	if i >= len(s) {
		return 0, false, errors.New("unclosed double quote")
	}
	return i + 1, needsShell, nil
}

// CommandPolicy decides whether a command line may run and how.
type CommandPolicy struct {
	SafeMode bool
	Allowed  []string
}

// Plan returns the argv to run for line. In safe mode only allowlisted
// programs run, without a shell, so the allowlist means something; otherwise
// a line with shell syntax runs under sh -c.
func (p CommandPolicy) Plan(line string) ([]string, error) {
	argv, needsShell, err := ParseCommandLine(line)
	if err != nil {
		return nil, err
	}
	if p.SafeMode {
		if needsShell {
			return nil, fmt.Errorf("safe mode: shell syntax (pipes, redirection, $, ;, &&, globs) is not allowed; run one program with its arguments")
		}
		if err := p.Allows(argv); err != nil {
			return nil, err
		}
		return argv, nil
	}
	if needsShell {
		return []string{"sh", "-c", line}, nil
	}
	return argv, nil
}

// Allows applies safe mode's allowlist to a planned argv: the program by
// its plain name (a path could name any program), in the list.
func (p CommandPolicy) Allows(argv []string) error {
	if !p.SafeMode || len(argv) == 0 {
		return nil
	}
	prog := filepath.Base(argv[0])
	if strings.ContainsRune(argv[0], '/') || !slices.Contains(p.Allowed, prog) {
		return refusal.Errorf("safe mode: %q is not in the allowlist (allowed: %s); use /safemode allow %s", prog, strings.Join(p.Allowed, " "), prog)
	}
	return nil
}

// BaseEnv is the environment children start from.
func BaseEnv() []string { return secrets.Environ(os.Environ()) }

// EnvFor is a command's environment under the user's sandbox: block:
// BaseEnv and the variables its env: names (secrets.Named).
func EnvFor(p config.SandboxPolicy) []string {
	return secrets.WithNamed(BaseEnv(), os.Environ(), p.Env)
}

// NewCapWriter keeps the head and the tail of what is written to it (a program's last
// words), counts the rest and never blocks the writer.
func NewCapWriter(limit int) *CapWriter { return &CapWriter{limit: limit} }
