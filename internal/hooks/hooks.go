// Package hooks is your own policy before and after every tool call, in the shape
// people already write for other agents. A hook (hooks: in your config)
// names an event (pre_tool, post_tool; the conversation's session_start,
// user_prompt and stop are hooks_events.go), which tools it applies to, an
// optional condition on the arguments, a priority, a timeout and a
// command. The command gets one JSON object on stdin and answers by its
// exit status (0 go on, 2 block with its stderr as the reason) or a JSON
// object on stdout (allow, block, modify the arguments, amend the result).
// Claude Code's PreToolUse and PostToolUse scripts work unchanged: the
// object carries its field names (tool_name "Bash", tool_input with
// file_path, old_string, ...) beside Harvey's, and its answers
// (decision, hookSpecificOutput.permissionDecision and updatedInput) are
// read too.
//
// Runner (hooks_run.go, hooks_events.go) runs the session's hooks around
// each call (Pre, Post) and the conversation (SessionStart, Prompt, Stop),
// through a Host: the session's gate runs a workspace's hook sandboxed,
// your own run as your programs. The transcript a hook reads
// (transcript_path) is hooks_transcript.go; Import reads Claude Code's
// settings files, and Command (cli.go) is harvey hooks: your hooks listed,
// and Claude Code's imported into your config or, a project's, into its
// workspace's. A new event is added here and in internal/config's
// HookEvents; the schema of a hook (config.HookConfig) and its checks are
// internal/config's.
package hooks

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// claudeTools maps Harvey's tools to Claude Code's names.
var claudeTools = map[string]string{"run_command": "Bash", "read_file": "Read", "write_file": "Write", "edit_file": "Edit",
	"search_files": "Grep", "list_files": "Glob"}

// claudeName is the name Claude Code gives a tool: its own for the
// built-in ones, mcp__SERVER__TOOL for an MCP tool, else Harvey's.
func claudeName(tool string) string {
	if n, ok := claudeTools[tool]; ok {
		return n
	}
	if server, t, ok := strings.Cut(tool, config.MCPNameSep); ok {
		return "mcp__" + server + "__" + t
	}
	return tool
}

// hookApplies reports whether h fires for tool with args (in Harvey's
// names) and input (in Claude Code's).
func hookApplies(h config.HookConfig, event, tool string, args, input map[string]any) bool {
	if h.Event != event {
		return false
	}
	if re, _ := h.Matcher(); re != nil && !re.MatchString(tool) && !re.MatchString(claudeName(tool)) {
		return false
	}
	for _, w := range h.When {
		v, ok := args[w.Field]
		if !ok {
			v, ok = input[w.Field]
		}
		if !ok || !w.Holds(fmt.Sprint(v)) {
			return false
		}
	}
	return true
}

// Sort orders hooks by priority, keeping the written order of equal
// ones.
func Sort(hs []config.HookConfig) []config.HookConfig {
	out := slices.Clone(hs)
	slices.SortStableFunc(out, func(a, b config.HookConfig) int { return cmp.Compare(a.Priority, b.Priority) })
	return out
}

// claudeInput is a call's arguments as Claude Code names them for the
// tools that correspond (file_path absolute, timeout in ms); other tools'
// arguments are given as they are.
func claudeInput(tool string, args map[string]any, root string) map[string]any {
	abs := func(k string) string {
		p, _ := args[k].(string)
		if p == "" {
			p = "."
		}
		return filepath.Join(root, filepath.FromSlash(p))
	}
	in := map[string]any{}
	switch tool {
	case "run_command":
		in["command"] = args["command"]
		if t, ok := args["timeout"].(float64); ok {
			in["timeout"] = t * 1000
		}
		if bg, ok := args["background"].(bool); ok && bg {
			in["run_in_background"] = true // Claude Code's name for it
		}
	case "read_file":
		in["file_path"] = abs("path")
		copyKeys(in, args, "offset", "limit")
	case "write_file":
		in["file_path"], in["content"] = abs("path"), args["content"]
	case "edit_file":
		in["file_path"], in["old_string"], in["new_string"] = abs("path"), args["old_text"], args["new_text"]
		copyKeys(in, args, "replace_all")
	case "search_files":
		in["pattern"], in["path"] = args["pattern"], abs("path")
	case "list_files":
		in["pattern"], in["path"] = "*", abs("path")
	default:
		return args
	}
	return in
}

// fromClaudeInput maps Claude Code's updatedInput back to Harvey's
// arguments (a path made relative to the workspace).
func fromClaudeInput(tool string, in, args map[string]any, root string) map[string]any {
	if _, ok := claudeTools[tool]; !ok {
		return in
	}
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	rel := func(v any) any {
		p, ok := v.(string)
		if !ok {
			return v
		}
		if r, err := filepath.Rel(root, p); err == nil && filepath.IsAbs(p) {
			return filepath.ToSlash(r)
		}
		return p
	}
	names := map[string]string{"command": "command", "file_path": "path", "path": "path", "content": "content",
		"old_string": "old_text", "new_string": "new_text", "replace_all": "replace_all", "offset": "offset", "limit": "limit", "pattern": "pattern"}
	for k, v := range in {
		h, ok := names[k]
		if !ok {
			continue
		}
		if h == "path" {
			v = rel(v)
		}
		out[h] = v
	}
	if t, ok := in["timeout"].(float64); ok && tool == "run_command" {
		out["timeout"] = t / 1000
	}
	return out
}

func copyKeys(dst, src map[string]any, keys ...string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}

// hookInput is the JSON object a hook reads on stdin.
func hookInput(event, tool, id string, args map[string]any, root string, result *hookResult, transcript string) []byte {
	in := map[string]any{
		"tool_name": claudeName(tool), "harvey_tool": tool, "tool_use_id": id,
		"tool_input": claudeInput(tool, args, root), "arguments": args,
	}
	if result != nil {
		in["result"], in["status"] = result.text, result.status
		in["tool_response"] = map[string]any{"output": result.text, "status": result.status, "success": result.status == "ok"}
		if result.response != nil {
			in["tool_response"] = result.response // Claude Code's shape (Bash: stdout, stderr, interrupted)
		}
	}
	return eventInput(event, in, root, transcript)
}

// eventInput is the JSON object a hook reads on stdin: the event's fields
// and what every event carries (its name in Harvey's words and Claude
// Code's, the workspace, the session).
func eventInput(event string, fields map[string]any, root, transcript string) []byte {
	in := map[string]any{"hook_event_name": config.HookEvents[event], "event": event,
		"cwd": root, "workspace": root, "session_id": hookSession, "permission_mode": "default", "transcript_path": transcript}
	maps.Copy(in, fields)
	b, _ := json.Marshal(in)
	return b
}

// hookSession names this Harvey process to its hooks (session_id: a hook
// that keeps state per session keys it by this).
var hookSession = rand.Text()

// hookResult is a call's result as a post_tool hook sees it.
type hookResult struct {
	text, status string
	response     map[string]any // the tool's own tool_response, when it gives one
}

// hookAnswer is what a hook decided.
type hookAnswer struct {
	block   bool
	reason  string
	modify  map[string]any // new arguments (Harvey's names)
	amend   *string        // a new result
	context string         // added to what the model reads (additionalContext), redacted and within the hooks' budget
}

// parseHookAnswer reads a hook's stdout: empty is "go on"; otherwise a
// JSON object in Harvey's form ({"decision": "block", "reason": ...,
// "modify": {...}, "amend": "..."}) or Claude Code's (decision: block,
// hookSpecificOutput.permissionDecision deny with its reason,
// updatedInput, continue: false with stopReason).
func parseHookAnswer(out []byte, tool string, args map[string]any, root string) (hookAnswer, error) {
	text := strings.TrimSpace(string(out))
	if text == "" {
		return hookAnswer{}, nil
	}
	v, a, err := readHookReply(text, true)
	if err != nil {
		return a, err
	}
	a.modify = v.Modify
	if v.Specific.Updated != nil {
		a.modify = fromClaudeInput(tool, v.Specific.Updated, args, root)
	}
	a.amend = v.Amend
	a.context = strings.TrimSpace(v.Context + "\n" + v.Specific.Context)
	return a, nil
}

// hookReply is a hook's JSON answer, in Harvey's words and Claude Code's,
// for every event (hooks_events.go reads its context).
type hookReply struct {
	Decision   string         `json:"decision"`
	Reason     string         `json:"reason"`
	Modify     map[string]any `json:"modify"`
	Amend      *string        `json:"amend"`
	Context    string         `json:"context"`
	Continue   *bool          `json:"continue"`
	StopReason string         `json:"stopReason"`
	Specific   struct {
		Permission string         `json:"permissionDecision"`
		Why        string         `json:"permissionDecisionReason"`
		Updated    map[string]any `json:"updatedInput"`
		Context    string         `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// readHookReply reads a JSON answer and whether it blocks (continue: false
// does where continueBlocks), and with what reason; a decision it does not
// know is an error, as is text that is not a JSON object.
func readHookReply(text string, continueBlocks bool) (hookReply, hookAnswer, error) {
	var v hookReply
	var a hookAnswer
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return v, a, fmt.Errorf("its answer is not a JSON object: %s", termtext.OneLine(termtext.Clip(text, 80)))
	}
	switch {
	case v.Decision == "block" || v.Specific.Permission == "deny":
		a.block, a.reason = true, cmp.Or(v.Reason, v.Specific.Why, "blocked by a hook")
	case continueBlocks && v.Continue != nil && !*v.Continue:
		a.block, a.reason = true, cmp.Or(v.StopReason, v.Reason, "stopped by a hook")
	case v.Decision != "" && v.Decision != "allow" && v.Decision != "approve":
		return v, a, fmt.Errorf("decision %q: use allow or block", v.Decision)
	}
	return v, a, nil
}

// ProjectHook reports whether a hook belongs to the project it was found
// for: it comes from the workspace's own .claude/ settings, or its
// command runs a project's script — one named by $CLAUDE_PROJECT_DIR
// (Claude Code's form), $PWD or $(pwd), ./ or ../, or a relative path run
// as the command or by an interpreter (.claude/hooks/x.sh, python3
// tools/lint.py). Imported into your own config, it would run in every
// repository that ships that path.
func ProjectHook(from, command string) bool {
	if !filepath.IsAbs(from) {
		return true
	}
	for _, v := range []string{"CLAUDE_PROJECT_DIR", "$PWD", "${PWD}", "$(pwd)", "`pwd`"} {
		if strings.Contains(command, v) {
			return true
		}
	}
	words := shellWords(command)
	for i, w := range words {
		if strings.HasPrefix(w, "./") || strings.HasPrefix(w, "../") {
			return true
		}
		commandWord := i == 0 || slices.Contains([]string{";", "&&", "||", "|", "(", "&"}, words[i-1]) || slices.Contains(interpreters, filepath.Base(words[i-1]))
		if commandWord && strings.Contains(w, "/") && !strings.HasPrefix(w, "/") && !strings.HasPrefix(w, "~") && !strings.HasPrefix(w, "$") && !strings.HasPrefix(w, "-") {
			return true
		}
	}
	return false
}

// interpreters run the script named after them.
var interpreters = []string{"sh", "bash", "zsh", "dash", "python", "python3", "node", "ruby", "perl", "bun", "deno", "tsx", "ts-node", "source", "."}

// shellWords splits a command line as a shell does for this purpose:
// words (quotes removed, quoted text kept whole) and the operators ; && ||
// | ( & as words of their own.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in := false // a word has begun
	var quote rune
	flush := func() {
		if in {
			out = append(out, cur.String())
			cur.Reset()
			in = false
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			flush()
		case strings.ContainsRune(";&|()", r):
			flush()
			op := string(r)
			if i+1 < len(rs) && (r == '&' || r == '|') && rs[i+1] == r {
				op += string(r)
				i++
			}
			out = append(out, op)
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	flush()
	return out
}

// Key is what makes two hooks the same for import: event, match and
// command.
func Key(h config.HookConfig) string {
	return h.Event + "\x00" + h.Match + "\x00" + strings.Join(h.Command, "\x00")
}

// Import reads the hooks of a Claude Code settings file: each
// command hook of an event Harvey has becomes a Harvey hook with
// its matcher, its command run by sh -c and its timeout (seconds). It
// blocks only on exit 2 or a block answer, as in Claude Code: another
// failure lets the call go on (on_error: allow).
func Import(b []byte) (hooks []config.HookConfig, left []string, err error) {
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
	for h, c := range config.HookEvents {
		events[c] = h
	}
	for _, ev := range slices.Sorted(maps.Keys(s.Hooks)) {
		event, ok := events[ev]
		for _, m := range s.Hooks[ev] {
			for _, h := range m.Hooks {
				switch {
				case !ok:
					left = append(left, fmt.Sprintf("a %s hook (%s): Harvey has no such event", ev, termtext.Clip(h.Command, 60)))
				case h.Type != "" && h.Type != "command":
					left = append(left, fmt.Sprintf("a %s hook of type %q: only commands run", ev, h.Type))
				default:
					hc := config.HookConfig{Event: event, Match: strings.TrimSpace(m.Matcher), Command: config.HookArgv{"sh", "-c", h.Command}, OnError: "allow"}
					if event == config.HookPrompt || config.IsStop(event) {
						hc.Match = "" // Claude Code ignores a matcher there too
					}
					if h.Timeout > 0 {
						hc.Timeout = config.Duration(h.Timeout * float64(1e9))
					}
					hooks = append(hooks, hc)
				}
			}
		}
	}
	return hooks, left, nil
}
