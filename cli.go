package harvey

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/harvey-agent/harvey/internal/cliflags"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/events"
	"github.com/harvey-agent/harvey/internal/guardian"
	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/mcpcli"
	"github.com/harvey-agent/harvey/internal/pipedin"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxcli"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// subcommand runs harvey mcp, model, tools, rag, completion or sandbox
// (ok false: args name none of them).
func subcommand(ctx context.Context, args []string, stdout, stderr io.Writer) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "mcp":
		return mcpCommand(ctx, args[1:], stdout, stderr), true
	case "model":
		return modelCommand(ctx, args[1:], stdout, stderr), true
	case "tools":
		return toolsCommand(args[1:], stdout, stderr), true
	case "rag":
		return ragCommand(ctx, args[1:], stdout, stderr), true
	case "completion":
		return completionCommand(args[1:], stdout, stderr), true
	case "sandbox":
		return sandboxcli.Command(args[1:], stdout, stderr), true
	case "hooks":
		return hooks.Command(args[1:], stdout, stderr), true
	}
	return 0, false
}

// Main is the harvey command. It returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == sandbox.Arg {
		return sandbox.RunLauncher(args[1:])
	}
	hardenProcess()
	// The sandbox's temporary directories go with the process, whichever
	// command made them (harvey model check, mcp list, ... too).
	defer runner.RemoveTmp()
	if len(args) > 0 && args[0] == "acp" {
		return acpCommand(ctx, args[1:], stdin, stdout, stderr)
	}
	if code, ok := subcommand(ctx, args, stdout, stderr); ok {
		return code
	}
	f, code := cliflags.Parse(args, stdout, stderr, versionLine())
	if f == nil {
		return code
	}
	headless := f.Prompt != "" || f.Script != ""
	var sink *events.Sink
	if f.Output != events.ModeText {
		sink = events.New(stdout, f.Output)
		stdout = events.Writer{S: sink}
	}
	stdinTTY := termtext.IsTTY(stdin)
	o := Options{
		Dir: ".", Model: f.Model, OllamaURL: f.Ollama, AutoApprove: f.Yes, Continue: f.Continue,
		Interactive: !headless && stdinTTY,
		Stdin:       stdin, Stdout: stdout, Stderr: stderr,
		StdinTTY: stdinTTY && !headless, StderrTTY: termtext.IsTTY(stderr),
		WaitForServer: true,
	}
	a, err := Start(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		sink.Fail(err.Error())
		sink.End(1)
		return 1
	}
	if sink != nil {
		sink.Sandbox = sandboxpolicy.ModeName(a.Config.Sandbox)
		a.events = sink
		a.approvals.observe = func(r approvalRequest, approved bool, by string) { sink.Approval(r.tool, r.action, approved, by) }
	}
	defer a.Workspace.Close()
	defer a.Close()
	if !headless {
		defer guardian.EndOnSignal(func() { a.Close(); a.Workspace.Close(); runner.RemoveTmp() }, 3*time.Second)()
		if err := a.Run(ctx, o); err != nil {
			fmt.Fprintf(stderr, "harvey: %v\n", err)
			return 1
		}
		return 0
	}
	runCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	lines, code := headlessLines(a, f, stdin, stderr)
	if code != 0 {
		sink.Fail("could not read the script")
		sink.End(code)
		return code
	}
	code = a.runHeadless(runCtx, lines, f.Script != "", stderr)
	a.gate.jobs.Close() // their "ended" events come before "end", the last line
	a.gate.tasks.Close()
	sink.End(code)
	return code
}

// headlessLines is what a headless run does: the -p prompt (with piped
// input as context) or the lines of the --run script.
func headlessLines(a *Agent, f *cliflags.Flags, stdin io.Reader, stderr io.Writer) ([]string, int) {
	if f.Prompt != "" {
		if piped, cut := pipedin.Read(stdin, a.maxOut()); piped != "" {
			a.addContext("piped input", piped)
			if cut > 0 {
				fmt.Fprintf(stderr, "harvey: piped input is long: its start and end are kept, %d bytes between them left out\n", cut)
			}
		}
		return []string{f.Prompt}, 0
	}
	r := stdin
	if f.Script != "-" {
		file, err := os.Open(f.Script)
		if err != nil {
			fmt.Fprintf(stderr, "harvey: --run: %v\n", err)
			return nil, 2
		}
		defer file.Close()
		r = file
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, 0
}

// runHeadless runs each line as a prompt or command; any failure makes the
// exit status 1, /exit stops, an interrupt ends the run.
func (a *Agent) runHeadless(ctx context.Context, lines []string, echo bool, stderr io.Writer) int {
	status := 0
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if echo {
			fmt.Fprintf(stderr, "%s\n", a.dim("» "+line))
		}
		a.events.TurnStart(line)
		err := a.RunPrompt(ctx, line)
		a.flushLater()
		if errors.Is(err, ErrExit) {
			break
		}
		if err != nil {
			fmt.Fprintf(stderr, "harvey: %s\n", termtext.OneLine(err.Error()))
			a.events.Fail(termtext.OneLine(err.Error()))
			status = 1
		}
		if ctx.Err() != nil {
			return 1
		}
	}
	if n := a.approvals.refusedN; n > 0 {
		fmt.Fprintf(stderr, "harvey: %s not approved (a headless run asks nobody; --yes approves writes and commands)\n", termtext.Plural(n, "action"))
		a.events.Fail(termtext.Plural(n, "action") + " not approved (a headless run asks nobody; --yes approves writes and commands)")
		if status == 0 {
			status = 3
		}
	}
	return status
}

// toolsCommand is "harvey tools validate": for CI, load every tool file the
// way a session would and fail on any problem.
func toolsCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "validate" && args[0] != "check") {
		fmt.Fprintln(stderr, "usage: harvey tools validate")
		return 2
	}
	ws, code := openCwdWorkspace(stderr)
	if ws == nil {
		return code
	}
	defer ws.Close()
	own, problems := loadOwnTools(builtinToolName)
	tools, wsProblems := loadUserTools(ws, builtinToolName)
	problems = append(problems, wsProblems...)
	tools = append(own, tools...)
	for _, t := range tools {
		fmt.Fprintf(stdout, "ok      %s (%s, %d parameters): %s\n", t.File, t.Effect, len(t.Params), termtext.QuoteArgv(t.Command))
	}
	for _, p := range problems {
		fmt.Fprintf(stdout, "problem %s\n", termtext.Sanitize(p.Error()))
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "harvey: %s in tool files\n", termtext.Plural(len(problems), "problem"))
		return 1
	}
	if len(tools) == 0 {
		fmt.Fprintf(stdout, "no tool files in %s/ or %s/\n", UserToolsDir, OwnToolsLabel)
	}
	return 0
}

// mcpCommand is `harvey mcp list`: start the configured MCP servers (no
// model needed), list them and their tools, stop them.
func mcpCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "add":
			return mcpcli.Add(args[1:], stdout, stderr)
		case "remove":
			return mcpcli.Remove(args[1:], stdout, stderr)
		case "import":
			return mcpcli.Import(args[1:], stdout, stderr)
		case "login", "logout":
			return mcpLogin(ctx, args[0], args[1:], os.Stdin, stdout, stderr)
		}
	}
	if len(args) != 1 || args[0] != "list" {
		fmt.Fprintln(stderr, mcpcli.Usage)
		return 2
	}
	ws, code := openCwdWorkspace(stderr)
	if ws == nil {
		return code
	}
	defer ws.Close()
	cf, cerr := configfile.Load(ws.Tree)
	if cerr != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", cerr)
		if errors.Is(cerr, configfile.ErrUserConfig) {
			return 1
		}
	}
	a := newAgent(ws, cf, newLineReader(strings.NewReader("")), &termtext.Writer{W: stdout}, &termtext.Writer{W: stderr})
	defer a.Close()
	a.confirmWorkspaceConfig(a.Config, a.Workspace) // headless: a workspace's servers are not started unconfirmed
	a.startMCP(ctx, false)                          // harvey mcp list starts each server: it is the check
	if err := cmdMCP(ctx, a, nil, a.Out); err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	if len(a.mcp.Failed()) > 0 {
		return 1
	}
	return 0
}

// openCwdWorkspace opens the current directory as the workspace for a
// subcommand; on failure it says why and gives the exit status.
func openCwdWorkspace(stderr io.Writer) (*Workspace, int) {
	ws, err := openWorkspace(".")
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return nil, 1
	}
	return ws, 0
}
