package harvey

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// AuditCapacity is the number of events the audit ring buffer keeps.
const AuditCapacity = 1000

// AuditOutcome is how an effect ended.
type AuditOutcome string

// Audit outcomes.
const (
	AuditAllowed AuditOutcome = "allowed"
	AuditDenied  AuditOutcome = "denied"
	AuditError   AuditOutcome = "error"
	AuditSuccess AuditOutcome = "success"
)

// AuditEvent is one recorded action.
type AuditEvent struct {
	Time     time.Time
	Action   string // e.g. "read", "run", "tool:read_file"
	Details  string
	Outcome  AuditOutcome
	Duration time.Duration
}

// AuditBuffer is a thread-safe ring buffer of the last AuditCapacity events.
type AuditBuffer struct {
	mu     sync.RWMutex
	events []AuditEvent
	next   int
	full   bool
	total  int
}

// newAuditBuffer returns an empty audit log.
func newAuditBuffer() *AuditBuffer {
	return &AuditBuffer{events: make([]AuditEvent, AuditCapacity)}
}

// Record adds an event, dropping the oldest when full.
func (a *AuditBuffer) Record(action, details string, outcome AuditOutcome, d time.Duration) {
	if a == nil {
		return
	}
	if len(details) > 300 {
		details = details[:300] + "..."
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events[a.next] = AuditEvent{Time: time.Now(), Action: action, Details: details, Outcome: outcome, Duration: d}
	a.next = (a.next + 1) % len(a.events)
	if a.next == 0 {
		a.full = true
	}
	a.total++
}

// Last returns up to n most recent events, oldest first.
func (a *AuditBuffer) Last(n int) []AuditEvent {
	a.mu.RLock()
	defer a.mu.RUnlock()
	size := a.next
	if a.full {
		size = len(a.events)
	}
	if n <= 0 || n > size {
		n = size
	}
	out := make([]AuditEvent, 0, n)
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
func (a *AuditBuffer) Len() (held, total int) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.full {
		return len(a.events), a.total
	}
	return a.next, a.total
}

// Clear empties the log.
func (a *AuditBuffer) Clear() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = make([]AuditEvent, AuditCapacity)
	a.next, a.full = 0, false
}

// Print writes events one per line.
func (a *AuditBuffer) Print(w io.Writer, n int) {
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

// outcomeOf is the one mapping from an effect's error to its audit
// outcome: refused by a rule or the user is denied; any other error failed.
func outcomeOf(err error) AuditOutcome {
	switch {
	case err == nil:
		return AuditSuccess
	case errors.Is(err, ErrDenied) || errors.Is(err, ErrRefused):
		return AuditDenied
	}
	return AuditError
}

// ErrDenied is returned when an action is not approved: the user declined
// it, or headless mode without --yes cannot ask. The message, which says
// which, goes back to the model.
var ErrDenied = refusal.ErrDenied
