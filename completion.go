package harvey

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/cliflags"
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

var outputModes = []string{events.ModeText, events.ModeJSON, events.ModeStreamJSON}

// subcommandUsages are the usage texts the subcommands print: their flags
// are read from them, so completion offers what the usage says.
var subcommandUsages = []string{rag.Usage, mcpcli.Usage, modelCheckUsage, hooks.Usage}

// completionSpec is what the shells' scripts complete (internal/shellcomplete).
func completionSpec() shellcomplete.Spec {
	s := shellcomplete.Spec{Subcommands: cliflags.Subcommands, Slash: slashCommands(),
		SubFlags: shellcomplete.SubcommandFlags(subcommandUsages...), OutputModes: outputModes}
	s.Flags = cliflags.Completion
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
