package sandboxpolicy

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// The refusal names its rule.
func TestSandboxBlockedNamesTheRule(t *testing.T) {
	spec := &sandbox.Spec{Dir: "/w", RW: []string{"/w", "/tmp/h"}, RO: []string{"/usr", "/etc"}, ReadOnly: []string{"/w/agents", "/w/.git"}}
	safe := *spec
	safe.Exec = []string{"/usr/bin/find"}
	landlockOnly := *spec
	landlockOnly.NoNS = true
	proxied := *spec
	proxied.Proxy = "/run/proxy.sock"
	hidden := *spec
	hidden.Hidden = []string{"/w/agents"}
	hidden.Argv = []string{"/home/u/bin/tool"}
	session := proxied
	session.Session = "/run/ctl"
	listed := session
	listed.Forwards = []string{"127.0.0.1:6379", "127.0.0.1:5432"}
	for _, c := range []struct {
		out  string
		spec *sandbox.Spec
		want Rule
		text string
	}{
		{"sh: 1: cannot create ../outside/x: Permission denied\n", spec, RulePath, "../outside/x is outside"},
		{"cat: /home/u/.ssh/id_rsa: Permission denied\n", spec, RulePath, "/home/u/.ssh/id_rsa"},
		{"touch: cannot touch '/etc/x': Permission denied\n", spec, RulePath, "may be read but not written"},
		{"bash: line 1: agents/x: Read-only file system\n", spec, RuleReadOnly, "read-only"},
		{"bash: connect: Permission denied\n", spec, RuleNetwork, "network"},
		{"npm error code EACCES\nnpm error syscall connect\nnpm error connect EACCES 104.16.1.35:443\n", &landlockOnly, RuleNetwork, "no registry proxy"},
		{"dial tcp 142.250.1.1:443: connect: permission denied\n", &landlockOnly, RuleNetwork, "harvey sandbox"},
		{"  [7] Could not connect to server (Failed to connect to index.crates.io port 443 after 0 ms: Could not connect to server)\n", &landlockOnly, RuleNetwork, "no registry proxy"},
		{"ERROR: Could not find a version that satisfies the requirement greetpy (from versions: none)\n", &landlockOnly, RuleNetwork, "no registry proxy"},
		{"ERROR: Could not find a version that satisfies the requirement greetpy (from versions: none)\n", spec, RuleNone, ""}, // with the proxy: a name that is not there
		{"find: 'sh': Permission denied\n", &safe, RuleExec, "not allowed to execute: sh"},
		{"harvey sandbox: sh: not allowed to execute here\n", &safe, RuleExec, "safe mode"},
		{"open x: Permission denied\n", spec, RuleNone, ""}, // inside the workspace: not the sandbox
		{"curl: (6) Could not resolve host: example.com\n", &proxied, RuleNetwork, "sandbox.hosts"},
		{"psql: connection refused\n", &proxied, RuleNetwork, "its own here"},
		{"psql: connection refused\n", &session, RuleNetwork, "session's 127.0.0.1"},
		{"curl: (7) Failed to connect to 127.0.0.1 port 5432 after 0 ms: Couldn't connect to server\n", &session, RuleNetwork, "sandbox.hosts in your config adds a service of yours"}, // issue 76: not a bare line
		{"psql: error: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n", &listed, RuleNetwork, "your service 127.0.0.1:5432 (sandbox.hosts) refused"},
		{"Could not connect to Redis at 127.0.0.1:6379: Connection refused\n", &listed, RuleNetwork, "takes effect when Harvey starts again"},
		{"curl: (7) Failed to connect to 127.0.0.1 port 15432 after 0 ms: Couldn't connect to server\n", &listed, RuleNetwork, "adds a service of yours"}, // another port
		{"go: example.com/m@v1: module lookup disabled by GOPROXY=off\n", &landlockOnly, RuleNetwork, "your own module cache"},
		{"cat: agents/history: No such file or directory\n", &hidden, RuleReadOnly, "agents/ is Harvey's own"},
		{"cat: /home/u/doc.txt: No such file or directory\n", spec, RulePath, "does not exist for commands"},
		{"cat: /home/u/doc.txt: No such file or directory\n", &landlockOnly, RuleNone, ""}, // no root of its own: it is missing
		{"harvey sandbox: /home/u/bin/tool: not allowed to execute here\n", &hidden, RulePath, "sandbox.readable"},
		{"mv: cannot move '.git': Device or resource busy\n", spec, RuleReadOnly, "cannot be moved"},
		{"touch: cannot touch '.git/config': Read-only file system\n", spec, RuleReadOnly, "read-only to commands"},
		{"[ERROR] Could not create local repository at /home/u/.m2/repository -> [Help 1]\n", spec, RulePath, "/home/u/.m2/repository"},
	} {
		rule, text := Blocked(c.out, 1, c.spec)
		if rule != c.want || !strings.Contains(text, c.text) {
			t.Errorf("%q: got %d %q, want %d %q", c.out, rule, text, c.want, c.text)
		}
	}
	if r, _ := Blocked("cat: /home/u/x: Permission denied", 0, spec); r != RuleNone {
		t.Error("a successful command was called blocked")
	}
}
