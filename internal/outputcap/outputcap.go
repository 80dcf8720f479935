// Package outputcap is the output cap, a security invariant: no tool
// result, command output or search reaches the model past
// config.DefaultMaxOutputBytes (or a smaller cap a model's window asks
// for), cut at a rune boundary with a marker that says so (Cap); and
// git's rule for what is binary (IsBinary).
package outputcap

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/harvey-agent/harvey/internal/config"
)

// MiddleMarkerPrefix begins the line that stands where output was cut
// from the middle (its head and tail kept: the verdict of a test suite is
// at its end).
const MiddleMarkerPrefix = "[… output cut here: "

// (MiddleMarker's line is at most 60 bytes: the cap keeps room for it.)

// MiddleMarker is that line for n bytes cut.
func MiddleMarker(n int64) string {
	return fmt.Sprintf("%s%d bytes of the middle …]\n", MiddleMarkerPrefix, n)
}

// TruncationMarker is appended when output is cut at limit bytes.
func TruncationMarker(limit int) string {
	return fmt.Sprintf("[output truncated at %d bytes]", limit)
}

// Cap cuts b to at most limit bytes at a UTF-8 rune boundary, makes the
// text valid UTF-8, and appends the truncation marker when it was cut (or
// when truncated says the source had more).
func Cap(b []byte, limit int, truncated bool) string {
	// The limit is the caller's (maxOut and the executor's cap already hold
	// the 64 KB ceiling); lowering it here cut the paging hint that the
	// executor's slack exists for.
	if limit <= 0 {
		limit = config.DefaultMaxOutputBytes
	}
	if len(b) > limit {
		b = b[:limit]
		truncated = true
	}
	if truncated && len(b) > 0 {
		// Do not end inside a multi-byte rune: step back to its start.
		i := len(b) - 1
		for i > 0 && i > len(b)-4 && !utf8.RuneStart(b[i]) {
			i--
		}
		if !utf8.FullRune(b[i:]) {
			b = b[:i]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if truncated {
		if !strings.HasSuffix(s, "\n") && s != "" {
			s += "\n"
		}
		s += TruncationMarker(limit)
	}
	return s
}

// IsBinary applies git's rule: a NUL byte in the first 8000 bytes.
func IsBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}
