// Package pipedin reads what was piped into harvey -p (cat err.log |
// harvey -p "why?") as context: a pipeline's producer is waited for, a
// parent's open, silent pipe is not, and long input keeps its head and its
// tail (a log's failure is usually at its end), redacted like a tool
// result.
package pipedin

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"golang.org/x/sys/unix"
)

// Read returns what was piped into harvey -p (cat err.log |
// harvey -p "why?"), capped and redacted like a tool result. A terminal or
// /dev/null gives nothing. A pipe with data (or at its end) is read at
// once; a silent pipe is waited on only while a process writes to it as
// its output (a pipeline's producer), never when a parent merely left it
// open (subprocess, editors, CI), so such a run starts at once.
func Read(in io.Reader, limit int) (text string, cut int64) {
	if in == nil || termtext.IsTTY(in) {
		return "", 0
	}
	if f, ok := in.(*os.File); ok {
		st, err := f.Stat()
		if err != nil || (st.Mode()&os.ModeNamedPipe == 0 && !st.Mode().IsRegular()) {
			return "", 0
		}
		if st.Mode()&os.ModeNamedPipe != 0 && !pipeReady(f) {
			// Nothing yet: wait only for a producer in a pipeline (go test
			// | harvey -p); a parent's open, silent pipe is not waited on.
			has, known := pipeHasWriter(f)
			if known && !has {
				return "", 0
			}
			if !known && !pipeReadyWithin(f, time.Second) {
				return "", 0
			}
		}
	}
	head, tail, cut, err := readHeadTail(in, limit/4, limit-limit/4-100)
	if err != nil || len(head)+len(tail) == 0 {
		return "", 0
	}
	if cut == 0 {
		return secrets.Redact(string(head) + string(tail)), 0
	}
	// A log's failure is usually at its end: keep its start and its end,
	// each cut at a line, and say what is left out. The window is redacted
	// as one (a key block cut in two stays hidden).
	h := string(head)
	if i := strings.LastIndexByte(h, '\n'); i > 0 {
		cut += int64(len(h) - i - 1)
		h = h[:i+1]
	}
	t := string(tail)
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
		cut += int64(i + 1)
		t = t[i+1:]
	}
	return secrets.RedactWindow(fmt.Sprintf("%s[... %d bytes of piped input left out ...]\n%s", h, cut, t)), cut
}

// readHeadTail reads r to its end, keeping its first head bytes and its
// last tail bytes; cut is how many bytes between them were dropped.
func readHeadTail(r io.Reader, head, tail int) ([]byte, []byte, int64, error) {
	h, _, err := readAtMost(r, head)
	if err != nil || len(h) < head {
		return h, nil, 0, err
	}
	// The tail is kept in a buffer trimmed back to its size whenever it
	// doubles: amortised constant work per byte.
	var ring []byte
	var cut int64
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		ring = append(ring, buf[:n]...)
		if len(ring) > 2*tail {
			cut += int64(len(ring) - tail)
			ring = append(ring[:0], ring[len(ring)-tail:]...)
		}
		if err != nil {
			if len(ring) > tail {
				cut += int64(len(ring) - tail)
				ring = ring[len(ring)-tail:]
			}
			if err == io.EOF {
				err = nil
			}
			return h, ring, cut, err
		}
	}
}

// pipeReady reports whether reading f would not block (data or end of
// input) within a moment.
func pipeReady(f *os.File) bool { return pipeReadyWithin(f, 30*time.Millisecond) }

func pipeReadyWithin(f *os.File, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(d/time.Millisecond))
	return err == nil && n > 0
}

// readAtMost reads up to limit bytes from r.
func readAtMost(r io.Reader, limit int) ([]byte, bool, error) {
	buf, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	if len(buf) > limit {
		return buf[:limit], true, nil
	}
	return buf, false, nil
}
