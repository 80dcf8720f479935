package harvey

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/events"
	"github.com/harvey-agent/harvey/internal/hooks"
	"github.com/harvey-agent/harvey/internal/lazyre"
	"github.com/harvey-agent/harvey/internal/mcpcli"
	"github.com/harvey-agent/harvey/internal/rag"
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

var usageFlagRE = lazyre.New(`(?:^|[\s\[|])(--?[a-z][a-z-]*)`)

// subcommandFlags are the flags of each subcommand's word ("rag query":
// --store, -k, --json), read from the usage texts.
func subcommandFlags() map[string][]string {
	out := map[string][]string{}
	for _, u := range subcommandUsages {
		for _, line := range strings.Split(u, "\n") {
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "usage:"))
			if len(f) < 3 || f[0] != "harvey" {
				continue
			}
			key := f[1] + " " + f[2]
			rest := strings.Join(f[3:], " ")
			if i := strings.Index(rest, " -- "); i >= 0 {
				rest = rest[:i] // what follows -- is the server's own command line
			}
			for _, m := range usageFlagRE().FindAllStringSubmatch(rest, -1) {
				if !slices.Contains(out[key], m[1]) {
					out[key] = append(out[key], m[1])
				}
			}
		}
	}
	return out
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
		io.WriteString(stdout, bashCompletion())
	case "zsh":
		io.WriteString(stdout, zshCompletion())
	case "fish":
		io.WriteString(stdout, fishCompletion())
	default:
		fmt.Fprintf(stderr, "harvey completion: %q: use bash, zsh or fish\n", args[0])
		return 2
	}
	return 0
}

func flagNames(withValue bool) []string {
	var out []string
	for _, f := range completionFlags {
		if f.value == withValue {
			out = append(out, f.name)
		}
	}
	return out
}

func subcommandNames() []string {
	var out []string
	for k := range completionSubcommands {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func bashCompletion() string {
	var b strings.Builder
	b.WriteString("# harvey completion for bash: source <(harvey completion bash)\n_harvey() {\n")
	b.WriteString("  local cur prev sub\n  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n  sub=\"${COMP_WORDS[1]}\"\n")
	b.WriteString("  case \"$prev\" in\n")
	fmt.Fprintf(&b, "    --output) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", strings.Join(outputModes, " "))
	b.WriteString("    --run) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n")
	fmt.Fprintf(&b, "    -p|--prompt) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", strings.Join(slashCommands(), " "))
	b.WriteString("    --model) COMPREPLY=($(compgen -W \"$(harvey completion models 2>/dev/null)\" -- \"$cur\")); return ;;\n")
	b.WriteString("    --ollama) return ;;\n  esac\n")
	b.WriteString("  if [ \"$COMP_CWORD\" -eq 1 ]; then\n")
	fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W %q -- \"$cur\")); return\n  fi\n", strings.Join(append(subcommandNames(), append(flagNames(false), flagNames(true)...)...), " "))
	flags := subcommandFlags()
	b.WriteString("  if [ \"$COMP_CWORD\" -ge 3 ]; then\n    case \"$sub ${COMP_WORDS[2]}\" in\n")
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		fmt.Fprintf(&b, "      %q) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", k, strings.Join(flags[k], " "))
	}
	b.WriteString("    esac\n  fi\n")
	b.WriteString("  case \"$sub\" in\n")
	for _, s := range subcommandNames() {
		fmt.Fprintf(&b, "    %s) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", s, strings.Join(completionSubcommands[s], " "))
	}
	b.WriteString("  esac\n")
	fmt.Fprintf(&b, "  COMPREPLY=($(compgen -W %q -- \"$cur\"))\n}\ncomplete -F _harvey harvey\n", strings.Join(append(flagNames(false), flagNames(true)...), " "))
	return b.String()
}

func zshCompletion() string {
	var b strings.Builder
	b.WriteString("#compdef harvey\n# harvey completion for zsh: harvey completion zsh > \"${fpath[1]}/_harvey\"\n_harvey() {\n")
	b.WriteString("  local -a subcommands slash\n")
	fmt.Fprintf(&b, "  slash=(%s)\n", strings.Join(slashCommands(), " "))
	b.WriteString("  subcommands=(")
	for _, s := range subcommandNames() {
		fmt.Fprintf(&b, "%q ", s+":"+strings.Join(completionSubcommands[s], ", "))
	}
	b.WriteString(")\n")
	b.WriteString("  if (( CURRENT == 3 )); then\n    case $words[2] in\n")
	for _, s := range subcommandNames() {
		fmt.Fprintf(&b, "      %s) compadd %s; return ;;\n", s, strings.Join(completionSubcommands[s], " "))
	}
	b.WriteString("    esac\n  fi\n")
	flags := subcommandFlags()
	b.WriteString("  if (( CURRENT > 3 )); then\n    case \"$words[2] $words[3]\" in\n")
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		fmt.Fprintf(&b, "      %q) compadd -- %s; return ;;\n", k, strings.Join(flags[k], " "))
	}
	b.WriteString("    esac\n  fi\n  _arguments -s \\\n")
	for _, f := range completionFlags {
		spec := fmt.Sprintf("%s[%s]", f.name, f.help)
		switch f.name {
		case "--output":
			spec += ":mode:(" + strings.Join(outputModes, " ") + ")"
		case "-p", "--prompt":
			spec += ":prompt:($slash)"
		case "--run":
			spec += ":file:_files"
		case "--model":
			spec += ":model:($(harvey completion models 2>/dev/null))"
		default:
			if f.value {
				spec += ":value:"
			}
		}
		fmt.Fprintf(&b, "    %q \\\n", spec)
	}
	b.WriteString("    '1: :->sub' && _describe 'subcommand' subcommands\n}\n_harvey \"$@\"\n")
	return b.String()
}

func fishCompletion() string {
	var b strings.Builder
	b.WriteString("# harvey completion for fish: harvey completion fish > ~/.config/fish/completions/harvey.fish\n")
	for _, f := range completionFlags {
		opt := "-l " + strings.TrimLeft(f.name, "-")
		if !strings.HasPrefix(f.name, "--") {
			opt = "-s " + strings.TrimLeft(f.name, "-")
		}
		line := fmt.Sprintf("complete -c harvey %s -d %q", opt, f.help)
		switch f.name {
		case "--output":
			line += " -xa " + fmt.Sprintf("%q", strings.Join(outputModes, " "))
		case "-p", "--prompt":
			line += " -xa " + fmt.Sprintf("%q", strings.Join(slashCommands(), " "))
		case "--run":
			line += " -rF"
		case "--model":
			line += " -xa '(harvey completion models 2>/dev/null)'"
		default:
			if f.value {
				line += " -x"
			}
		}
		b.WriteString(line + "\n")
	}
	flags := subcommandFlags()
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		s, w, _ := strings.Cut(k, " ")
		for _, f := range flags[k] {
			opt := "-l " + strings.TrimPrefix(f, "--")
			if !strings.HasPrefix(f, "--") {
				opt = "-s " + strings.TrimPrefix(f, "-")
			}
			fmt.Fprintf(&b, "complete -c harvey -n '__fish_seen_subcommand_from %s; and __fish_seen_subcommand_from %s' %s\n", s, w, opt)
		}
	}
	for _, s := range subcommandNames() {
		fmt.Fprintf(&b, "complete -c harvey -n __fish_use_subcommand -a %s\n", s)
		fmt.Fprintf(&b, "complete -c harvey -n '__fish_seen_subcommand_from %s' -xa %q\n", s, strings.Join(completionSubcommands[s], " "))
	}
	return b.String()
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
