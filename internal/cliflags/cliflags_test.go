package cliflags

import (
	"bytes"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	var out, errb bytes.Buffer
	f, code := Parse([]string{"-p", "hi", "--model", "m", "--output", "stream-json", "--yes", "-c"}, &out, &errb, "harvey 1")
	if f == nil || code != 0 || f.Prompt != "hi" || f.Model != "m" || f.Output != "stream-json" || !f.Yes || !f.Continue {
		t.Fatalf("%+v %d %s", f, code, errb.String())
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--version"}, 0, "harvey 1"},
		{[]string{"--help"}, 0, "Usage:"},
		{[]string{"--output", "json"}, 2, "for -p and --run"},
		{[]string{"-p", "x", "--output", "xml"}, 2, "use text, json or stream-json"},
		{[]string{"-p", "  "}, 2, "-p needs a prompt"},
		{[]string{"-p", "x", "--run", "s"}, 2, "either -p or --run"},
		{[]string{"what", "now"}, 2, "quote the prompt"},
		{[]string{"--nope"}, 2, "harvey --help lists the flags"},
	} {
		out.Reset()
		errb.Reset()
		f, code := Parse(c.args, &out, &errb, "harvey 1")
		if f != nil || code != c.code || !strings.Contains(out.String()+errb.String(), c.says) {
			t.Errorf("%q: %+v %d %q %q", c.args, f, code, out.String(), errb.String())
		}
	}
}

// Every flag the usage names is offered by completion, and every
// subcommand it lists.
func TestCompletionFollowsTheUsage(t *testing.T) {
	for _, fl := range Completion {
		if !strings.Contains(Usage, fl.Name) {
			t.Errorf("completion offers %s, which the usage does not name", fl.Name)
		}
	}
	for sub := range Subcommands {
		if !strings.Contains(Usage, "harvey "+sub) {
			t.Errorf("completion offers harvey %s, which the usage does not list", sub)
		}
	}
}
