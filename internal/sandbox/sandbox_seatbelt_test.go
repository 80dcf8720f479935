package sandbox

import (
	"strings"
	"testing"
)

// The macOS profile (generated on every platform, so it is tested here):
// paths are parameters, never profile text; safe mode lists the programs
// that may execute; agents/ and .git/'s config and hooks are carved out of
// the writable tree;
// the network is off unless allowed.
func TestSeatbeltProfile(t *testing.T) {
	hostile := `/w/x") (allow default) ("`
	spec := Spec{
		Argv:     []string{"make", "test"},
		Dir:      "/w",
		RW:       []string{"/w", hostile},
		RO:       []string{"/opt/go"},
		ReadOnly: []string{"/w/.git/config", "/w/.git/hooks"},
		Hidden:   []string{"/w/agents"},
	}
	profile, params := seatbeltProfile(spec)
	if strings.Contains(profile, "/w") || strings.Contains(profile, "(allow default)") {
		t.Fatalf("a path reached the profile text:\n%s", profile)
	}
	bound := map[string]string{}
	for i := 0; i+1 < len(params); i += 2 {
		if params[i] != "-D" {
			t.Fatalf("params = %q", params)
		}
		k, v, _ := strings.Cut(params[i+1], "=")
		bound[k] = v
	}
	for k := range bound {
		if !strings.Contains(profile, `(param "`+k+`")`) {
			t.Errorf("parameter %s is bound but unused", k)
		}
	}
	var kept []string
	for k, v := range bound {
		if strings.HasPrefix(k, "KEEP_") {
			kept = append(kept, v)
		}
	}
	if len(kept) != 3 || !strings.Contains(profile, "(require-not (subpath (param \"KEEP_") {
		t.Fatalf("agents/ and .git/'s config and hooks not carved out: %v\n%s", kept, profile)
	}
	if !strings.Contains(profile, "(deny default)") || !strings.Contains(profile, "(allow process-exec)\n") || strings.Contains(profile, "(allow network*)\n") {
		t.Fatalf("profile:\n%s", profile)
	}
	spec.Exec, spec.Network = []string{"/usr/bin/find"}, true
	profile, params = seatbeltProfile(spec)
	if strings.Contains(profile, "(allow process-exec)\n") || !strings.Contains(profile, "(allow process-exec (literal (param \"EXEC_") ||
		!strings.Contains(strings.Join(params, " "), "=/usr/bin/find") || !strings.Contains(profile, "(allow network*)\n") {
		t.Fatalf("safe mode / network profile:\n%s %q", profile, params)
	}
	argv := seatbeltArgv(spec)
	if argv[0] != "/usr/bin/sandbox-exec" || argv[1] != "-p" || strings.Join(argv[len(argv)-2:], " ") != "make test" {
		t.Fatalf("argv = %q", argv)
	}
}
