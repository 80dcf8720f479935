// Package cliflags is harvey's command line: its flags (Parse, Flags),
// the --help text (Usage), and the tables shell completion is generated
// from (Completion, Subcommands), kept beside the parser so they cannot
// drift apart. Parse writes --help and --version to stdout and a usage
// error to stderr in one line, and says with a nil Flags which exit
// status to end with.
package cliflags

import (
	"fmt"
	"io"
	"strings"

	"flag"

	"github.com/harvey-agent/harvey/internal/events"
	"github.com/harvey-agent/harvey/internal/shellcomplete"
)

// Usage is harvey --help.
const Usage = `Harvey — a terminal coding agent for local and cloud models.

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
  harvey acp [--model M]       Harvey as an Agent Client Protocol agent on stdio, for Zed,
                               JetBrains or Neovim (docs/editors.md)
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

// Flags are harvey's command-line flags.
type Flags struct {
	Prompt, Script, Model, Ollama string
	Output                        string // text, json or stream-json (headless only)
	Yes, Continue                 bool
}

// Parse parses args; a nil result means exit with code (after --help,
// --version or a usage error).
func Parse(args []string, stdout, stderr io.Writer, version string) (*Flags, int) {
	fs := flag.NewFlagSet("harvey", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &Flags{}
	var showVersion, help bool
	fs.StringVar(&f.Prompt, "p", "", "")
	fs.StringVar(&f.Prompt, "prompt", "", "")
	fs.StringVar(&f.Script, "run", "", "")
	fs.StringVar(&f.Model, "model", "", "")
	fs.StringVar(&f.Ollama, "ollama", "", "")
	fs.StringVar(&f.Output, "output", events.ModeText, "")
	fs.BoolVar(&f.Yes, "yes", false, "")
	fs.BoolVar(&f.Continue, "continue", false, "")
	fs.BoolVar(&f.Continue, "c", false, "")
	fs.BoolVar(&showVersion, "version", false, "")
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
		fmt.Fprint(stdout, Usage)
		return nil, 0
	case showVersion:
		fmt.Fprintln(stdout, version)
		return nil, 0
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "harvey: unexpected argument %q (quote the prompt: harvey -p \"...\")\n", fs.Arg(0))
		return nil, 2
	case promptSet && strings.TrimSpace(f.Prompt) == "":
		fmt.Fprintln(stderr, `harvey: -p needs a prompt (harvey -p "what does main.go do?")`)
		return nil, 2
	case events.ValidMode(f.Output) != nil:
		fmt.Fprintf(stderr, "harvey: %v\n", events.ValidMode(f.Output))
		return nil, 2
	case f.Output != events.ModeText && f.Prompt == "" && f.Script == "":
		fmt.Fprintln(stderr, "harvey: --output json and stream-json are for -p and --run (the REPL is for people)")
		return nil, 2
	case f.Prompt != "" && f.Script != "":
		fmt.Fprintln(stderr, "harvey: use either -p or --run, not both")
		return nil, 2
	}
	return f, 0
}

// Completion are the flags Parse reads, as shell completion offers them.
var Completion = []shellcomplete.Flag{
	fl("-p", true, "run one prompt headless"), fl("--prompt", true, "run one prompt headless"),
	fl("--run", true, "run a script of lines headless"), fl("--model", true, "model to use"),
	fl("--ollama", true, "Ollama server URL"), fl("--output", true, "text, json or stream-json (with -p or --run)"),
	fl("--yes", false, "approve writes and commands"), fl("-c", false, "continue the last conversation"),
	fl("--continue", false, "continue the last conversation"), fl("--version", false, "print the version"),
	fl("-h", false, "help"), fl("--help", false, "help"),
}

func fl(name string, value bool, help string) shellcomplete.Flag {
	return shellcomplete.Flag{Name: name, Value: value, Help: help}
}

// Subcommands are the subcommands and their own words.
var Subcommands = map[string][]string{
	"model":      {"check"},
	"tools":      {"validate"},
	"mcp":        {"list", "add", "remove", "import"},
	"completion": {"bash", "zsh", "fish"},
	"sandbox":    {"status", "apparmor"},
	"hooks":      {"list", "import"},
	"acp":        {},
	"rag":        {"query", "create", "ingest", "list", "use", "on", "off", "status", "remove"},
}
