package alive

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A silent command gets its line after aliveAfter, naming the last line it
// printed, cut to the width; a question opening erases it and keeps it off.
func TestASilentCommandShowsItIsAliveAndAQuestionIsNeverCovered(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the line")
	}
	var out syncBuf
	w, stop := Watch(&out, func() int { return 60 })
	w.Write([]byte("compiling pkg/one\n"))
	deadline := time.Now().Add(aliveAfter + 3*time.Second)
	for !strings.Contains(out.String(), "… running") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if s := out.String(); !strings.Contains(s, "— last: compiling pkg/one") {
		t.Fatalf("no alive line: %q", s)
	}
	done := QuestionOpens()
	if !Asking() || !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Fatalf("the question did not erase the line: %q", out.String())
	}
	before := out.String()
	time.Sleep(1500 * time.Millisecond)
	if out.String() != before {
		t.Errorf("the line was drawn over a waiting question: %q", strings.TrimPrefix(out.String(), before))
	}
	done()
	stop()
	if Asking() {
		t.Error("still asking after the answer")
	}
}

func TestShowAndHideARedrawnLine(t *testing.T) {
	erased := 0
	Show("progress", func() { erased++ })
	QuestionOpens()()
	Hide("progress")
	QuestionOpens()()
	if erased != 1 {
		t.Errorf("erased %d times", erased)
	}
}

func TestAliveLineIsCutToTheWidth(t *testing.T) {
	l := aliveLine(12*time.Second, "a \x1b]0;title\x07 very long last line of output", 30)
	if len([]rune(l)) > 29 || strings.Contains(l, "\x1b") || !strings.HasPrefix(l, "… running 12s") {
		t.Errorf("%q", l)
	}
}
