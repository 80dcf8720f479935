package harvey

import (
	"bufio"
	"bytes"
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

	"golang.org/x/term"
)

const usageText = `Harvey — a terminal coding agent for local and cloud models.

Usage:
  harvey [flags]               interactive session in the current directory
  harvey -p "PROMPT" [flags]   run one turn and exit (answer on stdout); piped input is context:
                               cat err.log | harvey -p "why did it fail?"
  harvey --run FILE [flags]    run each line of FILE (command or prompt) in order
  harvey tools validate        check agents/tools/*.md; exit 1 if a file has a problem

Flags:
  -p, --prompt PROMPT  run one prompt headless
      --run FILE       run a script of lines headless ("-" reads stdin)
      --model NAME     model to use (else config "model", else the only installed one)
      --ollama URL     Ollama server (else $OLLAMA_HOST, else config ollama_url, else http://127.0.0.1:11434)
      --yes            approve tool actions (writes, commands) that would otherwise ask
  -c, --continue       continue the last conversation in this workspace
      --version        print the version
  -h, --help           this help

Exit status: 0 success, 1 failure, 2 bad usage.
`

// Main is the harvey command. It returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == sandboxArg {
		return runSandboxLauncher(args[1:])
	}
	if len(args) > 0 && args[0] == sandboxExecArg {
		return runSandboxLauncher(args)
	}
	HardenProcess()
	if len(args) > 0 && args[0] == "tools" {
		return toolsCommand(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("harvey", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		prompt, script, model, ollama string
		yes, version, help, cont      bool
	)
	fs.StringVar(&prompt, "p", "", "")
	fs.StringVar(&prompt, "prompt", "", "")
	fs.StringVar(&script, "run", "", "")
	fs.StringVar(&model, "model", "", "")
	fs.StringVar(&ollama, "ollama", "", "")
	fs.BoolVar(&yes, "yes", false, "")
	fs.BoolVar(&cont, "continue", false, "")
	fs.BoolVar(&cont, "c", false, "")
	fs.BoolVar(&version, "version", false, "")
	fs.BoolVar(&help, "h", false, "")
	fs.BoolVar(&help, "help", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n\n%s", err, usageText)
		return 2
	}
	if help {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	if version {
		fmt.Fprintf(stdout, "harvey %s\n", Version)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "harvey: unexpected argument %q (quote the prompt: harvey -p \"...\")\n", fs.Arg(0))
		return 2
	}
	if prompt != "" && script != "" {
		fmt.Fprintln(stderr, "harvey: use either -p or --run, not both")
		return 2
	}
	headless := prompt != "" || script != ""
	stdinTTY := isTTY(stdin)
	stderrTTY := isTTY(stderr)
	o := Options{
		Dir: ".", Model: model, OllamaURL: ollama, AutoApprove: yes, Continue: cont,
		Interactive: !headless && stdinTTY,
		Stdin:       stdin, Stdout: stdout, Stderr: stderr,
		StdinTTY: stdinTTY && !headless, StderrTTY: stderrTTY,
	}
	a, err := Start(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	defer removeSandboxTmp()
	defer a.Workspace.Close()
	defer a.Close()
	if !headless {
		if err := a.Run(ctx, o); err != nil {
			fmt.Fprintf(stderr, "harvey: %v\n", err)
			return 1
		}
		return 0
	}
	runCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var lines []string
	if prompt != "" {
		lines = []string{prompt}
		if piped := readPipedStdin(stdin, a.maxOut()); piped != "" {
			a.addContext("piped input", piped)
		}
	} else {
		var r io.Reader
		if script == "-" {
			r = stdin
		} else {
			f, err := os.Open(script)
			if err != nil {
				fmt.Fprintf(stderr, "harvey: --run: %v\n", err)
				return 2
			}
			defer f.Close()
			r = f
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}
	status := 0
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if script != "" {
			fmt.Fprintf(stderr, "%s\n", a.dim("» "+line))
		}
		err := a.RunPrompt(runCtx, line)
		if errors.Is(err, ErrExit) {
			break
		}
		if err != nil {
			fmt.Fprintf(stderr, "harvey: %s\n", oneLine(err.Error()))
			status = 1
		}
		if runCtx.Err() != nil {
			return 1
		}
	}
	return status
}

// readPipedStdin returns what was piped into harvey -p (cat err.log |
// harvey -p "why?"), capped and redacted like a tool result. A terminal or
// /dev/null gives nothing; a pipe that stays silent for a second (an
// inherited, never-closed stdin) is ignored rather than waited on.
func readPipedStdin(in io.Reader, limit int) string {
	if in == nil || isTTY(in) {
		return ""
	}
	if f, ok := in.(*os.File); ok {
		st, err := f.Stat()
		if err != nil || (st.Mode()&os.ModeNamedPipe == 0 && !st.Mode().IsRegular()) {
			return ""
		}
		if st.Mode()&os.ModeNamedPipe != 0 {
			// Wait at most a second for the first byte. A stdin pipe is
			// usually blocking (no read deadline), so the wait is a
			// goroutine; if nothing comes it stays blocked until exit.
			got := make(chan []byte, 1)
			go func() {
				b := make([]byte, 1)
				n, _ := f.Read(b)
				got <- b[:n]
			}()
			select {
			case first := <-got:
				if len(first) == 0 {
					return ""
				}
				in = io.MultiReader(bytes.NewReader(first), f)
			case <-time.After(time.Second):
				return ""
			}
		}
	}
	data, more, err := readAtMost(in, limit)
	if err != nil || len(data) == 0 {
		return ""
	}
	return capOutput([]byte(redactSecrets(string(data))), limit, more)
}

func isTTY(x any) bool {
	f, ok := x.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// toolsCommand is "harvey tools validate": for CI, load every tool file the
// way a session would and fail on any problem.
func toolsCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "validate" && args[0] != "check") {
		fmt.Fprintln(stderr, "usage: harvey tools validate")
		return 2
	}
	ws, err := OpenWorkspace(".")
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	defer ws.Close()
	tools, problems := LoadUserTools(ws, builtinToolName)
	for _, t := range tools {
		fmt.Fprintf(stdout, "ok      %s (%s, %d parameters): %s\n", t.File, t.Effect, len(t.Params), quoteArgv(t.Command))
	}
	for _, p := range problems {
		fmt.Fprintf(stdout, "problem %s\n", sanitizeForTerminal(p.Error()))
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "harvey: %s in tool files\n", plural(len(problems), "problem"))
		return 1
	}
	if len(tools) == 0 {
		fmt.Fprintf(stdout, "no tool files in %s/\n", UserToolsDir)
	}
	return 0
}
