package hooks

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
	"gopkg.in/yaml.v3"
)

// The command line's harvey hooks: the hooks of your own config, in the order they run, and
// harvey hooks import, which lists (or adds) the hooks of Claude Code's
// settings files as Harvey hooks (PreToolUse, PostToolUse, SessionStart,
// UserPromptSubmit, Stop), as harvey mcp import does for servers. Its
// other events have no counterpart and are named as left out.

// Usage is harvey hooks' usage.
const Usage = `usage: harvey hooks [list]
       harvey hooks import [N... | --all] [--from FILE]   Claude Code's hooks (~/.claude/settings.json, .claude/settings*.json)`

// Command runs harvey hooks with args (those after "hooks") in the
// working directory, the workspace.
func Command(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "list" {
		cfg, _, err := configfile.LoadUser()
		if err != nil {
			fmt.Fprintf(stderr, "harvey: %v\n", err)
			return 1
		}
		if len(cfg.Hooks) == 0 {
			fmt.Fprintln(stdout, "no hooks in your config (harvey hooks import brings Claude Code's; docs/hooks.md)")
			return 0
		}
		for i, h := range Sort(cfg.Hooks) {
			fmt.Fprintf(stdout, "%d. %s\n", i+1, termtext.Sanitize(configfile.HookShown(h)))
		}
		return 0
	}
	if args[0] != "import" {
		fmt.Fprintln(stderr, Usage)
		return 2
	}
	return hooksImport(args[1:], stdout, stderr)
}

// claudeHook is one hook found in a Claude Code settings file, and where
// it goes: your own config, or (a project's hook) this workspace's.
type claudeHook struct {
	from    string
	hook    config.HookConfig
	project bool
}

// sandboxNote says once, where hooks are imported, how your hooks run and
// how to widen what one may use.
const sandboxNote = "these hooks run in the sandbox made for hooks: of your home they read what their command names (a script, with its directory) and write only a file their command redirects to (>> ~/.claude/log.txt); never a credential or another agent's settings. A hook whose script writes elsewhere says so when it runs: add writable: [PATH] (or readable:) to it in your config, or unsandboxed: true to run it as your program (docs/hooks.md)"

func hooksImport(args []string, stdout, stderr io.Writer) int {
	files, picks, all := hooksImportArgs(args)
	found, code := findClaudeHooks(files, stdout, stderr)
	if code != 0 {
		return code
	}
	if len(found) == 0 {
		fmt.Fprintln(stdout, "no hooks Harvey can run found in Claude Code's settings")
		return 0
	}
	have := importedHooks()
	if !all && len(picks) == 0 {
		for i, h := range found {
			fmt.Fprintf(stdout, "%d. %s (from %s → %s)%s\n", i+1, termtext.Sanitize(configfile.HookShown(h.hook)), h.from, hookDestination(h.project),
				map[bool]string{true: ": already imported", false: ""}[have[Key(h.hook)]])
		}
		fmt.Fprintln(stdout, "add them with: harvey hooks import N [N...] (or --all)")
		return 0
	}
	var mine, project []config.HookConfig
	already := 0
	for i, h := range found {
		if !all && !slices.Contains(picks, strconv.Itoa(i+1)) {
			continue
		}
		switch {
		case have[Key(h.hook)]:
			already++
		case h.project:
			project = append(project, h.hook)
		default:
			mine = append(mine, h.hook)
		}
		have[Key(h.hook)] = true
	}
	if len(mine)+len(project)+already == 0 {
		fmt.Fprintln(stderr, "harvey: no hook with that number (harvey hooks import lists them)")
		return 1
	}
	return saveImported(mine, project, already, stdout, stderr)
}

// hooksImportArgs reads import's arguments: the settings files (default:
// yours and this project's), the hooks picked by number, or --all.
func hooksImportArgs(args []string) (files, picks []string, all bool) {
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
	return files, picks, all
}

// findClaudeHooks reads the hooks of each settings file there is, saying
// which it leaves out.
func findClaudeHooks(files []string, stdout, stderr io.Writer) ([]claudeHook, int) {
	var found []claudeHook
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		hs, left, err := Import(b)
		if err != nil {
			fmt.Fprintf(stderr, "harvey: %s: %v\n", f, err)
			return nil, 1
		}
		for _, h := range hs {
			found = append(found, claudeHook{from: f, hook: h, project: ProjectHook(f, strings.Join(h.Command, " "))})
		}
		for _, l := range left {
			fmt.Fprintf(stdout, "%s: not imported: %s\n", f, l)
		}
	}
	return found, 0
}

// hookDestination names where an imported hook goes.
func hookDestination(project bool) string {
	if project {
		return "this workspace's " + config.Path
	}
	return "your config"
}

// importedHooks are the hooks your config and this workspace's already
// have, by hookKey.
func importedHooks() map[string]bool {
	have := map[string]bool{}
	if cfg, _, err := configfile.LoadUser(); err == nil && cfg != nil {
		for _, h := range cfg.Hooks {
			have[Key(h)] = true
		}
	}
	if b, err := os.ReadFile(config.Path); err == nil {
		var c config.Config
		if yaml.Unmarshal(b, &c) == nil {
			for _, h := range c.Hooks {
				have[Key(h)] = true
			}
		}
	}
	return have
}

// saveImported adds your hooks to your config and a project's to this
// workspace's config (not confirmed: the next harvey here asks, as for
// any agents/harvey.yaml Harvey did not write), and says what it did.
func saveImported(mine, project []config.HookConfig, already int, stdout, stderr io.Writer) int {
	if len(mine) > 0 {
		p, err := addHooks(mine)
		if err != nil {
			fmt.Fprintf(stderr, "harvey: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "added %s to %s\n", termtext.Plural(len(mine), "hook"), p)
		fmt.Fprintln(stdout, sandboxNote)
	}
	if len(project) > 0 {
		if err := addWorkspaceHooks(project); err != nil {
			fmt.Fprintf(stderr, "harvey: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "added %s to this workspace's %s (a project's hooks stay in their project): the next harvey here shows them and asks before they run, in the sandbox\n", termtext.Plural(len(project), "hook"), config.Path)
	}
	if already > 0 {
		fmt.Fprintf(stdout, "%s already imported, left as %s\n", termtext.Plural(already, "hook"), map[bool]string{true: "it was", false: "they were"}[already == 1])
	}
	return 0
}

// addWorkspaceHooks appends hooks to this workspace's agents/harvey.yaml,
// keeping the rest of it, through the workspace (never through a link),
// and without confirming it.
func addWorkspaceHooks(hs []config.HookConfig) error {
	ws, err := wspath.Open(".")
	if err != nil {
		return err
	}
	defer ws.Close()
	var doc yaml.Node
	if b, err := ws.ReadInternal(config.Path); err == nil {
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: %v (fix it first; it was left as it is)", config.Path, err)
		}
	}
	if len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return fmt.Errorf("%s is not a mapping", config.Path)
	}
	if err := appendHooks(top, hs); err != nil {
		return err
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	return ws.WriteInternalAtomic(config.Path, out, 0o600)
}

// addHooks appends hooks to hooks: in your own config (keeping its
// comments).
func addHooks(hs []config.HookConfig) (string, error) {
	return configfile.EditUser(func(top *yaml.Node) error { return appendHooks(top, hs) })
}

// appendHooks appends hooks to the hooks: list of a config's mapping.
func appendHooks(top *yaml.Node, hs []config.HookConfig) error {
	list := configfile.MapEntry(top, "hooks", false)
	if list == nil || list.Kind != yaml.SequenceNode {
		list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		configfile.SetMapKey(top, "hooks", list)
	}
	for _, h := range hs {
		var v yaml.Node
		if err := v.Encode(h); err != nil {
			return err
		}
		list.Content = append(list.Content, &v)
	}
	return nil
}
