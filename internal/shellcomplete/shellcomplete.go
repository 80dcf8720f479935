// Package shellcomplete writes a program's completion scripts for bash,
// zsh and fish from the tables the program itself uses: its flags (with
// whether each takes a value, and a word of help), its subcommands and
// their words, the flags of each subcommand's word (read from the usage
// texts the subcommands print: SubcommandFlags), --output's values, and
// the slash commands, offered as the value of -p the way the REPL reads a
// line. --model's candidates come from the program at completion time
// ("harvey completion models").
//
// Contract: Spec.Bash, Spec.Zsh and Spec.Fish are pure functions of the
// Spec; nothing here knows harvey's flags.
package shellcomplete

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// Flag is one of the program's flags.
type Flag struct {
	Name  string // -p, --prompt
	Value bool   // it takes a value
	Help  string
}

// Spec is what the scripts complete.
type Spec struct {
	Flags       []Flag
	Subcommands map[string][]string // subcommand → its words
	SubFlags    map[string][]string // "subcommand word" → its flags (SubcommandFlags)
	OutputModes []string            // --output's values
	Slash       []string            // the slash commands, offered for -p
}

var usageFlagRE = lazyre.New(`(?:^|[\s\[|])(--?[a-z][a-z-]*)`)

// SubcommandFlags are the flags of each subcommand's word ("rag query":
// --store, -k, --json), read from usage texts whose lines read "harvey SUB
// WORD [flags]" (what follows " -- " is another program's command line).
func SubcommandFlags(usages ...string) map[string][]string {
	out := map[string][]string{}
	for _, u := range usages {
		for _, line := range strings.Split(u, "\n") {
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "usage:"))
			if len(f) < 3 || f[0] != "harvey" {
				continue
			}
			key := f[1] + " " + f[2]
			rest := strings.Join(f[3:], " ")
			if i := strings.Index(rest, " -- "); i >= 0 {
				rest = rest[:i]
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

func (s Spec) flagNames(withValue bool) []string {
	var out []string
	for _, f := range s.Flags {
		if f.Value == withValue {
			out = append(out, f.Name)
		}
	}
	return out
}

func (s Spec) subcommands() []string { return slices.Sorted(maps.Keys(s.Subcommands)) }

// Bash is the script for bash: source <(harvey completion bash).
func (s Spec) Bash() string {
	var b strings.Builder
	b.WriteString("# harvey completion for bash: source <(harvey completion bash)\n_harvey() {\n")
	b.WriteString("  local cur prev sub\n  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n  sub=\"${COMP_WORDS[1]}\"\n")
	b.WriteString("  case \"$prev\" in\n")
	fmt.Fprintf(&b, "    --output) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", strings.Join(s.OutputModes, " "))
	b.WriteString("    --run) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n")
	fmt.Fprintf(&b, "    -p|--prompt) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", strings.Join(s.Slash, " "))
	b.WriteString("    --model) COMPREPLY=($(compgen -W \"$(harvey completion models 2>/dev/null)\" -- \"$cur\")); return ;;\n")
	b.WriteString("    --ollama) return ;;\n  esac\n")
	b.WriteString("  if [ \"$COMP_CWORD\" -eq 1 ]; then\n")
	fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W %q -- \"$cur\")); return\n  fi\n", strings.Join(append(s.subcommands(), append(s.flagNames(false), s.flagNames(true)...)...), " "))
	b.WriteString("  if [ \"$COMP_CWORD\" -ge 3 ]; then\n    case \"$sub ${COMP_WORDS[2]}\" in\n")
	for _, k := range slices.Sorted(maps.Keys(s.SubFlags)) {
		fmt.Fprintf(&b, "      %q) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", k, strings.Join(s.SubFlags[k], " "))
	}
	b.WriteString("    esac\n  fi\n")
	b.WriteString("  case \"$sub\" in\n")
	for _, sub := range s.subcommands() {
		fmt.Fprintf(&b, "    %s) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", sub, strings.Join(s.Subcommands[sub], " "))
	}
	b.WriteString("  esac\n")
	fmt.Fprintf(&b, "  COMPREPLY=($(compgen -W %q -- \"$cur\"))\n}\ncomplete -F _harvey harvey\n", strings.Join(append(s.flagNames(false), s.flagNames(true)...), " "))
	return b.String()
}

// Zsh is the script for zsh: harvey completion zsh > "${fpath[1]}/_harvey".
func (s Spec) Zsh() string {
	var b strings.Builder
	b.WriteString("#compdef harvey\n# harvey completion for zsh: harvey completion zsh > \"${fpath[1]}/_harvey\"\n_harvey() {\n")
	b.WriteString("  local -a subcommands slash\n")
	fmt.Fprintf(&b, "  slash=(%s)\n", strings.Join(s.Slash, " "))
	b.WriteString("  subcommands=(")
	for _, sub := range s.subcommands() {
		fmt.Fprintf(&b, "%q ", sub+":"+strings.Join(s.Subcommands[sub], ", "))
	}
	b.WriteString(")\n")
	b.WriteString("  if (( CURRENT == 3 )); then\n    case $words[2] in\n")
	for _, sub := range s.subcommands() {
		fmt.Fprintf(&b, "      %s) compadd %s; return ;;\n", sub, strings.Join(s.Subcommands[sub], " "))
	}
	b.WriteString("    esac\n  fi\n")
	b.WriteString("  if (( CURRENT > 3 )); then\n    case \"$words[2] $words[3]\" in\n")
	for _, k := range slices.Sorted(maps.Keys(s.SubFlags)) {
		fmt.Fprintf(&b, "      %q) compadd -- %s; return ;;\n", k, strings.Join(s.SubFlags[k], " "))
	}
	b.WriteString("    esac\n  fi\n  _arguments -s \\\n")
	for _, f := range s.Flags {
		spec := fmt.Sprintf("%s[%s]", f.Name, f.Help)
		switch f.Name {
		case "--output":
			spec += ":mode:(" + strings.Join(s.OutputModes, " ") + ")"
		case "-p", "--prompt":
			spec += ":prompt:($slash)"
		case "--run":
			spec += ":file:_files"
		case "--model":
			spec += ":model:($(harvey completion models 2>/dev/null))"
		default:
			if f.Value {
				spec += ":value:"
			}
		}
		fmt.Fprintf(&b, "    %q \\\n", spec)
	}
	b.WriteString("    '1: :->sub' && _describe 'subcommand' subcommands\n}\n_harvey \"$@\"\n")
	return b.String()
}

// Fish is the script for fish: harvey completion fish >
// ~/.config/fish/completions/harvey.fish.
func (s Spec) Fish() string {
	var b strings.Builder
	b.WriteString("# harvey completion for fish: harvey completion fish > ~/.config/fish/completions/harvey.fish\n")
	for _, f := range s.Flags {
		line := fmt.Sprintf("complete -c harvey %s -d %q", fishOption(f.Name), f.Help)
		switch f.Name {
		case "--output":
			line += " -xa " + fmt.Sprintf("%q", strings.Join(s.OutputModes, " "))
		case "-p", "--prompt":
			line += " -xa " + fmt.Sprintf("%q", strings.Join(s.Slash, " "))
		case "--run":
			line += " -rF"
		case "--model":
			line += " -xa '(harvey completion models 2>/dev/null)'"
		default:
			if f.Value {
				line += " -x"
			}
		}
		b.WriteString(line + "\n")
	}
	for _, k := range slices.Sorted(maps.Keys(s.SubFlags)) {
		sub, w, _ := strings.Cut(k, " ")
		for _, f := range s.SubFlags[k] {
			fmt.Fprintf(&b, "complete -c harvey -n '__fish_seen_subcommand_from %s; and __fish_seen_subcommand_from %s' %s\n", sub, w, fishOption(f))
		}
	}
	for _, sub := range s.subcommands() {
		fmt.Fprintf(&b, "complete -c harvey -n __fish_use_subcommand -a %s\n", sub)
		fmt.Fprintf(&b, "complete -c harvey -n '__fish_seen_subcommand_from %s' -xa %q\n", sub, strings.Join(s.Subcommands[sub], " "))
	}
	return b.String()
}

// fishOption is a flag as fish's complete names it: -l long, -s short.
func fishOption(name string) string {
	if strings.HasPrefix(name, "--") {
		return "-l " + strings.TrimPrefix(name, "--")
	}
	return "-s " + strings.TrimPrefix(name, "-")
}
