package harvey

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

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

const usageText = `Harvey — a terminal coding agent for local and cloud models.

Usage:
  harvey [flags]               interactive session in the current directory
  harvey -p "PROMPT" [flags]   run one turn and exit (answer on stdout); piped input is context:
                               cat err.log | harvey -p "why did it fail?"
  harvey --run FILE [flags]    run each line of FILE (command or prompt) in order
  harvey model check [NAME...|--all] [--json]
                               can this model drive Harvey here? a short battery of tasks, a table, a verdict
  harvey tools validate        check agents/tools/*.md; exit 1 if a file has a problem
  harvey mcp list              start the configured MCP servers, list them and their tools
  harvey mcp add NAME -- CMD   add a server to your config (--env K=V; or --url URL); mcp remove NAME
  harvey mcp import [NAME...]  list (or add) the servers of your Claude Desktop, Claude Code, Cursor, Codex configs
  harvey mcp login|logout NAME log in to a server that uses OAuth (the token is kept), or forget it
  harvey rag query "TEXT" [--store NAME] [-k N] [--json]
                               search the workspace in plain words (an index that needs no setup), or a RAG store
  harvey rag create|ingest|list|use|on|off|status|remove ...
                               RAG stores of embedded chunks (docs/retrieval.md)
  harvey hooks [list|import]   your hooks before and after tool calls; import: Claude Code's (docs/hooks.md)
  harvey sandbox [status|apparmor]
                               which sandbox mode commands get here and what holds in it;
                               apparmor: the profile that lets Ubuntu 23.10+ give Harvey its namespaces
  harvey completion bash|zsh|fish
                               shell completion: source <(harvey completion bash)

Flags:
  -p, --prompt PROMPT  run one prompt headless
      --run FILE       run a script of lines headless ("-" reads stdin)
      --model NAME     model to use (else config "model", else the only installed one)
      --ollama URL     Ollama server (else $OLLAMA_HOST, else config ollama_url, else http://127.0.0.1:11434)
      --yes            approve tool actions (writes, commands) that would otherwise ask
      --output MODE    with -p or --run: text (default), json (one object at the end) or
                       stream-json (one event per line); docs/output.md has the schema
  -c, --continue       continue the last conversation in this workspace
      --version        print the version
  -h, --help           this help

Exit status: 0 success, 1 failure, 2 bad usage, 3 an action was not
approved (headless without --yes).
`

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
	if code, ok := subcommand(ctx, args, stdout, stderr); ok {
		return code
	}
	f, code := parseFlags(args, stdout, stderr)
	if f == nil {
		return code
	}
	headless := f.prompt != "" || f.script != ""
	var sink *events.Sink
	if f.output != events.ModeText {
		sink = events.New(stdout, f.output)
		stdout = events.Writer{S: sink}
	}
	stdinTTY := termtext.IsTTY(stdin)
	o := Options{
		Dir: ".", Model: f.model, OllamaURL: f.ollama, AutoApprove: f.yes, Continue: f.cont,
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
	code = a.runHeadless(runCtx, lines, f.script != "", stderr)
	a.gate.jobs.Close() // their "ended" events come before "end", the last line
	a.gate.tasks.Close()
	sink.End(code)
	return code
}

// cliFlags are harvey's command-line flags.
type cliFlags struct {
	prompt, script, model, ollama string
	output                        string // text, json or stream-json (headless only)
	yes, cont                     bool
}

// parseFlags parses args; a nil result means exit with code (after --help,
// --version or a usage error).
func parseFlags(args []string, stdout, stderr io.Writer) (*cliFlags, int) {
	fs := flag.NewFlagSet("harvey", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &cliFlags{}
	var version, help bool
	fs.StringVar(&f.prompt, "p", "", "")
	fs.StringVar(&f.prompt, "prompt", "", "")
	fs.StringVar(&f.script, "run", "", "")
	fs.StringVar(&f.model, "model", "", "")
	fs.StringVar(&f.ollama, "ollama", "", "")
	fs.StringVar(&f.output, "output", events.ModeText, "")
	fs.BoolVar(&f.yes, "yes", false, "")
	fs.BoolVar(&f.cont, "continue", false, "")
	fs.BoolVar(&f.cont, "c", false, "")
	fs.BoolVar(&version, "version", false, "")
	fs.BoolVar(&help, "h", false, "")
	fs.BoolVar(&help, "help", false, "")
	err := fs.Parse(args)
	promptSet := false
	fs.Visit(func(f *flag.Flag) { promptSet = promptSet || f.Name == "p" || f.Name == "prompt" })
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "harvey: %v (harvey --help lists the flags)\n", err)
		return nil, 2
	case help:
		fmt.Fprint(stdout, usageText)
		return nil, 0
	case version:
		fmt.Fprintln(stdout, versionLine())
		return nil, 0
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "harvey: unexpected argument %q (quote the prompt: harvey -p \"...\")\n", fs.Arg(0))
		return nil, 2
	case promptSet && strings.TrimSpace(f.prompt) == "":
		fmt.Fprintln(stderr, `harvey: -p needs a prompt (harvey -p "what does main.go do?")`)
		return nil, 2
	case events.ValidMode(f.output) != nil:
		fmt.Fprintf(stderr, "harvey: %v\n", events.ValidMode(f.output))
		return nil, 2
	case f.output != events.ModeText && f.prompt == "" && f.script == "":
		fmt.Fprintln(stderr, "harvey: --output json and stream-json are for -p and --run (the REPL is for people)")
		return nil, 2
	case f.prompt != "" && f.script != "":
		fmt.Fprintln(stderr, "harvey: use either -p or --run, not both")
		return nil, 2
	}
	return f, 0
}

// headlessLines is what a headless run does: the -p prompt (with piped
// input as context) or the lines of the --run script.
func headlessLines(a *Agent, f *cliFlags, stdin io.Reader, stderr io.Writer) ([]string, int) {
	if f.prompt != "" {
		if piped, cut := pipedin.Read(stdin, a.maxOut()); piped != "" {
			a.addContext("piped input", piped)
			if cut > 0 {
				fmt.Fprintf(stderr, "harvey: piped input is long: its start and end are kept, %d bytes between them left out\n", cut)
			}
		}
		return []string{f.prompt}, 0
	}
	r := stdin
	if f.script != "-" {
		file, err := os.Open(f.script)
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
