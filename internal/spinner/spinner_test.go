package spinner

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// A frame never reaches the terminal's last column: the message is cut
// first, then left out; the timer stays.
func TestFrameFitsTheWidth(t *testing.T) {
	timer := timerLabel(8*time.Second, 12*time.Second)
	if timer != "[8s / ~12s]" || timerLabel(13*time.Second, 12*time.Second) != "[13s]" || timerLabel(3*time.Second, 0) != "[3s]" {
		t.Fatalf("timer labels: %q", timer)
	}
	msg := learMessages[0]
	for _, w := range []int{0, 200, 40, 20, 12, 5, 2, 1} {
		line := frameLine("⠋", msg, timer, w)
		n := utf8.RuneCountInString(line)
		switch {
		case w == 0 || w == 200:
			if line != "⠋ "+msg+"… "+timer {
				t.Errorf("width %d: %q", w, line)
			}
		case n >= w && w > 1:
			t.Errorf("width %d: %d columns: %q", w, n, line)
		case w >= 20 && !strings.HasSuffix(line, timer):
			t.Errorf("width %d: the timer is gone: %q", w, line)
		}
	}
}

// syncBuffer is a buffer the spinner's goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The first byte of the reply stops the spinner, which clears its line
// before the byte is written; Stop may be called again, and on nil.
func TestWriterStopsTheSpinner(t *testing.T) {
	var out syncBuffer
	s := New(&out, 0, func() int { return 80 })
	time.Sleep(250 * time.Millisecond)
	w := &Writer{W: &out, Spin: s}
	w.Write([]byte("Hello"))
	s.Stop()
	var nilSpinner *Spinner
	nilSpinner.Stop()
	got := out.String()
	if !strings.Contains(got, "⠋") || !strings.HasSuffix(got, "\r\x1b[KHello") {
		t.Errorf("frames, then the line cleared, then the reply: %q", got)
	}
	time.Sleep(150 * time.Millisecond)
	if out.String() != got {
		t.Error("the spinner drew after it stopped")
	}
}
