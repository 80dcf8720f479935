package ptytest

import (
	"regexp"
	"strconv"
	"strings"
)

// Screen renders output as a terminal shows it: "ESC[nD" moves back n
// runes, "ESC[K" erases to the line's end (the word wrap's own moves).
func Screen(s string) string {
	var lines []string
	cur, pos := []rune{}, 0
	esc := regexp.MustCompile(`^\x1b\[(\d*)([DK])`)
	for i := 0; i < len(s); {
		if m := esc.FindStringSubmatch(s[i:]); m != nil {
			if m[2] == "D" {
				n, _ := strconv.Atoi(m[1])
				pos = max(pos-n, 0)
			} else {
				cur = cur[:pos]
			}
			i += len(m[0])
			continue
		}
		r := []rune(s[i:])[0]
		i += len(string(r))
		switch {
		case r == '\r':
			pos = 0
		case r == '\n':
			lines = append(lines, string(cur))
			cur, pos = []rune{}, 0
		case pos < len(cur):
			cur[pos] = r
			pos++
		default:
			cur = append(cur, r)
			pos++
		}
	}
	return strings.Join(append(lines, string(cur)), "\n")
}
