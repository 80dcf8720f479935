package match

import (
	"bytes"
	"strings"
	"testing"
)

func TestLiteralMatcher(t *testing.T) {
	texts := []string{"", "f", "func NewReplacer", "xx func NewReplacer(", "func NewReplace", "ffffunc NewReplacerr", "NewReplacer func", "日本 func NewReplacer"}
	for _, lit := range []string{"func NewReplacer", "ab", "日本", "(x)", "Q"} {
		m := NewLiteral(lit)
		for _, s := range append(texts, lit, "  "+lit, lit+"  ") {
			if got, want := m.Match([]byte(s)), bytes.Contains([]byte(s), []byte(lit)); got != want {
				t.Fatalf("literal %q in %q: %v, want %v", lit, s, got, want)
			}
		}
	}
}

func FuzzLiteralMatcher(f *testing.F) {
	f.Add("func New", "x func New y")
	f.Fuzz(func(t *testing.T, lit, s string) {
		if len(lit) < 2 {
			return
		}
		if got, want := NewLiteral(lit).Match([]byte(s)), strings.Contains(s, lit); got != want {
			t.Fatalf("%q in %q: %v, want %v", lit, s, got, want)
		}
	})
}
