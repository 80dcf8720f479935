package harvey

import (
	"github.com/harvey-agent/harvey/internal/textcalls"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// turnTrace is what one turn did, round by round: what the server
// reported, how the calls came (the protocol's field, or printed and in
// which format), what each call returned. Only `harvey model check` asks
// for one; a nil trace records nothing.
type turnTrace struct {
	rounds []traceRound
}

// traceRound is one request and what came of it.
type traceRound struct {
	stats   ChatStats
	retries int    // tries the model call needed after its first (a flaky server)
	asked   bool   // the round's printed call was neither run nor quoted: the model was asked to send it alone
	how     string // "native", "text: FORMAT", "prose: FORMAT"; "" for an answer
	calls   []traceCall
	unread  []string // printed calls that could not be read (not run)
}

// traceCall is one call that ran (or was refused) and its result.
type traceCall struct {
	name, args, result string
	failed             bool
}

func (t *turnTrace) round(stats ChatStats, native []anyllm.ToolCall, retries int) {
	if t == nil {
		return
	}
	r := traceRound{stats: stats, retries: retries}
	if len(native) > 0 {
		r.how = "native"
	}
	t.rounds = append(t.rounds, r)
}

func (t *turnTrace) recovered(r textcalls.Result, prose bool) {
	if t == nil || len(t.rounds) == 0 {
		return
	}
	last := &t.rounds[len(t.rounds)-1]
	last.unread = r.Unread
	if len(r.Calls) > 0 || len(r.Unread) > 0 {
		last.how = "text: " + r.Format
		if prose {
			last.how = "prose: " + r.Format
		}
	}
}

// askedModel counts a round that asked the model to send a call alone.
func (t *turnTrace) askedModel() {
	if t == nil || len(t.rounds) == 0 {
		return
	}
	t.rounds[len(t.rounds)-1].asked = true
}

func (t *turnTrace) call(c traceCall) {
	if t == nil || len(t.rounds) == 0 {
		return
	}
	last := &t.rounds[len(t.rounds)-1]
	last.calls = append(last.calls, c)
}

// calls is every call of the turn, in order.
func (t *turnTrace) allCalls() []traceCall {
	var out []traceCall
	for _, r := range t.rounds {
		out = append(out, r.calls...)
	}
	return out
}
