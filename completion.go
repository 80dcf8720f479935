package harvey

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/events"
	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/mcpcli"
	"github.com/harvey-agent/harvey/internal/rag"
	"github.com/harvey-agent/harvey/internal/shellcomplete"
)

// harvey completion bash|zsh|fish: shell completion for the flags, the
// subcommands and (as the value of -p, the way the REPL reads a line) the
// slash commands. Generated from the same tables the program uses: the
// slash commands from the command registry, --output's values from
// internal/events' modes.

// completionFlags are harvey's flags (cli.go's parseFlags), with whether
// each takes a value.
var completionFlags = []struct {
	name  string
	value bool
	help  string
}{
	{"-p", true, "run one prompt headless"}, {"--prompt", true, "run one prompt headless"},
	{"--run", true, "run a script of lines headless"}, {"--model", true, "model to use"},
	{"--ollama", true, "Ollama server URL"}, {"--output", true, "text, json or stream-json (with -p or --run)"},
	{"--yes", false, "approve writes and commands"}, {"-c", false, "continue the last conversation"},
	{"--continue", false, "continue the last conversation"}, {"--version", false, "print the version"},
	{"-h", false, "help"}, {"--help", false, "help"},
}

// completionSubcommands are the subcommands and their own words.
var completionSubcommands = map[string][]string{
	"model":      {"check"},
	"tools":      {"validate"},
	"mcp":        {"list", "add", "remove", "import"},
	"completion": {"bash", "zsh", "fish"},
	"sandbox":    {"status", "apparmor"},
	"hooks":      {"list", "import"},
	"rag":        {"query", "create", "ingest", "list", "use", "on", "off", "status", "remove"},
}

var outputModes = []string{events.ModeText, events.ModeJSON, events.ModeStreamJSON}

// subcommandUsages are the usage texts the subcommands print: their flags
// are read from them, so completion offers what the usage says.
var subcommandUsages = []string{rag.Usage, mcpcli.Usage, modelCheckUsage, hooks.Usage}

// completionSpec is what the shells' scripts complete (internal/shellcomplete).
func completionSpec() shellcomplete.Spec {
	s := shellcomplete.Spec{Subcommands: completionSubcommands, Slash: slashCommands(),
		SubFlags: shellcomplete.SubcommandFlags(subcommandUsages...), OutputModes: outputModes}
	for _, f := range completionFlags {
		s.Flags = append(s.Flags, shellcomplete.Flag{Name: f.name, Value: f.value, Help: f.help})
	}
	return s
}

// slashCommands lists the REPL's commands ("/help", ...), aliases too.
func slashCommands() []string {
	a := &Agent{}
	a.registerCommands()
	var out []string
	for n := range a.commands {
		out = append(out, "/"+n)
	}
	sort.Strings(out)
	return out
}

func completionCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: harvey completion bash|zsh|fish")
		return 2
	}
	switch args[0] {
	case "models":
		// The shells' scripts ask for --model's candidates: the models
		// the Ollama server of your config has installed, said at once
		// or not at all.
		ucf, _, _ := configfile.LoadUser()
		for _, m := range installedModels(resolveOllamaURL("", ucf.OllamaURL)) {
			fmt.Fprintln(stdout, m)
		}
	case "bash":
		io.WriteString(stdout, completionSpec().Bash())
	case "zsh":
		io.WriteString(stdout, completionSpec().Zsh())
	case "fish":
		io.WriteString(stdout, completionSpec().Fish())
	default:
		fmt.Fprintf(stderr, "harvey completion: %q: use bash, zsh or fish\n", args[0])
		return 2
	}
	return 0
}

// modelNamesWait bounds the look at the server for completion's sake.
const modelNamesWait = 700 * time.Millisecond

// installedModels are the models the Ollama server at url has installed
// (none when it does not answer at once).
func installedModels(url string) []string {
	oc, err := newOllamaClient(url, "", 0, "", modelNamesWait)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), modelNamesWait)
	defer cancel()
	models, err := oc.Models(ctx)
	if err != nil {
		return nil
	}
	return models
}

// modelNames is what /model's Tab offers: the session's server's installed
// models, asked once (the first Tab after /model), at once or not at all.
func sessionModelNames(a *Agent) func() []string {
	var once sync.Once
	var names []string
	return func() []string {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), modelNamesWait)
			defer cancel()
			if _, m, err := a.ollamaModels(ctx); err == nil {
				names = m
			}
		})
		return names
	}
}
