package harvey

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// harvey hooks: the hooks of your own config, in the order they run, and
// harvey hooks import, which lists (or adds) the hooks of Claude Code's
// settings files as Harvey hooks (PreToolUse, PostToolUse, SessionStart,
// UserPromptSubmit, Stop), as harvey mcp import does for servers. Its
// other events have no counterpart and are named as left out.

const hooksUsage = `usage: harvey hooks [list]
       harvey hooks import [N... | --all] [--from FILE]   Claude Code's hooks (~/.claude/settings.json, .claude/settings*.json)`

func hooksCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "list" {
		cfg, _, err := loadUserConfig()
		if err != nil {
			fmt.Fprintf(stderr, "harvey: %v\n", err)
			return 1
		}
		if len(cfg.Hooks) == 0 {
			fmt.Fprintln(stdout, "no hooks in your config (harvey hooks import brings Claude Code's; docs/hooks.md)")
			return 0
		}
		for i, h := range sortHooks(cfg.Hooks) {
			fmt.Fprintf(stdout, "%d. %s\n", i+1, sanitizeForTerminal(h.shown()))
		}
		return 0
	}
	if args[0] != "import" {
		fmt.Fprintln(stderr, hooksUsage)
		return 2
	}
	return hooksImport(args[1:], stdout, stderr)
}

// claudeHook is one hook found in a Claude Code settings file.
type claudeHook struct {
	from string
	hook HookConfig
}

func hooksImport(args []string, stdout, stderr io.Writer) int {
	var files []string
	var picks []string
	all := false
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--from" && i+1 < len(args):
			files = append(files, args[i+1])
			i++
		case args[i] == "--all":
			all = true
		default:
			picks = append(picks, args[i])
		}
	}
	if len(files) == 0 {
		home, _ := os.UserHomeDir()
		files = []string{filepath.Join(home, ".claude", "settings.json"), filepath.Join(".claude", "settings.json"), filepath.Join(".claude", "settings.local.json")}
	}
	var found []claudeHook
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		hs, left, err := claudeHooks(b)
		if err != nil {
			fmt.Fprintf(stderr, "harvey: %s: %v\n", f, err)
			return 1
		}
		for _, h := range hs {
			found = append(found, claudeHook{from: f, hook: h})
		}
		for _, l := range left {
			fmt.Fprintf(stdout, "%s: not imported: %s\n", f, l)
		}
	}
	if len(found) == 0 {
		fmt.Fprintln(stdout, "no hooks Harvey can run found in Claude Code's settings")
		return 0
	}
	if !all && len(picks) == 0 {
		for i, h := range found {
			fmt.Fprintf(stdout, "%d. %s (from %s)\n", i+1, sanitizeForTerminal(h.hook.shown()), h.from)
		}
		fmt.Fprintln(stdout, "add them with: harvey hooks import N [N...] (or --all)")
		return 0
	}
	var add []HookConfig
	for i, h := range found {
		if all || slices.Contains(picks, strconv.Itoa(i+1)) {
			add = append(add, h.hook)
		}
	}
	if len(add) == 0 {
		fmt.Fprintln(stderr, "harvey: no hook with that number (harvey hooks import lists them)")
		return 1
	}
	p, err := addHooks(add)
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "added %s to %s\n", plural(len(add), "hook"), p)
	return 0
}

// claudeHooks reads the hooks of a Claude Code settings file: each
// command hook of an event Harvey has becomes a Harvey hook with
// its matcher, its command run by sh -c and its timeout (seconds). It
// blocks only on exit 2 or a block answer, as in Claude Code: another
// failure lets the call go on (on_error: allow).
func claudeHooks(b []byte) (hooks []HookConfig, left []string, err error) {
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string  `json:"type"`
				Command string  `json:"command"`
				Timeout float64 `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("not JSON Harvey can read: %v", err)
	}
	events := map[string]string{}
	for h, c := range hookEvents {
		events[c] = h
	}
	for _, ev := range sortedKeys(s.Hooks) {
		event, ok := events[ev]
		for _, m := range s.Hooks[ev] {
			for _, h := range m.Hooks {
				switch {
				case !ok:
					left = append(left, fmt.Sprintf("a %s hook (%s): Harvey has no such event", ev, clip(h.Command, 60)))
				case h.Type != "" && h.Type != "command":
					left = append(left, fmt.Sprintf("a %s hook of type %q: only commands run", ev, h.Type))
				default:
					hc := HookConfig{Event: event, Match: strings.TrimSpace(m.Matcher), Command: HookArgv{"sh", "-c", h.Command}, OnError: "allow"}
					if event == hookPrompt || event == hookStop {
						hc.Match = "" // Claude Code ignores a matcher there too
					}
					if h.Timeout > 0 {
						hc.Timeout = Duration(h.Timeout * float64(1e9))
					}
					hooks = append(hooks, hc)
				}
			}
		}
	}
	return hooks, left, nil
}

// addHooks appends hooks to hooks: in your own config (keeping its
// comments).
func addHooks(hs []HookConfig) (string, error) {
	return editUserConfig(func(top *yaml.Node) error {
		list := mapEntry(top, "hooks", false)
		if list == nil || list.Kind != yaml.SequenceNode {
			list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			setMapKey(top, "hooks", list)
		}
		for _, h := range hs {
			var v yaml.Node
			if err := v.Encode(h); err != nil {
				return err
			}
			list.Content = append(list.Content, &v)
		}
		return nil
	})
}
