package gitargs

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/refusal"
)

// What git would read is what was checked: clusters, glued and separate
// values and long options come out in one canonical spelling; operands and
// paths stay as typed.
func TestVetCanonicalSpelling(t *testing.T) {
	for _, c := range []struct {
		sub  string
		args []string
		want Args
	}{
		{"log", []string{"-5", "--oneline"}, Args{Opts: []string{"--max-count=5", "--oneline"}, Count: true}},
		{"diff", []string{"-wU1", "HEAD~1", "--", "a.go"}, Args{Opts: []string{"--ignore-all-space", "--unified=1"}, Operands: []string{"HEAD~1"}, Paths: []string{"a.go"}}},
		{"diff", []string{"-U", "2"}, Args{Opts: []string{"--unified=2"}}},
		{"log", []string{"--end-of-options", "-x"}, Args{Opts: []string{"--max-count=10"}, Operands: []string{"-x"}}},
		{"show", []string{"--format=%h %s", "HEAD"}, Args{Opts: []string{"--format=%h %s"}, Operands: []string{"HEAD"}}},
	} {
		got, err := Vet(c.sub, c.args)
		if err != nil {
			t.Fatalf("%s %q: %v", c.sub, c.args, err)
		}
		want := c.want
		if c.sub == "log" && !want.Count {
			want.Opts = nil // the default count is the caller's, not the grammar's
			got.Opts = nil
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s %q:\ngot  %+v\nwant %+v", c.sub, c.args, *got, want)
		}
	}
}

// Refusals wrap ErrRefused and say what is allowed; a malformed value of
// an allowed option is an error of another kind.
func TestVetRefusesWhatIsNotOnTheList(t *testing.T) {
	for _, c := range []struct {
		sub     string
		args    []string
		refused bool
		says    string
	}{
		{"push", nil, true, "only status, diff, log, show, blame"},
		{"log", []string{"--output=x"}, true, "not allowed"},
		{"log", []string{"--onel"}, true, "not allowed"}, // an abbreviation
		{"diff", []string{"-"}, true, "standard input"},
		{"log", []string{"a\x1bb"}, true, "control characters"},
		{"log", []string{"-Ssecret"}, true, "searches file contents"},
		{"log", []string{"--format=%G?"}, false, "gpg"},
		{"log", []string{"--format=%+GS"}, false, "gpg"},
		{"diff", []string{"--unified=many"}, false, "bad line count"},
		{"log", []string{"--oneline=yes"}, false, "takes no value"},
	} {
		_, err := Vet(c.sub, c.args)
		if err == nil || errors.Is(err, refusal.ErrRefused) != c.refused || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %q: %v (refused %v), want %q", c.sub, c.args, err, errors.Is(err, refusal.ErrRefused), c.says)
		}
	}
}

// REV:PATH and ranges split where git splits them.
func TestSplitRevPathAndRange(t *testing.T) {
	if rev, p, ok := SplitRevPath("HEAD~2:dir/a.go"); !ok || rev != "HEAD~2" || p != "dir/a.go" {
		t.Errorf("SplitRevPath: %q %q %v", rev, p, ok)
	}
	if rev, p, ok := SplitRevPath("HEAD^{/fix: a}:a.go"); !ok || rev != "HEAD^{/fix: a}" || p != "a.go" {
		t.Errorf("SplitRevPath with a colon in braces: %q %q %v", rev, p, ok)
	}
	if a, sep, b, ok := SplitRange("main...HEAD"); !ok || a != "main" || sep != "..." || b != "HEAD" {
		t.Errorf("SplitRange: %q %q %q %v", a, sep, b, ok)
	}
}
