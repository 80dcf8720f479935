package modelcheck

import (
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/textcalls"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// Trace is what one turn did, round by round: what the server
// reported, how the calls came (the protocol's field, or printed and in
// which format), what each call returned. Only `harvey model check` asks
// for one; a nil trace records nothing.
type Trace struct {
	Rounds []Round
}

// Round is one request and what came of it.
type Round struct {
	Stats   llm.ChatStats
	Retries int    // tries the model call needed after its first (a flaky server)
	Asked   bool   // the round's printed call was neither run nor quoted: the model was asked to send it alone
	How     string // "native", "text: FORMAT", "prose: FORMAT"; "" for an answer
	Calls   []CallRecord
	Unread  []string // printed calls that could not be read (not run)
}

// CallRecord is one call that ran (or was refused) and its result.
type CallRecord struct {
	Name, Args, Result string
	Failed             bool
}

func (t *Trace) Round(stats llm.ChatStats, native []anyllm.ToolCall, retries int) {
	if t == nil {
		return
	}
	r := Round{Stats: stats, Retries: retries}
	if len(native) > 0 {
		r.How = "native"
	}
	t.Rounds = append(t.Rounds, r)
}

func (t *Trace) Recovered(r textcalls.Result, prose bool) {
	if t == nil || len(t.Rounds) == 0 {
		return
	}
	last := &t.Rounds[len(t.Rounds)-1]
	last.Unread = r.Unread
	if len(r.Calls) > 0 || len(r.Unread) > 0 {
		last.How = "text: " + r.Format
		if prose {
			last.How = "prose: " + r.Format
		}
	}
}

// AskedModel counts a round that asked the model to send a call alone.
func (t *Trace) AskedModel() {
	if t == nil || len(t.Rounds) == 0 {
		return
	}
	t.Rounds[len(t.Rounds)-1].Asked = true
}

func (t *Trace) Add(c CallRecord) {
	if t == nil || len(t.Rounds) == 0 {
		return
	}
	last := &t.Rounds[len(t.Rounds)-1]
	last.Calls = append(last.Calls, c)
}

// Calls is every call of the turn, in order.
func (t *Trace) Calls() []CallRecord {
	var out []CallRecord
	for _, r := range t.Rounds {
		out = append(out, r.Calls...)
	}
	return out
}
