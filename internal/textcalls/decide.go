package textcalls

import (
	"strings"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// Act or quote, decided by evidence, in one place. The calls Recover finds
// (the act group: actGroup) are run only when the reply acts; the rules,
// in the order they are tried, with the output that motivated each
// (docs/tool-call-recovery.md has the table and what share of the corpus
// each decides):
//
//  1. whole: the calls are the whole reply (blank space, one fence, stray
//     closers around them) — act.
//  2. declines: the reply says it will not run the call ("I will not run
//     it", "do not run this") — quote, wherever the call stands.
//  3. explains: the text just before or after the call explains or
//     exemplifies ("for example", "you could call", "the syntax is", "would
//     look like") — quote.
//  4. asks the user: the text after the call asks a question ("Shall I run
//     it?") — quote: the user answers, not Harvey.
//  5. markers: the call is framed by the model's own call markers
//     (<tool_call>, [TOOL_CALLS], <|python_tag|>, <function=…>, special
//     tokens) outside a code span, an echoed tool result and the middle of
//     a sentence — act: no one quotes a special token.
//  6. begins: the reply begins with the call — act.
//  7. announced: the call ends the reply after a line that announces it
//     ("Let me", "I'll", "Now I will read", "Using tool:"), or only a plan
//     follows it ("Then I will explain it", "This will show me the
//     contents.", "Once I have the list, ...") — act; in schema mode (the
//     model could have called natively) only when nothing follows, a plan
//     after it is asked about (rule 8).
//  8. undecided: anything else (a short lead-in that announces nothing) —
//     ask the model to send the call alone; Harvey runs nothing.
//
// For an act, the prose after the calls is dropped from the answer: what a
// small model writes after its call answers as if the call had already
// returned (an invented result), and the real result comes next round.

// Decision is what a reply does with the calls it holds.
type Decision int

const (
	Quote Decision = iota // a quotation, an example or a refusal: nothing runs
	Act                   // the reply's act: the calls run like native ones
	Ask                   // the evidence does not decide: ask the model
)

func (d Decision) String() string {
	return [...]string{"quote", "act", "ask the model"}[d]
}

// The rules, by name (Result.Rule).
const (
	RuleWhole     = "whole reply"
	RuleDeclines  = "declines"
	RuleExplains  = "explains"
	RuleAsksUser  = "asks the user"
	RuleMarkers   = "model's call markers"
	RuleBegins    = "begins the reply"
	RuleAnnounced = "announced"
	RuleUndecided = "undecided"
)

// AskNote is what the model is told when the evidence does not decide.
const AskNote = "You wrote a tool call inside your reply, with other text around it, so Harvey did not run it. " +
	"If you meant to run it, reply with the call alone (or send it as a tool call); if it was only an example, answer without it."

var (
	declinesRE = lazyre.New(`(?i)\b(i will not|i won't|i wouldn't|i would not|i cannot|i can't|i am not going to|i'm not going to|i do not want to|do not run|don't run|never run|not run (it|this|that)|should not run|shouldn't run|without running|instead of running|not be running|won't be running|refuse to)\b`)
	explainsRE = lazyre.New(`(?i)(\bfor example\b|\bfor instance\b|\be\.g\.|\bexample\b|\byou (could|can|would|might|should|may) (call|use|send|run|invoke|write)\b|\b(i|we|one) (could|would|might) (call|use|send|run|invoke|write)\b|\bthe syntax\b|\bsyntax is\b|\bwould look like\b|\blooks like this\b|\bthe format\b|\bformat is\b|\bis formatted\b|\bhere is how\b|\bhere's how\b|\bto call (it|a tool|the tool)\b|\bsuch as\b|\b(a line|a call|a reply) like\b|\blike this\b|\bdemonstrat\w*|\billustrat\w*|\bshow (you )?(how|what a call|the (call|syntax|format|shape)))`)
	asksRE     = lazyre.New(`(?i)\b(would you like|do you want|shall i|should i|want me to)\b`)
	// planRE finds text after a call that only says what the call will
	// give or what comes once it has ("This will show me the contents.",
	// "Once I have the list, I can ...", "Please wait."): a plan, not a
	// result and not an explanation.
	planRE = lazyre.New(`(?i)^\s*((this|that|it|which) will\b|once (i|we) (have|get|see|know|receive)\b|please wait\b|wait(ing)? for (the|its) (result|output|response)\b|after (that|this|it returns)\b|when (it|the tool|the call) returns\b)`)
	// intentRE finds a lead-in that announces an action.
	intentRE = lazyre.New(`(?i)\b(i'll|i will|i'm going to|i am going to|let me|let's|now i|next,? i|i need to|i should|calling|i'll use|using the|use the|using tool|calling tool|running|checking|searching|reading|listing)\b`)
)

// decide applies the rules to the act group of text.
func decide(text string, group []candidate, strict bool) (Decision, string) {
	before := stripClosers(afterThinking(text[:group[0].start]))
	after := stripClosers(text[group[len(group)-1].end:])
	switch {
	case WholeReply(proseAround(text, group)):
		return Act, RuleWhole
	case declinesRE().MatchString(before) || declinesRE().MatchString(after):
		return Quote, RuleDeclines
	case explainsRE().MatchString(lastLines(before, 2)) || explainsRE().MatchString(firstLineOf(after)) || continuesSentence(before, after):
		return Quote, RuleExplains
	case asksUser(after) || asksRE().MatchString(lastLine(before)):
		return Quote, RuleAsksUser
	case markedGroup(group):
		return Act, RuleMarkers
	case before == "":
		return Act, RuleBegins
	case intentRE().MatchString(lastLine(before)) && (after == "" || !strict && planFollows(after)):
		// Announced, and nothing after but what it will do next. In
		// schema mode (the model could have called natively) a printed
		// call with prose after it is asked about instead.
		return Act, RuleAnnounced
	}
	return Ask, RuleUndecided
}

// continuesSentence reports whether the call stands inside one sentence
// across lines: the text before it does not end a sentence and the text
// after it goes on in lower case ("answers with a line like ⏎ Action: … ⏎
// and the server runs it").
func continuesSentence(before, after string) bool {
	b, a := strings.TrimSpace(before), strings.TrimSpace(after)
	if b == "" || a == "" || strings.ContainsAny(b[len(b)-1:], ".!?:") {
		return false
	}
	return a[0] >= 'a' && a[0] <= 'z'
}

// asksUser reports whether the text after a call asks the user something
// (its last sentence is a question).
func asksUser(after string) bool {
	s := strings.TrimSpace(after)
	return strings.HasSuffix(s, "?") || asksRE().MatchString(firstLineOf(s))
}

// markedGroup reports whether every candidate of the group is framed by a
// call marker or special token.
func markedGroup(group []candidate) bool {
	for _, c := range group {
		if !c.marked && !c.token {
			return false
		}
	}
	return true
}

// insideSentence reports whether a run sits in the middle of a sentence:
// text before it on its line that does not end a sentence, and text after
// it on the same line ("The template wraps each call as <tool_call>…
// and the server parses it").
func insideSentence(text string, run []candidate) bool {
	lineBefore := text[:run[0].start]
	if i := strings.LastIndexByte(lineBefore, '\n'); i >= 0 {
		lineBefore = lineBefore[i+1:]
	}
	lineBefore = strings.TrimSpace(lineBefore)
	lineAfter := text[run[len(run)-1].end:]
	if i := strings.IndexByte(lineAfter, '\n'); i >= 0 {
		lineAfter = lineAfter[:i]
	}
	lineAfter = strings.TrimSpace(stripLeadingClosers(lineAfter))
	if lineBefore == "" || lineAfter == "" {
		return false
	}
	return !strings.ContainsAny(lineBefore[len(lineBefore)-1:], ".!?")
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	s = strings.TrimSpace(s)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			n--
			if n == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}
