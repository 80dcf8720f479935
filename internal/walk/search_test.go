package walk

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/harvey-agent/harvey/internal/match"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// FuzzSearchPrefilter checks the rule that lets search skip redacting a
// file: whenever mayMatchAtMarker says a pattern cannot match at a
// redaction marker, a text whose raw form has no match has no matching
// line once redacted either — so skipping it changes nothing, whatever
// the secret's bytes.
func FuzzSearchPrefilter(f *testing.F) {
	tok := "ghp_" + strings.Repeat("A", 20) + "Cxyz0123456789abcdefgh"
	for _, p := range []string{`ghp_A{20}C`, `: \[`, `: \B`, `(?s)n: .`, `DACT`, `token`, `n:\s+\S`, `[^a-z]{3}`, `secret\]`} {
		f.Add(p, "token: "+tok+"\npassword = \"hunter22\"\n")
	}
	f.Add(`-----`, "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdefghijklmnopqrstuv\n-----END RSA PRIVATE KEY-----\n")
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(pattern) > 64 || len(text) > 4096 {
			return
		}
		re, err := regexp.Compile(pattern)
		if err != nil || match.ProgSize(re) > match.MaxProg || match.MayTouchMark(re, secrets.Mark) {
			return
		}
		m := match.NewMatcher(re)
		if m.Match([]byte(text)) {
			return // searched in full either way
		}
		if hits := grepData(context.Background(), []byte(secrets.Redact(text)), m, "f", false); hits != nil {
			t.Fatalf("pattern %q: no raw match, but the redacted text has %q", pattern, hits)
		}
	})
}

// The walk gives a search what the policy lets the model read, and
// nothing else: not agents/, a denied file, a .gitignore'd one, what a
// link leads to; a search stops at MaxMatches and says there are more.
func TestWalkAndSearch(t *testing.T) {
	base := t.TempDir()
	dir := base + "/ws"
	for p, c := range map[string]string{"a.go": "needle\n", "sub/b.go": "needle\n", ".env": "needle\n", "gen/c.go": "needle\n",
		".gitignore": "gen/\n", base + "/outside.txt": "needle\n", "zz/many.txt": strings.Repeat("needle\n", MaxMatches+5)} {
		if !strings.HasPrefix(p, "/") {
			p = dir + "/" + p
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(c), 0o644)
	}
	tree, err := wspath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	os.WriteFile(dir+"/agents/notes.md", []byte("needle\n"), 0o600)
	os.Symlink(base+"/outside.txt", dir+"/link.txt")
	var cache sync.Map
	h, err := Search(context.Background(), tree, &cache, "needle", ".", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{".env", "gen/", "agents/", "link.txt", "outside"} {
		if strings.Contains(h.Text, bad) {
			t.Errorf("the search showed %s:\n%s", bad, h.Text)
		}
	}
	if !strings.Contains(h.Text, "a.go:1:") || !strings.Contains(h.Text, "sub/b.go:1:") || h.Shown != MaxMatches || !h.More {
		t.Errorf("shown %d, more %v:\n%.300s", h.Shown, h.More, h.Text)
	}
}
