package secrets

import (
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What git, blame, YAML and diffs put in front of a line, and what may
// follow a value: none of it changes what is hidden in the line.
var (
	linePrefixes = []string{"", "+", "-", " ", "    ", "\t", "export ", "- ", "+  ", "@@ -1,3 +1,4 @@ ",
		"^1a2b3c4 (Jane Doe 2024-01-02 10:00:00 +0000 12) ", "1a2b3c4d (J. Doe      2024-01-02 10:00:00 +0000  7) \t"}
	lineSuffixes = []string{"", " ", "\t", "\r", " # prod", "  // rotated 2024", " ; ini comment", " -- sql", " /* c */"}
)

// Every KEY=value shape of issue 27 is hidden, with each prefix and suffix,
// and the rest of the line is kept as it was.
func TestRedactionIgnoresWhereALineStarts(t *testing.T) {
	secrets := []struct{ line, value string }{
		{"DB_PASSWORD=correcthorsebattery", "correcthorsebattery"},
		{"POSTGRES_PASSWORD: pgs3cretvalue", "pgs3cretvalue"},
		{"spring.datasource.password=springs3cret", "springs3cret"},
		{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"},
		{"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"},
		{"api_key = 'abcdef123456'", "abcdef123456"},
		{`"client_secret": "cl13ntsecretvalue",`, "cl13ntsecretvalue"},
		{`password: "correct-horse-battery"`, "correct-horse-battery"},
		{"redis.auth_token = tok3nvalue99", "tok3nvalue99"},
		{"GITHUB_TOKEN=ghp_" + strings.Repeat("Z", 36), "ZZZZZZZZ"},
		{"https://example.com/hook?access_token=abcdef123456", "abcdef123456"},
	}
	for _, s := range secrets {
		bare := Redact(s.line)
		if strings.Contains(bare, s.value) {
			t.Fatalf("%q: not hidden: %q", s.line, bare)
		}
		for _, p := range linePrefixes {
			for _, x := range lineSuffixes {
				got := Redact(p + s.line + x)
				if got != p+bare+x {
					t.Errorf("prefix %q suffix %q changed what is hidden:\n got %q\nwant %q", p, x, got, p+bare+x)
				}
			}
		}
	}
	code := []string{"token = lexer.next()", `apiKey := os.Getenv("API_KEY")`, "func (k *Key) String() string {",
		`password := req.FormValue("password")`, "if passwordHash == nil {", "secret: cfg.Secret,", "token := tokens[i]",
		"Token string `json:\"token\"`", "password: ${DB_PASSWORD}", "max_tokens: 512"}
	for _, c := range code {
		for _, p := range linePrefixes {
			for _, x := range lineSuffixes {
				if got := Redact(p + c + x); got != p+c+x {
					t.Errorf("ordinary code changed: %q → %q", p+c+x, got)
				}
			}
		}
	}
}

// The same property on lines made of random pieces: whatever a line holds,
// a prefix or a comment after it changes nothing in what is hidden.
func TestRedactionPrefixPropertyRandom(t *testing.T) {
	pieces := []string{"password", "token", "api_key", "SECRET", "=", ":", " ", "  ", `"`, "'", "abc123xyz", "s3cr3tv4lue",
		"(", ")", ",", "x", "-", ".", "_", "hunter2", "correcthorse", "{", "}", "/", "ghp_" + strings.Repeat("a1", 18)}
	suffixes := []string{"", " # prod", "  // note", "\r"}
	rng := rand.New(rand.NewPCG(27, 1))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := 1 + rng.IntN(8); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		line := b.String()
		bare := Redact(line)
		for _, p := range linePrefixes {
			for _, x := range suffixes {
				if strings.HasSuffix(line, " ") && x != "" && x != "\r" {
					continue // "KEY= " + "# prod": the comment is then the value
				}
				if got := Redact(p + line + x); got != p+bare+x {
					t.Fatalf("line %q, prefix %q, suffix %q:\n got %q\nwant %q", line, p, x, got, p+bare+x)
				}
			}
		}
	}
}

// BenchmarkRedact measures the redactor per KB of ordinary source code
// (BENCHMARKS.md compares it with gitleaks' detector).
func BenchmarkRedact(b *testing.B) {
	goroot, _ := exec.Command("go", "env", "GOROOT").Output()
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "src", "net", "http", "server.go"))
	if err != nil {
		b.Skip(err)
	}
	s := string(data)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Redact(s)
	}
}

// BenchmarkReplyRedactorStream streams the same file as BenchmarkRedact
// through the reply redactor in pieces of 4 bytes, as a model's tokens
// arrive (the ratio of the two is the cost of redacting as it streams).
func BenchmarkReplyRedactorStream(b *testing.B) {
	goroot, _ := exec.Command("go", "env", "GOROOT").Output()
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "src", "net", "http", "server.go"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		streamPieces(data, 4)
	}
}

// BenchmarkReplyRedactorLongWord streams a 2 KB line with no blank (a
// base64 blob): each piece re-reads the word for a secret's start, which
// must cost a scan per rule, not a comparison per byte and rule.
func BenchmarkReplyRedactorLongWord(b *testing.B) {
	data := []byte(strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 58) + "\n")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		streamPieces(data, 4)
	}
}

func streamPieces(data []byte, n int) {
	r := &ReplyRedactor{out: io.Discard}
	for i := 0; i < len(data); i += n {
		r.Write(data[i:min(i+n, len(data))])
	}
	r.Flush()
}

// The shapes issue 39 found passing: each value is hidden, the command
// around it kept; ordinary lines that look alike are left alone.
func TestRedactionKnowsCommandLineSecrets(t *testing.T) {
	secrets := []struct{ line, value string }{
		{"DB_PASS=hunter2hunter", "hunter2hunter"},
		{"smtp.pass: m41lp4ssw0rd", "m41lp4ssw0rd"},
		{"PGPASSWORD=s3cr3tpg psql -h db -U app", "s3cr3tpg"},
		{"PGPASSWORD=x psql -h db", "=x psql"},
		{"MYSQL_PWD='quoted secret' mysqldump app", "quoted secret"},
		{"curl -H 'Authorization: Bearer abcdef0123456789xyz' https://api.example.com", "abcdef0123456789xyz"},
		{"Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="},
		{`"authorization": "Bearer tok_9f8e7d6c5b4a"`, "tok_9f8e7d6c5b4a"},
		{"AUTHORIZATION=Token zz9zz9zz9zz9", "zz9zz9zz9zz9"},
		{"curl -u alice:opensesame42 https://example.com/api", "opensesame42"},
		{"curl -s --user bob:p4ss-w0rd https://example.com", "p4ss-w0rd"},
		{"mysql -u root -pS3cretRoot app < dump.sql", "S3cretRoot"},
		{"docker login --password hunter2x -u me", "hunter2x"},
		{"psql --password=pgpass99 app", "pgpass99"},
	}
	for _, s := range secrets {
		got := Redact(s.line)
		if strings.Contains(got, s.value) || !strings.Contains(got, Mark) {
			t.Errorf("%q: not hidden: %q", s.line, got)
		}
	}
	keep := []string{"bypass: enabled_always", "compass_heading = northwest", "docker run -u 1000:1000 image", "git push -u origin main",
		"mysql -p", "docker login --password-stdin", "PGPASSWORD=$PGPASS psql", "Bearer tokens expire."}
	for _, k := range keep {
		if got := Redact(k); got != k {
			t.Errorf("ordinary text changed: %q → %q", k, got)
		}
	}
}

// A streamed reply is redacted as if it had arrived whole, wherever the
// stream cuts it (issue 45): every split into two pieces, and one byte at
// a time, give exactly the whole text's redaction.
func TestReplyRedactorAnySplit(t *testing.T) {
	text := "Use sk-proj-" + strings.Repeat("Zq9", 10) + " for the client.\n" +
		"Then PASSWORD=\"correct horse battery staple\" make deploy\n" +
		"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345\n" +
		"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n" +
		"Also AKIAABCDEFGHIJKLMNOP and a plain ending"
	var want strings.Builder
	(&ReplyRedactor{out: &want}).write(t, text)
	if strings.Contains(want.String(), "Zq9Zq9") || strings.Contains(want.String(), "horse") || strings.Contains(want.String(), "MIIEvQ") {
		t.Fatalf("the whole text is not redacted: %q", want.String())
	}
	for i := 0; i <= len(text); i++ {
		var got strings.Builder
		r := &ReplyRedactor{out: &got}
		r.Write([]byte(text[:i]))
		r.Write([]byte(text[i:]))
		r.Flush()
		if got.String() != want.String() {
			t.Fatalf("split at %d: %q\nwant %q", i, got.String(), want.String())
		}
	}
	var got strings.Builder
	r := &ReplyRedactor{out: &got}
	for i := 0; i < len(text); i++ {
		r.Write([]byte{text[i]})
	}
	r.Flush()
	if got.String() != want.String() {
		t.Fatalf("a byte at a time: %q", got.String())
	}
}

func (r *ReplyRedactor) write(t *testing.T, s string) {
	t.Helper()
	r.Write([]byte(s))
	r.Flush()
}

// A reply's text ends its line before the tools' lines (issue 55: "Let me
// look around first.⚙ run_command"), and a line already ended gets no
// second newline.
func TestReplyEndsItsLineBeforeTools(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Let me look around first.", "Let me look around first.\n"},
		{"Done.\n", "Done.\n"},
		{"", ""},
		{"two\nlines", "two\nlines\n"},
	} {
		var b strings.Builder
		r := &ReplyRedactor{out: &b}
		r.Write([]byte(c.in))
		r.EndLine()
		if b.String() != c.want {
			t.Errorf("%q: %q, want %q", c.in, b.String(), c.want)
		}
	}
}
