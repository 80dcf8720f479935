package audit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/refusal"
)

// The ring keeps the last Capacity events, oldest first, and counts them
// all; an outcome is read from the error's kind.
func TestLog(t *testing.T) {
	l := New()
	for i := range Capacity + 5 {
		l.Record("run", fmt.Sprint(i), Success, 0)
	}
	held, total := l.Len()
	last := l.Last(2)
	if held != Capacity || total != Capacity+5 || len(last) != 2 || last[0].Details != fmt.Sprint(Capacity+3) || last[1].Details != fmt.Sprint(Capacity+4) {
		t.Fatalf("held %d total %d last %+v", held, total, last)
	}
	var b strings.Builder
	l.Print(&b, 1)
	if !strings.Contains(b.String(), fmt.Sprint(Capacity+4)) {
		t.Errorf("print: %q", b.String())
	}
	for err, want := range map[error]Outcome{nil: Success, refusal.ErrDenied: Denied, refusal.Errorf("refused: x"): Denied, errors.New("boom"): Error} {
		if got := OutcomeOf(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}
