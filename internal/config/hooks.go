package config

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// HookConfig is one hook of the hooks: list.
type HookConfig struct {
	Event    string     `yaml:"event"`              // pre_tool, post_tool, session_start, user_prompt or stop
	Match    string     `yaml:"match,omitempty"`    // tool name or pattern (Harvey's or Claude Code's name; session_start: the source); empty: every one
	When     []HookWhen `yaml:"when,omitempty"`     // every condition must hold
	Priority int        `yaml:"priority,omitempty"` // lower runs first; equal ones in the order written
	Timeout  Duration   `yaml:"timeout,omitempty"`  // default 60s
	Command  HookArgv   `yaml:"command"`            // an argv list, or a string run by sh -c
	OnError  string     `yaml:"on_error,omitempty"` // block or allow: what a hook that fails means (default: block before a call, allow after)
	// What a hook of your own gets besides its sandbox (internal/sandboxpolicy's
	// HookView: of your home, what its command names — its script readable,
	// a file it redirects to writable — never a credential nor another
	// agent's settings; your environment less its secrets): more readable
	// and writable paths (an agent's settings too, where named), the
	// network, or no sandbox at all (unsandboxed: it runs as your program,
	// and whatever it runs — a workspace's tests, its scripts — runs as
	// you). A workspace's hook may have none of them (Check refuses it).
	Network     bool     `yaml:"network,omitempty"`
	Readable    []string `yaml:"readable,omitempty"`
	Writable    []string `yaml:"writable,omitempty"`
	Unsandboxed bool     `yaml:"unsandboxed,omitempty"`
	// FromWorkspace: the hook came from a workspace's agents/harvey.yaml
	// (the repository's code): it runs in the sandbox, with what a command
	// gets and nothing of yours.
	FromWorkspace bool `yaml:"-"`
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
	HookPre          = "pre_tool"
	HookPost         = "post_tool"
	HookSessionStart = "session_start" // hooks_events.go
	HookPrompt       = "user_prompt"
	HookStop         = "stop"
	HookSubagentStop = "subagent_stop" // a delegated sub-agent's answer (delegate)

	DefaultHookTimeout = 60 * time.Second
)

// HookEvents maps Harvey's event names to Claude Code's.
var HookEvents = map[string]string{HookPre: "PreToolUse", HookPost: "PostToolUse",
	HookSessionStart: "SessionStart", HookPrompt: "UserPromptSubmit", HookStop: "Stop",
	HookSubagentStop: "SubagentStop"}

// IsStop reports whether event comes after a reply (stop, subagent_stop):
// no tool to match, and a block sends the model on.
func IsStop(event string) bool { return event == HookStop || event == HookSubagentStop }

// Check says what is wrong with a hook, or nil.
func (h HookConfig) Check() error {
	if err := h.checkEvent(); err != nil {
		return err
	}
	if len(h.Command) == 0 || h.Command[0] == "" {
		return fmt.Errorf("a hook needs a command")
	}
	if h.FromWorkspace && h.asksMore() {
		return fmt.Errorf("a workspace's hook may not say readable:, writable:, network: or unsandboxed: (it runs in the sandbox with what a command gets; only your own config can give a hook more)")
	}
	if h.OnError != "" && h.OnError != "block" && h.OnError != "allow" {
		return fmt.Errorf("on_error %q: use block or allow", h.OnError)
	}
	if _, err := h.Matcher(); err != nil {
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
	if _, ok := HookEvents[h.Event]; !ok {
		return fmt.Errorf("event %q: use pre_tool, post_tool, session_start, user_prompt, stop or subagent_stop", h.Event)
	}
	if (h.Event == HookPrompt || IsStop(h.Event)) && h.Match != "" && h.Match != "*" {
		return fmt.Errorf("match: a %s hook has no tool to match (when: reads its fields)", h.Event)
	}
	if (h.Event == HookSessionStart || IsStop(h.Event)) && h.OnError == "block" {
		return fmt.Errorf("on_error: block: a %s hook cannot block (only pre_tool, post_tool and user_prompt can)", h.Event)
	}
	return nil
}

// Matcher is the pattern a tool's names are matched against, whole.
func (h HookConfig) Matcher() (*regexp.Regexp, error) {
	if h.Match == "" || h.Match == "*" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + h.Match + ")$")
}

// Holds reports whether v meets the condition.
func (w HookWhen) Holds(v string) bool {
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

// BlocksOnError reports which way a failing hook decides: a pre_tool hook
// blocks unless it says on_error: allow; a post_tool hook lets the result
// stand unless it says on_error: block.
func (h HookConfig) BlocksOnError() bool {
	if h.OnError != "" {
		return h.OnError == "block"
	}
	return h.Event == HookPre || h.Event == HookPrompt
}

// Powers says in words what the hook will be able to do, for the
// question that confirms a workspace's hooks.
func (h HookConfig) Powers() string {
	if h.asksMore() {
		var asks []string
		if h.Unsandboxed {
			asks = append(asks, "to run outside the sandbox")
		}
		if len(h.Readable) > 0 {
			asks = append(asks, "to read "+strings.Join(h.Readable, ", "))
		}
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

// asksMore reports whether the hook asks for more than a command gets.
func (h HookConfig) asksMore() bool {
	return len(h.Readable) > 0 || len(h.Writable) > 0 || h.Network || h.Unsandboxed
}

// TimeLimit is how long the hook may run (its timeout, 60 s by default).
func (h HookConfig) TimeLimit() time.Duration {
	return cmp.Or(time.Duration(h.Timeout), DefaultHookTimeout)
}

// Describe is the condition in words.
func (w HookWhen) Describe() string {
	switch {
	case w.Equals != "":
		return fmt.Sprintf("equals %q", w.Equals)
	case w.Contains != "":
		return fmt.Sprintf("contains %q", w.Contains)
	case w.Matches != "":
		return fmt.Sprintf("matches %q", w.Matches)
	}
	return "is given"
}
