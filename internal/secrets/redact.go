package secrets

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/lazyre"
	"github.com/harvey-agent/harvey/internal/match"
)

// Redaction: the one definition of secret-looking content, used by every
// tool result, slash command, git and command output, recording and log
// line. It works line by line and keeps the number of lines, so a window of
// a redacted text (read_file offset=N, a diff hunk, a search hit) is the
// same window of the original; a private key block is tracked across lines,
// so a window that starts inside one never shows its body. Callers redact
// the whole text (or stream every line from its start through a
// LineRedactor) before they page, cap or search it.

// RedactWindow redacts output that may be a window cut from the middle of
// a file Harvey cannot see whole — a diff hunk, a blame range, the tail of a
// command's output — where a private key's BEGIN line may lie outside the
// window. On top of Redact, a line that is nothing but key-like
// base64 (40 to 100 characters of mixed case and digits, after a diff
// marker or a blame prefix) is treated as key material.
func RedactWindow(s string) string {
	s = Redact(s)
	if !strings.ContainsAny(s, "0123456789") {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	changed := false
	for i, l := range lines {
		body := strings.TrimRight(l, "\r\n")
		prefix := ""
		if strings.HasPrefix(body, "@@ ") {
			// A hunk header's context text is a line of the file.
			if j := strings.Index(body[3:], "@@ "); j >= 0 {
				prefix, body = body[:j+6], body[j+6:]
			}
		} else if j := strings.Index(body, ") "); j >= 0 && j < 80 && strings.Contains(body[:j], " ") {
			prefix, body = body[:j+2], body[j+2:] // blame: "abc123 (Author 2024-01-01 12) text"
		} else if body != "" && strings.ContainsRune("+- \t", rune(body[0])) {
			prefix, body = body[:1], body[1:]
		}
		if keyLikeBase64(strings.TrimSpace(body)) {
			lines[i] = prefix + Mark + l[len(strings.TrimRight(l, "\r\n")):]
			changed = true
		}
	}
	if !changed {
		return s
	}
	return strings.Join(lines, "")
}

// keyLikeBase64 reports a line of PEM or OpenSSH key body.
func keyLikeBase64(s string) bool {
	if len(s) < 40 || len(s) > 100 {
		return false
	}
	var up, low, dig bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			low = true
		case c >= '0' && c <= '9':
			dig = true
		case c == '+' || c == '/':
		case c == '=' && i >= len(s)-2:
		default:
			return false
		}
	}
	return up && low && dig
}

// tokenRule is a secret of a known shape. Its pattern starts with a
// literal (so Go's regexp skips to it with a fast substring search; a
// leading \b would disable that, so wordStart checks the boundary in code)
// and never spans a newline, so it runs over a whole text at once. The last
// group (if any) is the part replaced; otherwise the whole match is.
type tokenRule struct {
	re        func() *regexp.Regexp // compiled on first use, not at every start
	hint      *match.Literal        // a literal every match contains, found by its rarest byte (nil: none)
	wordStart bool                  // the match must not follow a letter, digit or _
	lit       string                // the hint as written
}

func rule(hint string, wordStart bool, pattern string) tokenRule {
	r := tokenRule{re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) }), wordStart: wordStart, lit: hint}
	if hint != "" {
		r.hint = match.NewLiteral(hint)
	}
	return r
}

var secretPatterns = []tokenRule{
	rule("A", true, `A(?:KIA|SIA|GPA|IDA|ROA|NPA)[0-9A-Z]{16}\b`), // AWS key IDs
	rule("gh", true, `gh[pousr]_[A-Za-z0-9]{30,}\b`),
	rule("github_pat_", true, `github_pat_[A-Za-z0-9_]{30,}\b`),
	rule("sk-", true, `sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}\b`),
	rule("sk_", true, `sk_(?:live|test)_[0-9A-Za-z]{16,}\b`), // Stripe
	rule("rk_", true, `rk_(?:live|test)_[0-9A-Za-z]{16,}\b`),
	rule("xox", true, `xox[abposr]-[A-Za-z0-9\-]{10,}\b`),
	rule("hooks.slack.com", false, `https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}`),
	rule("glpat-", true, `glpat-[A-Za-z0-9_\-]{20,}\b`),
	rule("AIza", true, `AIza[0-9A-Za-z_\-]{35}\b`),
	rule("npm_", true, `npm_[A-Za-z0-9]{36}\b`),
	rule("hf_", true, `hf_[A-Za-z0-9]{30,}\b`),
	rule("eyJ", true, `eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), // JWT
	rule("SK", true, `SK[0-9a-fA-F]{32}\b`),                                               // Twilio
	rule("SG.", true, `SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b`),                     // SendGrid
	rule("pypi-", true, `pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}`),                        // PyPI
	rule("shp", true, `shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`),                             // Shopify
	rule("_v1_", true, `do[opr]_v1_[a-f0-9]{64}\b`),                                       // DigitalOcean
	rule("AccountKey=", false, `AccountKey=([A-Za-z0-9+/=]{20,})`),                        // Azure
	rule("SharedAccessKey=", false, `SharedAccessKey=([A-Za-z0-9+/=]{20,})`),
	// credentials in URLs: user:password@ and a bare token@ (https://TOKEN@host)
	rule("://", false, `://([^/\s:@]+:[^/\s@]+)@`),
	rule("://", false, `://([A-Za-z0-9_\-]{16,})@`),
	// HTTP credentials: an Authorization header's (or setting's) value
	// after its scheme, and a bearer token anywhere (curl -H, logs).
	rule("uthorization", false, `[Aa]uthorization["']?[ \t]*[:=][ \t]*["']?(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest|[Bb]ot)[ \t]+([A-Za-z0-9._~+/\-]{6,}=*)`),
	rule("UTHORIZATION", false, `AUTHORIZATION["']?[ \t]*[:=][ \t]*["']?(?i:bearer|basic|token|digest|bot)[ \t]+([A-Za-z0-9._~+/\-]{6,}=*)`),
	rule("earer", false, `[Bb]earer[ \t]+([A-Za-z0-9._~+/\-]{16,}=*)`),
	// passwords on command lines: curl -u user:pass (--user), mysql's
	// -pSECRET, and --password=SECRET / --password SECRET of any program.
	rule("curl", false, `curl\b[^\n]*?[ \t](?:-u[ \t]*|--user[ \t=]+)["']?[^\s:"']+:([^\s"']+)`),
	rule("mysql", false, `mysql[a-z]*\b[^\n]*?[ \t]-p([^\s"'-][^\s"']*)`),
	rule("mariadb", false, `mariadb[a-z-]*\b[^\n]*?[ \t]-p([^\s"'-][^\s"']*)`),
	rule("-password", false, `[ \t]--password(?:=|[ \t]+)["']?([^\s"'$-][^\s"']{2,})`),
}

// assignPatterns find a value given to a secret-named key anywhere in a
// line, whatever comes before it (a diff's +/-, blame's columns, indentation,
// "export ", a URL's ?): quoted (password: "...", "api_key": "...",
// aws_secret_access_key = '...'), or unquoted (KEY=value, key: value in env
// files, YAML, INI, properties) when the value ends the line or only blank
// space or a comment follows it. A value with call or collection syntax
// after it is code, not a secret (token = lexer.next(), secret: cfg.Secret,).
// So a prefix or a suffix never changes what is hidden in a line
// (TestRedactionIgnoresWhereALineStarts). They run only on lines where
// secretKeyBefore finds such a key before a ':' or '='.
var assignPatterns = []tokenRule{
	rule("", false, `(?i)`+secretKeyRE+`["']?[ \t]*(?::=|[:=])[ \t]*["']([^"'\s]{6,})["']`),
	rule("", false, `(?i)`+secretKeyRE+`["']?[ \t]*[:=][ \t]*([^\s"'(){}\[\],;]{6,})(?:[ \t\r]*$|[ \t]+(?:#|//|;|--|<!--|/\*).*$)`),
	// A shell's VAR=value before a command (PGPASSWORD=x psql ...,
	// MYSQL_PWD=x mysqldump): a variable named for a secret, any value.
	rule("", false, `(?:^|[^A-Za-z0-9])[A-Z_]*(?:PASS|PASSWORD|PASSWD|PWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Z0-9_]*=("[^"$]+"|'[^']+'|[^\s"'$;&|(),]+)[ \t]+[A-Za-z.]`),
}

// secretKeyRE is a key named for a secret: secret, password, pwd, api
// key, access key, auth token, private key, token (with any suffix), or
// pass as a word of its own (DB_PASS, smtp.pass; not bypass or compass).
const secretKeyRE = `(?:(?:secret|passw(?:or)?d|pwd|api[_\-]?key|access[_\-]?key|auth[_\-]?token|private[_\-]?key|token)[A-Za-z0-9_.\-]*|(?:^|[^A-Za-z])pass(?:[_.\-][A-Za-z0-9_.\-]*)?)`

// secretWords are the key names assignPatterns look for (lower case).
var secretWords = []string{"secret", "pass", "pwd", "key", "token"}

const Mark = "[REDACTED secret]"

// Redact redacts a whole text (see LineRedactor).
func Redact(s string) string {
	var r LineRedactor
	return r.Text(s)
}

// LineRedactor redacts text fed to it from its start, keeping every
// newline. It remembers whether it is inside a private key block, so a
// window that starts inside one (after observe has seen the lines before
// it) never shows the block's body.
type LineRedactor struct{ inKey bool }

var (
	keyBeginRE = lazyre.New(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
	keyEndRE   = lazyre.New(`-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
)

// Observe updates the key-block state for a line that is not shown (the
// lines before a read_file offset).
func (r *LineRedactor) Observe(line string) {
	if r.inKey {
		if keyEndRE().MatchString(line) {
			r.inKey = false
		}
		return
	}
	if strings.Contains(line, "PRIVATE KEY") {
		if loc := keyBeginRE().FindStringIndex(line); loc != nil && !keyEndRE().MatchString(line[loc[1]:]) {
			r.inKey = true
		}
	}
}

// Text redacts a run of lines that follows what the redactor has seen.
func (r *LineRedactor) Text(s string) string {
	if r.inKey || strings.Contains(s, "PRIVATE KEY") {
		s = r.keyBlocks(s)
	}
	return redactKnown(redactTokens(s))
}

// keyBlocks replaces each line of a private key block (BEGIN to END) with
// the marker.
func (r *LineRedactor) keyBlocks(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for s != "" {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i+1], s[i+1:]
		} else {
			s = ""
		}
		body, nl := strings.CutSuffix(line, "\n")
		eol := ""
		if nl {
			eol = "\n"
		}
		switch {
		case r.inKey:
			if loc := keyEndRE().FindStringIndex(body); loc != nil {
				r.inKey = false
				b.WriteString(Mark + body[loc[1]:] + eol)
			} else {
				b.WriteString(Mark + eol)
			}
		case strings.Contains(body, "PRIVATE KEY"):
			loc := keyBeginRE().FindStringIndex(body)
			if loc == nil {
				b.WriteString(line)
				continue
			}
			rest := body[loc[1]:]
			if end := keyEndRE().FindStringIndex(rest); end != nil {
				b.WriteString(body[:loc[0]] + Mark + rest[end[1]:] + eol)
			} else {
				r.inKey = true
				b.WriteString(body[:loc[0]] + Mark + eol)
			}
		default:
			b.WriteString(line)
		}
	}
	return b.String()
}

// redactTokens applies secretPatterns to the whole text and assignPatterns
// to the lines that may hold an assignment.
func redactTokens(s string) string {
	for _, r := range secretPatterns {
		if r.hint.IndexString(s, 0) >= 0 {
			s = r.replace(s)
		}
	}
	lines := assignmentLines(s)
	if len(lines) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, start := range lines {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		line := s[start:end]
		if !secretKeyBefore(line) {
			continue
		}
		red := line
		for _, r := range assignPatterns {
			red = r.replace(red)
		}
		if red == line {
			continue
		}
		b.WriteString(s[prev:start])
		b.WriteString(red)
		prev = end
	}
	if prev == 0 {
		return s
	}
	b.WriteString(s[prev:])
	return b.String()
}

// secretWordForms are the spellings of secretWords searched for (a fast
// substring search per spelling beats folding every byte).
var secretWordForms = func() []*match.Literal {
	var out []*match.Literal
	for _, w := range secretWords {
		out = append(out, match.NewLiteral(w), match.NewLiteral(strings.ToUpper(w)), match.NewLiteral(strings.ToUpper(w[:1])+w[1:]))
	}
	return out
}()

// assignmentLines returns, in order, the start offsets of the lines that
// hold a secret word.
func assignmentLines(s string) []int {
	var starts []int
	for _, w := range secretWordForms {
		for pos := 0; ; {
			at := w.IndexString(s, pos)
			if at < 0 {
				break
			}
			ls := strings.LastIndexByte(s[:at], '\n') + 1
			starts = append(starts, ls)
			next := strings.IndexByte(s[at:], '\n')
			if next < 0 {
				break
			}
			pos = at + next + 1
		}
	}
	slices.Sort(starts)
	return slices.Compact(starts)
}

// replace redacts every match of the rule in s.
func (r tokenRule) replace(s string) string {
	locs := r.re().FindAllStringSubmatchIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	prev := 0
	for _, loc := range locs {
		if r.wordStart && loc[0] > 0 && isWordByte(s[loc[0]-1]) {
			continue
		}
		from, to := loc[0], loc[1]
		if n := len(loc) / 2; n > 1 && loc[2*(n-1)] >= 0 {
			from, to = loc[2*(n-1)], loc[2*(n-1)+1]
		}
		if strings.Contains(s[from:to], "REDACTED") {
			continue
		}
		b.WriteString(s[prev:from])
		b.WriteString(Mark)
		prev = to
	}
	if prev == 0 {
		return s
	}
	b.WriteString(s[prev:])
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// secretKeyBefore reports whether a line has a secret word before one of
// its ':' or '=' (the only lines assignPatterns can match).
func secretKeyBefore(line string) bool {
	i := strings.IndexAny(line, ":=")
	if i < 0 {
		return false
	}
	last := strings.LastIndexAny(line, ":=")
	return containsAnyFold(line[:last], secretWords)
}

// replyPartialMax bounds the line a reply redactor passes on before its
// end (each piece redacts the line so far again; a longer line waits for
// its newline).
const replyPartialMax = 2 << 10

// ReplyRedactor passes a streamed reply on redacted as whole lines are:
// a line goes out as it arrives only up to its last space, the line so far
// redacted whole (the last word, which may be a secret still arriving, is
// held); a line that names a secret (a key word, a URL's credentials, a
// private key block) is held to its newline, where a value may still be
// quoted or end it. flush sends what is held when the reply ends.
type ReplyRedactor struct {
	out     io.Writer
	red     LineRedactor
	line    []byte // the current line as the model wrote it
	sent    int    // bytes of its redacted form passed on
	midLine bool   // what went out last ended mid-line
}

// NewReplyRedactor passes a reply on to out.
func NewReplyRedactor(out io.Writer) *ReplyRedactor { return &ReplyRedactor{out: out} }

func (r *ReplyRedactor) Write(p []byte) (int, error) {
	r.line = append(r.line, p...)
	for {
		i := bytes.IndexByte(r.line, '\n')
		if i < 0 {
			break
		}
		if err := r.pass(r.red.Text(string(r.line[:i+1]))); err != nil {
			return 0, err
		}
		r.line = append(r.line[:0], r.line[i+1:]...)
		r.sent = 0
	}
	if len(r.line) == 0 || len(r.line) > replyPartialMax || r.red.inKey || namesSecret(r.line) {
		return len(p), nil
	}
	raw := string(r.line)
	cut := strings.LastIndexAny(raw, " \t") + 1
	if !mayStartSecret(raw[cut:]) && !mayBeKnown(raw[cut:]) {
		cut = len(raw) // the last word cannot become a secret: it goes out too
	}
	// The line up to a blank is final: no rule on a line that names no
	// secret reaches across one. A word that may still grow into a secret
	// (or out of one: ghp_… followed by _) waits for the blank after it.
	if red := redactKnown(redactTokens(raw[:cut])); len(red) > r.sent {
		if err := r.pass(red); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// pass writes what of red (the redacted line so far) was not passed yet.
func (r *ReplyRedactor) pass(red string) error {
	rest := ""
	if r.sent < len(red) {
		rest = red[r.sent:]
	}
	r.sent = len(red)
	if rest == "" {
		return nil
	}
	r.midLine = !strings.HasSuffix(rest, "\n")
	_, err := io.WriteString(r.out, rest)
	return err
}

// EndLine passes on what is held and ends the line it leaves open: what
// the tools show next starts on a line of its own.
func (r *ReplyRedactor) EndLine() {
	r.Flush()
	if r.midLine {
		io.WriteString(r.out, "\n")
		r.midLine = false
	}
}

// Flush passes on the held end of the reply.
func (r *ReplyRedactor) Flush() {
	if len(r.line) > 0 {
		r.pass(r.red.Text(string(r.line)))
		r.line, r.sent = r.line[:0], 0
	}
}

// namesSecret reports a line the redaction may still change as it goes
// on, past a blank: it names a secret's key (assignPatterns), a private
// key, or holds the literal of a rule that may start inside a word (an
// Authorization header, a bearer token, curl -u, mysql -p, --password, a
// URL's credentials): lineHolders, made from those rules.
func namesSecret(line []byte) bool {
	low := strings.ToLower(string(line))
	for _, w := range lineHolders() {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// lineHolders are what namesSecret looks for (lower case): the secret
// words, a private key's marks, and the literal of every rule that is not
// bound to a word's start.
var lineHolders = sync.OnceValue(func() []string {
	hs := append([]string{"credential", "auth", "private key", "-----"}, secretWords...)
	for _, r := range secretPatterns {
		if !r.wordStart && r.lit != "" {
			hs = append(hs, strings.ToLower(r.lit))
		}
	}
	return hs
})

// matchStarts are the literal texts secretPatterns' matches begin with
// ("do" for do[opr]_v1_…, "https://hooks.slack.com/" for a Slack hook):
// where a rule hides its whole match, the stream holds a word from there.
var matchStarts = sync.OnceValue(func() []string {
	starts := make([]string, len(secretPatterns))
	for i, r := range secretPatterns {
		starts[i], _ = r.re().LiteralPrefix()
	}
	return starts
})

// keyBeginLit starts a private key block (keyBeginRE), wherever it is.
const keyBeginLit = "-----BEGIN "

// mayStartSecret reports whether the end of a line could still grow into
// a secret of a known shape: a rule's literal (its search hint, or the
// text its matches start with) is in it where a match may start, or the
// line ends with the literal's beginning; or a private key block may
// start.
func mayStartSecret(tail string) bool {
	if mayGrowInto(tail, keyBeginLit, false) {
		return true
	}
	starts := matchStarts()
	for j, r := range secretPatterns {
		if mayGrowInto(tail, r.lit, r.wordStart) || mayGrowInto(tail, starts[j], r.wordStart) {
			return true
		}
	}
	return false
}

// mayGrowInto reports whether lit occurs in tail, or tail ends with its
// beginning, at a place where a match may start (with wordStart, not
// right after a letter, digit or _). It searches for lit, so a long word
// costs a scan per literal, not a comparison per byte.
func mayGrowInto(tail, lit string, wordStart bool) bool {
	if lit == "" {
		return false
	}
	starts := func(i int) bool { return !wordStart || i == 0 || !isWordByte(tail[i-1]) }
	for off := 0; off < len(tail); {
		j := strings.Index(tail[off:], lit)
		if j < 0 {
			break
		}
		if starts(off + j) {
			return true
		}
		off += j + 1
	}
	for k := min(len(lit)-1, len(tail)); k > 0; k-- {
		if strings.HasSuffix(tail, lit[:k]) && starts(len(tail)-k) {
			return true
		}
	}
	return false
}

// known are secrets Harvey holds itself (an MCP server's OAuth tokens):
// wherever one appears, it is redacted, whatever its shape.
var known struct {
	sync.RWMutex
	list []string
}

// Known adds secrets the redactor hides by value (shorter than 8
// bytes: ignored).
func Known(ss ...string) {
	known.Lock()
	defer known.Unlock()
	for _, s := range ss {
		if len(s) >= 8 && !slices.Contains(known.list, s) {
			known.list = append(known.list, s)
		}
	}
}

// redactKnown hides the known secrets in s.
func redactKnown(s string) string {
	known.RLock()
	defer known.RUnlock()
	for _, k := range known.list {
		if strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, Mark)
		}
	}
	return s
}

// mayBeKnown reports whether tail may be the start of a known secret (or
// holds one).
func mayBeKnown(tail string) bool {
	known.RLock()
	defer known.RUnlock()
	for _, k := range known.list {
		if mayGrowInto(tail, k, false) {
			return true
		}
	}
	return false
}
