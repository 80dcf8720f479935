package secrets

import "testing"

// FileDenied only joins paths that hold one of pathSuffixHints:
// every entry of deniedPathSuffix must hold one.
func TestDeniedPathSuffixesMentionConfig(t *testing.T) {
	for _, s := range deniedPathSuffix {
		if !containsAnyFold(s, pathSuffixHints) {
			t.Fatalf("%q holds none of %v; update FileDenied's fast path", s, pathSuffixHints)
		}
	}
	for _, p := range []string{".kube/config", "home/.KUBE/Config", ".docker/config.json", "x/.config/gcloud/creds.db", ".ssh/known", "a/.AWS/x"} {
		if !FileDenied(p) {
			t.Errorf("%s allowed", p)
		}
	}
	for _, p := range []string{"config.go", "kube/config", "src/configure.ac"} {
		if FileDenied(p) {
			t.Errorf("%s denied", p)
		}
	}
}
