package hooks

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// Hooks around the conversation rather than a tool call (hooks.go has the
// contract), in the shape of Claude Code's SessionStart, UserPromptSubmit
// and Stop:
//
//   - session_start runs when a session starts (source "startup", or
//     "resume" with --continue) and after /clear (source "clear"); match:
//     is matched against the source. What it prints goes into your next
//     message as context.
//   - user_prompt runs before each prompt goes to the model (its text in
//     "prompt", which when: can read). It may block the prompt (exit 2 or
//     a block answer: the reason is yours to read, the model sees
//     nothing) or print context that goes into that message.
//   - stop runs when the model has finished a reply (its text in
//     "last_assistant_message"). One that blocks sends its reason to the
//     model, which goes on ("stop_hook_active" is then true); at most
//     MaxStopRounds times a prompt.
//
// Context a hook adds is redacted and goes into the user's message, never
// the system prompt (the prompt the server evaluated stays reusable),
// within hookContextMax bytes a turn; what is cut is said.

const (
	hookContextMax = 4 << 10
	MaxStopRounds  = 3
)

// eventSubjects are what each event is about, in the user's lines.
var eventSubjects = map[string]string{config.HookSessionStart: "the session", config.HookPrompt: "your prompt", config.HookStop: "the reply",
	config.HookSubagentStop: "the sub-agent's answer"}

// Has reports whether any hook is for event.
func (r *Runner) Has(event string) bool {
	if r == nil {
		return false
	}
	for _, h := range r.hooks {
		if h.Event == event {
			return true
		}
	}
	return false
}

// event runs the hooks of a conversation event that apply, in order.
// subject is what match: reads (session_start's source); fields go to the
// hook and are what when: reads. It returns the context they add and,
// when one blocks, why (the hooks after it do not run).
func (r *Runner) event(ctx context.Context, event, subject string, fields map[string]any) (added string, block *Blocked) {
	if !r.Has(event) {
		return "", nil
	}
	about := eventSubjects[event]
	var b strings.Builder
	for _, h := range r.hooks {
		if !hookApplies(h, event, subject, fields, nil) {
			continue
		}
		out, blocked, err := r.exec(ctx, h, about, eventInput(event, fields, r.root, r.transcriptPath()))
		var ans hookAnswer
		if err == nil && blocked == nil {
			ans, err = parseEventAnswer(out, event)
		}
		switch {
		case err != nil:
			if r.failed(h, about, err) {
				return "", &Blocked{hook: configfile.HookShown(h), reason: "the hook failed (" + termtext.OneLine(err.Error()) + ")"}
			}
			continue
		case blocked != nil:
			ans = *blocked
		}
		if ans.block && event == config.HookSessionStart {
			r.tell(h, about, "said", ans.reason) // a session's start is not blocked: the line is all
		} else if ans.block {
			r.tell(h, about, map[string]string{config.HookPrompt: "blocked", config.HookStop: "continued", config.HookSubagentStop: "continued"}[event], ans.reason)
			return "", &Blocked{hook: configfile.HookShown(h), reason: ans.reason}
		}
		if ans.amend != nil && strings.TrimSpace(*ans.amend) != "" {
			text := secrets.Redact(strings.TrimSpace(*ans.amend))
			r.tell(h, about, "added context to", fmt.Sprintf("%d bytes", len(text)))
			fmt.Fprintf(&b, "[context from your hook: %s]\n%s\n\n", configfile.HookShown(h), text)
		}
	}
	return clipContext(b.String()), nil
}

// clipContext keeps the hooks' context within hookContextMax, saying what
// it cut.
func clipContext(s string) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= hookContextMax {
		return s
	}
	cut := strings.LastIndexByte(s[:hookContextMax], '\n')
	if cut < hookContextMax/2 {
		cut = hookContextMax
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[… %d more bytes from your hooks, past their budget of %d]", len(s)-cut, hookContextMax)
}

// parseEventAnswer reads what a conversation hook printed: plain text is
// context to add (Claude Code's form for SessionStart and
// UserPromptSubmit; a stop hook's is ignored); a JSON object may block
// ("decision": "block" with a "reason", or "continue": false) and add
// context (Harvey's "context", Claude Code's
// hookSpecificOutput.additionalContext).
func parseEventAnswer(out []byte, event string) (hookAnswer, error) {
	text := strings.TrimSpace(string(out))
	var a hookAnswer
	if text == "" {
		return a, nil
	}
	if !strings.HasPrefix(text, "{") {
		if !config.IsStop(event) {
			a.amend = &text
		}
		return a, nil
	}
	v, a, err := readHookReply(text, !config.IsStop(event))
	if err != nil {
		return a, err
	}
	if c := strings.TrimSpace(v.Context + "\n" + v.Specific.Context); c != "" && !config.IsStop(event) {
		a.amend = &c
	}
	return a, nil
}

// SessionStart runs the session_start hooks (source: startup, resume,
// clear) and keeps what they add for the next prompt.
func (r *Runner) SessionStart(ctx context.Context, source string) {
	if !r.Has(config.HookSessionStart) {
		return
	}
	added, _ := r.event(ctx, config.HookSessionStart, source, map[string]any{"source": source})
	r.pending = added
}

// Prompt runs the user_prompt hooks on a prompt: the context to put
// before it in the message (with what session_start left), or the error
// that stops it.
func (r *Runner) Prompt(ctx context.Context, prompt string) (string, error) {
	if r == nil {
		return "", nil
	}
	added, block := r.event(ctx, config.HookPrompt, "", map[string]any{"prompt": prompt})
	if block != nil {
		return "", fmt.Errorf("your prompt was not sent: %w", block)
	}
	if r.pending != "" {
		added = clipContext(r.pending + "\n\n" + added)
		r.pending = ""
	}
	return added, nil
}

// Stop runs the stop hooks after a reply; one that blocks returns the
// reason the model is sent to go on.
func (r *Runner) Stop(ctx context.Context, reply string, active bool) (string, bool) {
	_, block := r.event(ctx, config.HookStop, "", map[string]any{"last_assistant_message": reply, "stop_hook_active": active})
	if block == nil {
		return "", false
	}
	return secrets.Redact(block.reason), true
}

// SubagentStop runs the subagent_stop hooks (Claude Code's SubagentStop)
// after a delegated sub-agent's answer; one that blocks returns the reason
// the sub-agent is sent to go on.
func (r *Runner) SubagentStop(ctx context.Context, task, reply string, active bool) (string, bool) {
	_, block := r.event(ctx, config.HookSubagentStop, "", map[string]any{"last_assistant_message": reply, "stop_hook_active": active, "task": task})
	if block == nil {
		return "", false
	}
	return secrets.Redact(block.reason), true
}
