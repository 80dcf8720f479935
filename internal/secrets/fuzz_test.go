package secrets

import (
	"strings"
	"testing"
)

// FuzzReplyRedactor: wherever a stream cuts a reply, what leaves is
// exactly the whole reply's redaction (so no piece of a secret the whole
// text hides ever leaves first).
func FuzzReplyRedactor(f *testing.F) {
	f.Add("Use sk-proj-"+strings.Repeat("Zq9", 10)+" now.\nPASSWORD=\"a b c\" make\n", 7)
	f.Add("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n", 3)
	f.Add("curl -u bob:hunter2hunter2 https://x.example\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz\n", 11)
	f.Add("token = ghp_"+strings.Repeat("a", 36)+" # mine\nok", 5)
	f.Fuzz(func(t *testing.T, text string, step int) {
		step = 1 + abs(step)%16
		var lr LineRedactor
		want := lr.Text(text)
		var got strings.Builder
		r := &ReplyRedactor{out: &got}
		for i := 0; i < len(text); i += step {
			r.Write([]byte(text[i:min(i+step, len(text))]))
		}
		r.Flush()
		if got.String() != want {
			t.Fatalf("in pieces of %d: %q\nwhole: %q", step, got.String(), want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
