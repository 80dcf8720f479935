package textcalls

import (
	"io"
	"strings"

	"github.com/harvey-agent/harvey/internal/llm"
)

// Holdback streams model text to the user but holds back text that may
// be the start of a printed tool call ({ at the start of a line,
// [TOOL_CALLS], <tool_call> and other markers, a ``` fence) until the reply
// ends, so the user sees the recovered call instead of raw JSON. A fence is
// held only while it can still be a call: once its language or its first
// word says it is code (```go, or a body that starts with "func"), it
// streams to its closing fence like any text.
type Holdback struct {
	out     io.Writer
	all     strings.Builder // the whole reply
	written int             // bytes of all already passed to out
	holding bool
	fence   bool              // what is held starts with a ``` fence
	inCode  bool              // inside a released fence: stream until it closes
	isTool  func(string) bool // a registered tool name (pythonic calls in fences)
}

// NewHoldback is a Holdback writing to out; isTool says whether a name is
// a tool the model may call (nil: none, so no pythonic call is held).
func NewHoldback(out io.Writer, isTool func(string) bool) *Holdback {
	if isTool == nil {
		isTool = func(string) bool { return false }
	}
	return &Holdback{out: out, isTool: isTool}
}

// Len is how many bytes of the reply it has been given.
func (h *Holdback) Len() int { return h.all.Len() }

var holdTriggers = []string{"[TOOL_CALLS]", "<tool_call>", "<tool", "<function", "<response>", "<|python_tag|>", "<|tool_call", "<｜tool", "functools[", "```"}

func (h *Holdback) Write(p []byte) (int, error) {
	if h.all.Len()+len(p) > llm.MaxReplyBytes {
		return 0, llm.ErrReplyTooLarge
	}
	h.all.Write(p)
	for {
		progressed, err := h.step()
		if err != nil {
			return 0, err
		}
		if !progressed {
			return len(p), nil
		}
	}
}

// step passes on what can be shown now; it reports whether it changed
// state (so the caller looks again).
func (h *Holdback) step() (bool, error) {
	s := h.all.String()
	pending := s[h.written:]
	switch {
	case h.holding && h.fence && fenceIsCode(pending, h.isTool):
		// Released: the opening fence goes out; the block streams.
		h.holding, h.fence, h.inCode = false, false, true
		return true, h.emit(3)
	case h.holding:
		return false, nil
	case h.inCode:
		j := strings.Index(pending, "```")
		if j < 0 {
			// Keep back a tail that could be the start of the closing fence.
			keep := len(pending) - len(strings.TrimRight(pending, "`"))
			return false, h.emit(len(pending) - keep)
		}
		h.inCode = false
		return true, h.emit(j + 3)
	}
	cut := len(pending)
	if i := triggerIndex(s, h.written); i >= 0 {
		cut = i - h.written
		h.holding = true
		h.fence = strings.HasPrefix(s[i:], "```")
	} else {
		// keep back a tail that could still become a trigger
		for _, t := range append(holdTriggers, "\n{") {
			for k := min(len(t)-1, len(pending)); k > 0; k-- {
				if strings.HasSuffix(pending, t[:k]) {
					cut = min(cut, len(pending)-k)
					break
				}
			}
		}
		if strings.TrimSpace(s) == "" {
			cut = 0 // leading whitespace: wait to see the first real character
		}
	}
	if err := h.emit(cut); err != nil {
		return false, err
	}
	return h.holding && h.fence, nil
}

func (h *Holdback) emit(n int) error {
	if n <= 0 {
		return nil
	}
	s := h.all.String()
	if _, err := io.WriteString(h.out, s[h.written:h.written+n]); err != nil {
		return err
	}
	h.written += n
	return nil
}

// fenceIsCode decides, as early as the text allows, that a fenced block
// (held starts with ```) cannot be a tool call: its language is one calls
// are never written in, or its body starts with something no call starts
// with. Undecided is false (keep holding).
func fenceIsCode(held string, isTool func(string) bool) bool {
	rest := held[3:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		return len(rest) > 24 // a language line this long is not json/xml
	}
	switch strings.ToLower(strings.TrimSpace(rest[:nl])) {
	case "", "json", "tool_call", "tool", "tool_code", "xml", "python", "py", "javascript", "js":
	default:
		return true
	}
	body := strings.TrimLeft(rest[nl+1:], " \t\r\n")
	if body == "" {
		return false
	}
	switch c := body[0]; {
	case c == '{' || c == '[' || c == '<':
		return false
	case IsIdentStart(c):
		name, n := LeadingIdent(body)
		if n == len(body) {
			return false // the word is not finished yet
		}
		return body[n] != '(' || isTool == nil || !isTool(name)
	}
	return true
}

// triggerIndex finds the first hold trigger at or after from.
func triggerIndex(s string, from int) int {
	best := -1
	for _, t := range holdTriggers {
		if i := strings.Index(s[from:], t); i >= 0 && (best < 0 || from+i < best) {
			best = from + i
		}
	}
	// { as the first non-space character of the reply or of a line
	first := strings.IndexFunc(s, func(r rune) bool { return r != ' ' && r != '\n' && r != '\t' && r != '\r' })
	if first >= from && first >= 0 && s[first] == '{' && (best < 0 || first < best) {
		best = first
	}
	if i := strings.Index(s[from:], "\n{"); i >= 0 && (best < 0 || from+i+1 < best) {
		best = from + i + 1
	}
	return best
}

// Finish returns the whole reply and the held-back text not yet shown.
func (h *Holdback) Finish() (all, held string) {
	s := h.all.String()
	return s, s[h.written:]
}
