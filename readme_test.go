package harvey

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README is for a newcomer (issue 49): under 15,000 characters, no
// sentence over 40 words, no "here" or "this machine" meaning the
// author's, and every link to a file of the repository resolves (in
// docs/ too, which the release archives ship).
func TestREADMEForANewcomer(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if len(text) >= 15000 {
		t.Errorf("README.md is %d characters (under 15,000)", len(text))
	}
	prose := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(text, "")
	prose = regexp.MustCompile("`[^`]*`").ReplaceAllString(prose, "CODE")
	for _, para := range regexp.MustCompile(`\n\s*\n|\n\s*- |\n#+ `).Split(prose, -1) {
		for _, s := range regexp.MustCompile(`[.!?:;](\s|$)`).Split(strings.Join(strings.Fields(para), " "), -1) {
			if n := len(strings.Fields(s)); n > 40 {
				t.Errorf("a sentence of %d words: %q", n, s)
			}
		}
	}
	if m := regexp.MustCompile(`(?i)\bhere\b|this machine`).FindAllString(prose, -1); len(m) > 0 {
		t.Errorf("README.md says %q: whose machine?", m)
	}
	files, _ := filepath.Glob("docs/*.md")
	for _, f := range append(files, "README.md", "SECURITY.md") {
		b, _ := os.ReadFile(f)
		for _, m := range regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`).FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), link)); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, link)
			}
		}
	}
}
