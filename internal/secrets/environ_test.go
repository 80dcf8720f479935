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
