package harvey

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/termtext"
)

// Hooks: your own policy before and after every tool call, in the shape
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
// read too. The running of hooks is hooks_run.go; harvey hooks import is
// hooks_cli.go.

// HookConfig is one hook of the hooks: list.
type HookConfig struct {
	Event    string     `yaml:"event"`              // pre_tool, post_tool, session_start, user_prompt or stop
	Match    string     `yaml:"match,omitempty"`    // tool name or pattern (Harvey's or Claude Code's name; session_start: the source); empty: every one
	When     []HookWhen `yaml:"when,omitempty"`     // every condition must hold
	Priority int        `yaml:"priority,omitempty"` // lower runs first; equal ones in the order written
	Timeout  Duration   `yaml:"timeout,omitempty"`  // default 60s
	Command  HookArgv   `yaml:"command"`            // an argv list, or a string run by sh -c
	OnError  string     `yaml:"on_error,omitempty"` // block or allow: what a hook that fails means (default: block before a call, allow after)
	// Network and Writable were a sandboxed hook's extra powers. Your own
	// hooks run as your programs now (no sandbox: they need neither), and
	// a workspace's hook may not have them (check refuses it).
	Network  bool     `yaml:"network,omitempty"`
	Writable []string `yaml:"writable,omitempty"`
	// fromWorkspace: the hook came from a workspace's agents/harvey.yaml
	// (the repository's code): it runs in the sandbox, with what a command
	// gets and nothing of yours.
	fromWorkspace bool
}

// HookWhen is a condition on one argument: it equals, contains or matches
// (a regular expression) the value. The field is Harvey's argument name
// or Claude Code's (command, path or file_path, content, ...).
type HookWhen struct {
	Field    string `yaml:"field"`
	Equals   string `yaml:"equals,omitempty"`
	Contains string `yaml:"contains,omitempty"`
	Matches  string `yaml:"matches,omitempty"`
}

// HookArgv is a hook's command: a YAML list is the argv; a string is run
// by sh -c (as Claude Code runs its hooks).
type HookArgv []string

// UnmarshalYAML reads a list or a string.
func (a *HookArgv) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		*a = HookArgv{"sh", "-c", s}
		return nil
	}
	var l []string
	if err := unmarshal(&l); err != nil {
		return fmt.Errorf("command: a list of words or a string")
	}
	*a = l
	return nil
}

// MarshalYAML writes a shell line back as the string it was read from.
func (a HookArgv) MarshalYAML() (any, error) {
	if len(a) == 3 && a[0] == "sh" && a[1] == "-c" {
		return a[2], nil
	}
	return []string(a), nil
}

const (
	hookPre          = "pre_tool"
	hookPost         = "post_tool"
	hookSessionStart = "session_start" // hooks_events.go
	hookPrompt       = "user_prompt"
	hookStop         = "stop"

	defaultHookTimeout = 60 * time.Second
)

// hookEvents maps Harvey's event names to Claude Code's.
var hookEvents = map[string]string{hookPre: "PreToolUse", hookPost: "PostToolUse",
	hookSessionStart: "SessionStart", hookPrompt: "UserPromptSubmit", hookStop: "Stop"}

// claudeTools maps Harvey's tools to Claude Code's names.
var claudeTools = map[string]string{"run_command": "Bash", "read_file": "Read", "write_file": "Write", "edit_file": "Edit",
	"search_files": "Grep", "list_files": "Glob"}

// claudeName is the name Claude Code gives a tool: its own for the
// built-in ones, mcp__SERVER__TOOL for an MCP tool, else Harvey's.
func claudeName(tool string) string {
	if n, ok := claudeTools[tool]; ok {
		return n
	}
	if server, t, ok := strings.Cut(tool, mcpNameSep); ok {
		return "mcp__" + server + "__" + t
	}
	return tool
}

// check says what is wrong with a hook, or nil.
func (h HookConfig) check() error {
	if err := h.checkEvent(); err != nil {
		return err
	}
	if len(h.Command) == 0 || h.Command[0] == "" {
		return fmt.Errorf("a hook needs a command")
	}
	if h.fromWorkspace && (len(h.Writable) > 0 || h.Network) {
		return fmt.Errorf("a workspace's hook may not say writable: or network: (it runs in the sandbox with what a command gets; only your own config's hooks run as your programs)")
	}
	if h.OnError != "" && h.OnError != "block" && h.OnError != "allow" {
		return fmt.Errorf("on_error %q: use block or allow", h.OnError)
	}
	if _, err := h.matcher(); err != nil {
		return fmt.Errorf("match %q: %v", h.Match, err)
	}
	for _, w := range h.When {
		if w.Field == "" {
			return fmt.Errorf("when: each condition names a field")
		}
		if w.Matches != "" {
			if _, err := regexp.Compile(w.Matches); err != nil {
				return fmt.Errorf("when %s matches: %v", w.Field, err)
			}
		}
	}
	return nil
}

// checkEvent says what is wrong with the hook's event and what it asks of
// it, or nil.
func (h HookConfig) checkEvent() error {
	if _, ok := hookEvents[h.Event]; !ok {
		return fmt.Errorf("event %q: use pre_tool, post_tool, session_start, user_prompt or stop", h.Event)
	}
	if (h.Event == hookPrompt || h.Event == hookStop) && h.Match != "" && h.Match != "*" {
		return fmt.Errorf("match: a %s hook has no tool to match (when: reads its fields)", h.Event)
	}
	if (h.Event == hookSessionStart || h.Event == hookStop) && h.OnError == "block" {
		return fmt.Errorf("on_error: block: a %s hook cannot block (only pre_tool, post_tool and user_prompt can)", h.Event)
	}
	return nil
}

// matcher is the pattern a tool's names are matched against, whole.
func (h HookConfig) matcher() (*regexp.Regexp, error) {
	if h.Match == "" || h.Match == "*" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + h.Match + ")$")
}

// applies reports whether the hook fires for tool with args (in Harvey's
// names) and input (in Claude Code's).
func (h HookConfig) applies(event, tool string, args, input map[string]any) bool {
	if h.Event != event {
		return false
	}
	if re, _ := h.matcher(); re != nil && !re.MatchString(tool) && !re.MatchString(claudeName(tool)) {
		return false
	}
	for _, w := range h.When {
		v, ok := args[w.Field]
		if !ok {
			v, ok = input[w.Field]
		}
		if !ok || !w.holds(fmt.Sprint(v)) {
			return false
		}
	}
	return true
}

func (w HookWhen) holds(v string) bool {
	switch {
	case w.Equals != "" && v != w.Equals:
		return false
	case w.Contains != "" && !strings.Contains(v, w.Contains):
		return false
	case w.Matches != "":
		re, err := regexp.Compile(w.Matches)
		return err == nil && re.MatchString(v)
	}
	return true
}

// blocksOnError reports which way a failing hook decides: a pre_tool hook
// blocks unless it says on_error: allow; a post_tool hook lets the result
// stand unless it says on_error: block.
func (h HookConfig) blocksOnError() bool {
	if h.OnError != "" {
		return h.OnError == "block"
	}
	return h.Event == hookPre || h.Event == hookPrompt
}

// powers says in words what the hook will be able to do, for the
// question that confirms a workspace's hooks.
func (h HookConfig) powers() string {
	if len(h.Writable) > 0 || h.Network {
		var asks []string
		if len(h.Writable) > 0 {
			asks = append(asks, "to write "+strings.Join(h.Writable, ", "))
		}
		if h.Network {
			asks = append(asks, "the network")
		}
		return "asks for " + strings.Join(asks, " and ") + ", which only your own config can give: it will NOT run"
	}
	return "in the sandbox, as a command: it reads and writes the workspace, sees none of your home or environment, reaches package registries only"
}

func (h HookConfig) timeout() time.Duration {
	return cmp.Or(time.Duration(h.Timeout), defaultHookTimeout)
}

// shown is the hook in a few words for the user: its event, tools and
// command.
func (h HookConfig) shown() string {
	if h.Event == hookPrompt || h.Event == hookStop {
		return fmt.Sprintf("%s: %s", h.Event, termtext.QuoteArgv(h.Command))
	}
	return fmt.Sprintf("%s %s: %s", h.Event, cmp.Or(h.Match, "*"), termtext.QuoteArgv(h.Command))
}

// sortHooks orders hooks by priority, keeping the written order of equal
// ones.
func sortHooks(hs []HookConfig) []HookConfig {
	out := slices.Clone(hs)
	slices.SortStableFunc(out, func(a, b HookConfig) int { return cmp.Compare(a.Priority, b.Priority) })
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
	in := map[string]any{"hook_event_name": hookEvents[event], "event": event,
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
