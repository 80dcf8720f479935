package gittool

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/wspath"
)

const secret = "TOPSECRET-7f3a9c"

// The output filter is the second line of defence: a diff section of a
// denied file is dropped whole, whatever its hunks hold.
func TestFilterGitOutput(t *testing.T) {
	in := "commit abc\n\n    msg\n\n" +
		"diff --git a/ok.go b/ok.go\nindex 1..2 100644\n--- a/ok.go\n+++ b/ok.go\n@@ -1,2 +1,2 @@\n ctx\n-old\n+new\n" +
		"diff --git a/.env b/.env\nindex 1..2 100644\n--- a/.env\n+++ b/.env\n@@ -1 +1,2 @@\n-A=" + secret + "\n+diff --git a/x b/x\n+B=" + secret + "\n" +
		"diff --git \"a/agents/h\\303\\244.yaml\" \"b/agents/h\\303\\244.yaml\"\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-" + secret + "\n+" + secret + "\n" +
		"M\t.env\nok.go | 2 +-\n.env | 2 +-\n?? id_rsa\n R  a.go -> .netrc\n\tmodified:   .env\nafter\n"
	out, n := filterGitOutput(in, func(p string) bool { return wspath.LexicalPolicy(p, p, wspath.OpRead) != nil })
	if strings.Contains(out, secret) || strings.Contains(out, ".env") || strings.Contains(out, "id_rsa") || strings.Contains(out, ".netrc") {
		t.Fatalf("leaked:\n%s", out)
	}
	if !strings.Contains(out, "+new") || !strings.Contains(out, "ok.go | 2 +-") || !strings.Contains(out, "after") || !strings.Contains(out, "msg") {
		t.Fatalf("dropped too much:\n%s", out)
	}
	if n != 7 {
		t.Fatalf("dropped %d entries, want 7", n)
	}
}

// The patterns --grep takes are read as git reads them.
func TestTranslateGitRE(t *testing.T) {
	for _, c := range []struct {
		in     string
		basic  bool
		match  []string
		reject []string
	}{
		{`fix(parser)`, true, []string{"fix(parser) x"}, []string{"fixparser"}},
		{`a\|b`, true, []string{"b"}, []string{"c"}},
		{`x\{2\}`, true, []string{"xx"}, []string{"x{2}"}},
		{`1+1`, true, []string{"1+1"}, []string{"11"}},
		{`\<word\>`, true, []string{"a word."}, []string{"swordfish"}},
		{`[[:digit:]]\+`, true, []string{"v2"}, []string{"vv"}},
		{`[]a]`, true, []string{"]"}, []string{"b"}},
		{`a|b`, false, []string{"b"}, []string{"c"}},
		{`*star`, true, []string{"*star"}, []string{"star"}},
	} {
		re, err := compileGitGrep(c.in, false, !c.basic, false)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		for _, m := range c.match {
			if !re.MatchString(m) {
				t.Errorf("%q (basic %v) does not match %q (as %s)", c.in, c.basic, m, re)
			}
		}
		for _, m := range c.reject {
			if re.MatchString(m) {
				t.Errorf("%q (basic %v) matches %q (as %s)", c.in, c.basic, m, re)
			}
		}
	}
}
