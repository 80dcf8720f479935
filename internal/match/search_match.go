// Package match is what a search pattern matches, and what it may cost: a
// literal finder for plain-text patterns, matching in pieces so a stop is
// seen promptly, the bound on a pattern's compiled size, and the rule that
// decides when a file may be skipped without being redacted.
//
// Contract: CompileBounded refuses, with a message a model can act on, a
// pattern over 1024 bytes or one that compiles to more than MaxProg steps
// (Go's regexp is linear in the text times that size), so no accepted
// pattern costs more than that per byte searched. A NewMatcher matcher
// matches exactly what the regexp matches. MayTouchMark is true whenever a
// match in redacted text could touch a redaction mark; it depends only on
// the pattern and the mark, never on the text, so skipping redaction when
// it is false cannot make search an oracle for a secret's bytes.
package match

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// MaxProg bounds a pattern's compiled size: Go's regexp is linear in the
// text but times the pattern's size, and a 14-byte pattern such as
// [a-z]{0,1000}c compiles to 2,003 steps and takes 11 s on 1 MB.
const MaxProg = 1000

// MayTouchMark reports whether a match of re in redacted text could
// touch a redaction marker. When it cannot, a file whose raw text has no
// match has none once redacted, and search may skip redacting it: the skip
// depends only on the pattern, never on a secret's bytes (otherwise a
// probe such as ghp_A{20}C|="\[ would answer differently for right and
// wrong guesses). Redaction replaces a secret by the marker and keeps every
// newline, so a match in redacted text that touches no marker lies in text
// that is the same in the raw file with the same lines around it, the
// only context a match can see besides word boundaries. A match that
// touches a marker either lies inside it (re matches the marker), or
// includes one of its ends (the redactor's are '[' and ']'). So: true
// when re matches the marker, can match either end, or tests word boundaries (\b, \B: the
// marker's ends are not word characters where the secret's were).
func MayTouchMark(re *regexp.Regexp, mark string) bool {
	if re.MatchString(mark) {
		return true
	}
	first, last := rune(mark[0]), rune(mark[len(mark)-1]) // the mark's ends ('[' and ']' for the redactor's)
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return true
	}
	var touches func(t *syntax.Regexp) bool
	touches = func(t *syntax.Regexp) bool {
		switch t.Op {
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			return true
		case syntax.OpLiteral:
			if slices.ContainsFunc(t.Rune, func(r rune) bool { return r == first || r == last }) {
				return true
			}
		case syntax.OpCharClass:
			for i := 0; i+1 < len(t.Rune); i += 2 {
				if lo, hi := t.Rune[i], t.Rune[i+1]; (lo <= first && first <= hi) || (lo <= last && last <= hi) {
					return true
				}
			}
		}
		return slices.ContainsFunc(t.Sub, touches)
	}
	return touches(t)
}

// MatchChunks reports whether m matches data, looking at it in pieces of
// whole lines (so a stop is seen between pieces, not only between files).
// A match that spans lines yields no matching line anyway.
func MatchChunks(ctx context.Context, m Matcher, data []byte) bool {
	const chunk = 256 << 10
	for len(data) > 0 {
		if ctx.Err() != nil {
			return false
		}
		n := len(data)
		if n > chunk {
			if i := bytes.IndexByte(data[chunk:], '\n'); i >= 0 {
				n = chunk + i + 1
			}
		}
		if m.Match(data[:n]) {
			return true
		}
		data = data[n:]
	}
	return false
}

// progSize is the number of steps re compiles to.
// CompileBounded compiles a pattern the model gave, refusing one too long
// or too costly to run (Go's regexp is linear in the text times the
// pattern's compiled size): the one rule for search_files and git log
// --grep.
func CompileBounded(pattern string) (*regexp.Regexp, error) {
	if len(pattern) > 1024 {
		return nil, errors.New("pattern is too long (over 1024 bytes)")
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("bad pattern: %v", err)
	}
	if n := ProgSize(re); n > MaxProg {
		return nil, fmt.Errorf("the pattern is too costly to run (it compiles to %d steps; at most %d): use smaller repetition counts such as {0,50}, or fewer alternatives", n, MaxProg)
	}
	return re, nil
}

func ProgSize(re *regexp.Regexp) int {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(t.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}

// Matcher finds a pattern in a file or a line.
type Matcher interface{ Match([]byte) bool }

// NewMatcher uses a literal finder for a pattern that is plain text (most
// searches for a symbol are), and the regexp otherwise.
func NewMatcher(re *regexp.Regexp) Matcher {
	if lit, complete := re.LiteralPrefix(); complete && len(lit) > 1 {
		return NewLiteral(lit)
	}
	return re
}

// Literal finds a fixed string by scanning for its rarest byte (in source
// code) with IndexByte, which is vectorised, and checking around each hit:
// searching for "func NewReplacer" does not stop at every "f".
type Literal struct {
	lit  []byte
	rare byte
	off  int // position of rare in lit
}

func NewLiteral(s string) *Literal {
	l := &Literal{lit: []byte(s)}
	best := 1 << 30
	for i := 0; i < len(s); i++ {
		if r := byteRank(s[i]); r < best {
			best, l.rare, l.off = r, s[i], i
		}
	}
	return l
}

func (l *Literal) Match(data []byte) bool {
	for pos := 0; ; {
		i := bytes.IndexByte(data[pos:], l.rare)
		if i < 0 {
			return false
		}
		start := pos + i - l.off
		if start >= 0 && start+len(l.lit) <= len(data) && bytes.Equal(data[start:start+len(l.lit)], l.lit) {
			return true
		}
		pos += i + 1
	}
}

// IndexString finds the literal in s from position from (-1: none).
func (l *Literal) IndexString(s string, from int) int {
	for pos := from + l.off; pos < len(s); {
		i := strings.IndexByte(s[pos:], l.rare)
		if i < 0 {
			return -1
		}
		start := pos + i - l.off
		if start >= from && start+len(l.lit) <= len(s) && s[start:start+len(l.lit)] == string(l.lit) {
			return start
		}
		pos += i + 1
	}
	return -1
}

// byteRank approximates how common a byte is in source code and prose
// (lower is rarer).
func byteRank(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return 10 + int(strings.IndexByte("QJZXVKWYBFGHPMDULCRONSIAET", c)) // rarest first
	case c >= '0' && c <= '9':
		return 40
	case c >= 'a' && c <= 'z':
		return 50 + int(strings.IndexByte("qjzxvkwybgpfmuldchrnsoiate", c))
	case c == ' ' || c == '\t' || c == '\n':
		return 100
	case strings.IndexByte("(){}.,;:=\"'*/_-", c) >= 0:
		return 80
	}
	return 5 // other punctuation and non-ASCII bytes are rare
}
