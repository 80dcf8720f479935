// Package audit is the session's audit log: every effect the gate lets
// through or refuses, one event each (its action, details, outcome and
// duration), in a ring of the last Capacity; /audit prints it. Outcome is
// the one mapping from an effect's error to its outcome: refused by a rule
// or not approved is denied, any other error failed.
package audit

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// Capacity is the number of events the audit ring buffer keeps.
const Capacity = 1000

// Outcome is how an effect ended.
type Outcome string

// Audit outcomes.
const (
	Allowed Outcome = "allowed"
	Denied  Outcome = "denied"
	Error   Outcome = "error"
	Success Outcome = "success"
)

// Event is one recorded action.
type Event struct {
	Time     time.Time
	Action   string // e.g. "read", "run", "tool:read_file"
	Details  string
	Outcome  Outcome
	Duration time.Duration
}

// Log is a thread-safe ring buffer of the last Capacity events.
type Log struct {
	mu     sync.RWMutex
	events []Event
	next   int
	full   bool
	total  int
}

// New returns an empty audit log.
func New() *Log {
	return &Log{events: make([]Event, Capacity)}
}

// Record adds an event, dropping the oldest when full.
func (a *Log) Record(action, details string, outcome Outcome, d time.Duration) {
	if a == nil {
		return
	}
	if len(details) > 300 {
		details = details[:300] + "..."
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events[a.next] = Event{Time: time.Now(), Action: action, Details: details, Outcome: outcome, Duration: d}
	a.next = (a.next + 1) % len(a.events)
	if a.next == 0 {
		a.full = true
	}
	a.total++
}

// Last returns up to n most recent events, oldest first.
func (a *Log) Last(n int) []Event {
	a.mu.RLock()
	defer a.mu.RUnlock()
	size := a.next
	if a.full {
		size = len(a.events)
	}
	if n <= 0 || n > size {
		n = size
	}
	out := make([]Event, 0, n)
	for i := size - n; i < size; i++ {
		idx := i
		if a.full {
			idx = (a.next + i) % len(a.events)
		}
		out = append(out, a.events[idx])
	}
	return out
}

// Len returns how many events are held, and how many were ever recorded.
func (a *Log) Len() (held, total int) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.full {
		return len(a.events), a.total
	}
	return a.next, a.total
}

// Clear empties the log.
func (a *Log) Clear() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = make([]Event, Capacity)
	a.next, a.full = 0, false
}

// Print writes events one per line.
func (a *Log) Print(w io.Writer, n int) {
	evs := a.Last(n)
	if len(evs) == 0 {
		fmt.Fprintln(w, "audit log is empty")
		return
	}
	for _, e := range evs {
		dur := ""
		if e.Duration > 0 {
			dur = " (" + e.Duration.Round(time.Millisecond).String() + ")"
		}
		fmt.Fprintf(w, "%s  %-8s %-16s %s%s\n", e.Time.Format("15:04:05"), e.Outcome, e.Action, termtext.Sanitize(e.Details), dur)
	}
}

// OutcomeOf is the one mapping from an effect's error to its audit
// outcome: refused by a rule or the user is denied; any other error failed.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case errors.Is(err, refusal.ErrDenied) || errors.Is(err, refusal.ErrRefused):
		return Denied
	}
	return Error
}
