package harvey

import (
	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/refusal"
)

// The audit log is internal/audit's; the agent names it as before.
type (
	AuditBuffer  = audit.Log
	AuditEvent   = audit.Event
	AuditOutcome = audit.Outcome
)

// AuditCapacity and the outcomes, as the agent names them.
const (
	AuditCapacity = audit.Capacity
	AuditAllowed  = audit.Allowed
	AuditDenied   = audit.Denied
	AuditError    = audit.Error
	AuditSuccess  = audit.Success
)

// ErrDenied is returned when an action is not approved: the user declined
// it, or headless mode without --yes cannot ask. The message, which says
// which, goes back to the model.
var ErrDenied = refusal.ErrDenied

func newAuditBuffer() *AuditBuffer { return audit.New() }

func outcomeOf(err error) AuditOutcome { return audit.OutcomeOf(err) }
