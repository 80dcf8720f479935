package secrets

import (
	"strings"
	"testing"
)

// What a child inherits: the allowlist, less what looks secret.
func TestEnvironmentFiltering(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/h", "LANG=C", "LC_ALL=C", "OPENAI_API_KEY=sk-x", "GITHUB_TOKEN=g", "AWS_REGION=x", "SSH_AUTH_SOCK=/s", "HARVEY_SECRET=x", "MY_PASSWORD=p", "EDITOR=vi", "DATABASE_URL=postgres://u:p@h/db"}
	got := strings.Join(Environ(in), " ")
	if got != "PATH=/bin HOME=/h LANG=C LC_ALL=C" {
		t.Fatalf("env = %s", got)
	}
}

// sandbox.env: a name or a pattern passes a variable; what looks secret
// passes only by its exact name, never by a pattern.
func TestNamedVariables(t *testing.T) {
	env := []string{"DATABASE_URL=postgres://u:pw@db/app", "MYTEAM_FLAGS=-v", "MYTEAM_TOKEN=t0k", "NODE_EXTRA_CA_CERTS=/etc/ca.pem", "CC=clang", "OTHER=x", "API_KEY=k"}
	got := Named(env, []string{"DATABASE_URL", "MYTEAM_*", "NODE_*", "*_KEY"})
	want := []string{"DATABASE_URL=postgres://u:pw@db/app", "MYTEAM_FLAGS=-v", "NODE_EXTRA_CA_CERTS=/etc/ca.pem"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Named = %q, want %q", got, want)
	}
	if Named(env, nil) != nil {
		t.Error("nothing named, something passed")
	}
	base := WithNamed([]string{"PATH=/bin", "CC=gcc"}, env, []string{"CC"})
	if strings.Join(base, " ") != "PATH=/bin CC=clang" {
		t.Errorf("WithNamed = %q", base)
	}
}
