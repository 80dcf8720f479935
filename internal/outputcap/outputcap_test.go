package outputcap

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A cut never splits a rune, always says so, and leaves short text alone.
func TestCap(t *testing.T) {
	s := strings.Repeat("é", 40) // 80 bytes
	for limit := 1; limit < 82; limit++ {
		got := Cap([]byte(s), limit, false)
		if !utf8.ValidString(got) {
			t.Fatalf("limit %d: invalid UTF-8", limit)
		}
		if cut := limit < len(s); cut != strings.Contains(got, TruncationMarker(limit)) {
			t.Fatalf("limit %d: %q", limit, got)
		}
	}
	if got := Cap([]byte("short"), 100, true); !strings.Contains(got, "truncated") {
		t.Errorf("a source that had more: %q", got)
	}
	if IsBinary([]byte("text\n")) || !IsBinary([]byte("a\x00b")) {
		t.Error("IsBinary")
	}
}
