package sandboxcli

import (
	"bytes"
	"strings"
	"testing"
)

func TestAppArmorProfileNamesTheExecutableAndAllowsOnlyUserNamespaces(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Command([]string{"apparmor", "--for", "/opt/harvey bin/harvey"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	p := out.String()
	for _, want := range []string{`profile harvey "/opt/harvey bin/harvey" flags=(unconfined) {`, "  userns,\n", "include if exists <local/harvey>"} {
		if !strings.Contains(p, want) {
			t.Errorf("the profile lacks %q:\n%s", want, p)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"nope"}, {"status", "extra"}, {"apparmor", "--for", "relative/harvey"}} {
		var out, errb bytes.Buffer
		if code := Command(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: harvey sandbox") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

func TestStatusSaysTheMode(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	if code := Command(nil, &out, &errb); code != 0 || !strings.Contains(strings.ToLower(out.String()), "sandbox") {
		t.Fatalf("exit %d: %q %q", code, out.String(), errb.String())
	}
}
