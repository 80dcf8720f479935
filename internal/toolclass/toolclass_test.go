package toolclass

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/refusal"
)

// Each outcome has exactly its class, read from what the error wraps or
// was marked with, never from its words.
func TestOf(t *testing.T) {
	_, dialErr := net.DialTimeout("tcp", "127.0.0.1:1", time.Second)
	for _, c := range []struct {
		err    error
		failed bool
		hint   string
		want   string
	}{
		{nil, false, "", OK},
		{nil, true, "", Failed},
		{nil, true, Timeout, Timeout},
		{Mark(InvalidArgs, errors.New("path: expected string")), false, "", InvalidArgs},
		{fmt.Errorf("tool x: %w", Mark(Transient, errors.New("restarted"))), false, "", Transient},
		{refusal.Errorf("refused: outside the workspace"), false, "", Refused},
		{fmt.Errorf("write: %w", refusal.ErrDenied), false, "", Refused},
		{fmt.Errorf("no answer within 1s: %w", context.DeadlineExceeded), false, "", Timeout},
		{&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, false, "", Timeout},
		{fmt.Errorf("call: %w", syscall.ECONNRESET), false, "", Transient},
		{dialErr, false, "", Transient},
		{io.ErrUnexpectedEOF, false, "", Transient},
		{errors.New("the word timeout and refused in a message"), false, "", Failed},
		{context.Canceled, false, "", Failed},
	} {
		if got := Of(c.err, c.failed, c.hint); got != c.want {
			t.Errorf("%v (failed %t, hint %q): %s, want %s", c.err, c.failed, c.hint, got, c.want)
		}
	}
	if Mark(Failed, nil) != nil || Retryable(nil) || Retryable(errors.New("x")) || !Retryable(Mark(Transient, errors.New("x"))) {
		t.Error("Mark(nil) or Retryable")
	}
	if e := Mark(Timeout, io.EOF); e.Error() != "EOF" || !errors.Is(e, io.EOF) {
		t.Error("a mark changes the error's text or what it wraps")
	}
}
