package harvey

import (
	"regexp"
	"strings"
	"unicode"
)

// Sensitive-file denylist (security.md §6). Matched case-insensitively on
// every component name and on the path relative to the workspace, after the
// names are folded by normName (trailing dots/spaces and ":stream" dropped).

var (
	deniedExact = setOf(
		".env", ".envrc", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass", ".my.cnf",
		".git-credentials", ".gitconfig", ".dockercfg", "known_hosts", "authorized_keys",
		".htpasswd", ".s3cfg", ".bash_history", ".zsh_history", ".psql_history",
		".mysql_history", ".python_history", ".node_repl_history", ".yarnrc", ".yarnrc.yml",
	)
	deniedPrefix = []string{
		"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials", "terraform.tfstate", ".yarnrc",
	}
	deniedSuffix = []string{
		".pem", ".key", ".p12", ".pfx", ".pkcs12", ".jks", ".keystore", ".asc", ".gpg",
		".ppk", ".ovpn", ".kdbx", ".keychain", ".tfvars", "_rsa", "_dsa", "_ecdsa", "_ed25519",
	}
	// Directories whose whole content is secret.
	deniedDirs = setOf(".ssh", ".aws", ".azure", ".gnupg")
	// Relative-path suffixes (matched on the last components). Each
	// contains "config" (sensitiveFileDenied relies on it).
	deniedPathSuffix = []string{
		".kube/config", ".docker/config.json", ".git/config", ".config/gcloud",
	}
	// .env.* files that are templates and may be read.
	envTemplates = setOf(".env.example", ".env.sample", ".env.template", ".env.dist", ".env.defaults")
	secretsExt   = setOf("yml", "yaml", "json", "toml", "ini", "env", "txt", "conf", "properties", "xml")
)

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// gitDenylistPathspecs turns the denylist above into git pathspec excludes
// (case-insensitive globs), so git never prints a denied file: generated
// from the same tables, never a second list. git cannot express the
// template exception (.env.example), so those are left out of git output
// too; agents/ is excluded at the top.
func gitDenylistPathspecs() []string {
	ex := func(glob string) string { return ":(exclude,icase,glob)" + glob }
	out := []string{":(exclude,icase)" + AgentsDir}
	for _, n := range sortedKeys(deniedExact) {
		out = append(out, ex("**/"+n))
	}
	for _, p := range deniedPrefix {
		out = append(out, ex("**/"+p+"*"))
	}
	for _, s := range deniedSuffix {
		out = append(out, ex("**/*"+s))
	}
	for _, d := range sortedKeys(deniedDirs) {
		out = append(out, ex("**/"+d+"/**"))
	}
	for _, p := range deniedPathSuffix {
		out = append(out, ex("**/"+p), ex("**/"+p+"/**"))
	}
	out = append(out, ex("**/.env.*"), ex("**/*service-account*.json"))
	for _, e := range sortedKeys(secretsExt) {
		out = append(out, ex("**/secrets."+e))
	}
	return out
}

// sensitiveFileDenied reports whether the clean relative path rel names a file
// that tools must never read or write (keys, env files, credentials).
func sensitiveFileDenied(rel string) bool {
	// Walk the components without allocating (search checks every file).
	last := ""
	for rest := rel; rest != ""; {
		c := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			c, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if c == "" || c == "." {
			continue
		}
		last = normName(c)
		if deniedDirs[last] {
			return true
		}
	}
	if last == "" {
		return false
	}
	// Every path suffix in the list ends in or contains "config".
	if strings.Contains(strings.ToLower(rel), "config") {
		comps := splitPath(rel)
		norm := make([]string, len(comps))
		for i, c := range comps {
			norm[i] = normName(c)
		}
		joined := strings.Join(norm, "/")
		for _, suf := range deniedPathSuffix {
			if joined == suf || strings.HasSuffix(joined, "/"+suf) || strings.Contains(joined+"/", "/"+suf+"/") || strings.HasPrefix(joined, suf+"/") {
				return true
			}
		}
	}
	return sensitiveName(last)
}

// sensitiveName applies the denylist to one folded file name.
func sensitiveName(base string) bool {
	if deniedExact[base] {
		return true
	}
	if strings.HasPrefix(base, ".env.") {
		return !envTemplates[base]
	}
	for _, p := range deniedPrefix {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	for _, s := range deniedSuffix {
		if strings.HasSuffix(base, s) {
			return true
		}
	}
	if strings.Contains(base, "service-account") && strings.HasSuffix(base, ".json") {
		return true
	}
	if strings.HasPrefix(base, "secrets.") && secretsExt[strings.TrimPrefix(base, "secrets.")] {
		return true
	}
	return false
}

// secretPatterns find secrets by content in any text a tool returns (file
// reads, command and git output, search hits). Matches are redacted.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`),
	regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}\b`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{30,}\b`),
	regexp.MustCompile(`\bsk-(ant-|proj-)?[A-Za-z0-9_\-]{20,}\b`),
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}\b`),
	regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}\b`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`),
	// user:password@ in URLs (git remotes, database URLs)
	regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]+:[^/\s@]+@`),
}

// redactSecrets replaces secret-looking content with a marker.
func redactSecrets(s string) string {
	if !mayHoldSecret(s) {
		return s
	}
	for i, re := range secretPatterns {
		if i == len(secretPatterns)-1 {
			s = re.ReplaceAllString(s, "${1}[REDACTED]@")
			continue
		}
		s = re.ReplaceAllString(s, "[REDACTED secret]")
	}
	return s
}

// mayHoldSecret is a cheap pre-filter so large clean outputs skip the regexps.
func mayHoldSecret(s string) bool {
	for _, k := range []string{"PRIVATE KEY", "AKIA", "ASIA", "gh", "github_pat_", "sk-", "xox", "glpat-", "AIza", "://"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// sanitizeForTerminal makes text safe to print: ANSI/OSC escape sequences and
// other control characters are shown escaped (an OSC 52 in a file cannot write
// the clipboard), and bidi overrides, zero-width and Unicode tag characters
// are made visible. Newlines and tabs are kept.
func sanitizeForTerminal(s string) string {
	clean := true
	for _, r := range s {
		if !safeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case safeRune(r):
			b.WriteRune(r)
		case r == 0x1b:
			b.WriteString("\\e")
		case r < 0x20 || r == 0x7f:
			b.WriteString("^" + string(rune(r^0x40)))
		default:
			b.WriteString("<U+" + strings.ToUpper(strings.TrimLeft(hex4(r), "0")) + ">")
		}
	}
	return b.String()
}

func safeRune(r rune) bool {
	if r == '\n' || r == '\t' {
		return true
	}
	if r < 0x20 || r == 0x7f {
		return false
	}
	if r < 0x80 {
		return true
	}
	return printableRune(r)
}

// printableRune rejects C1 controls, bidi controls, zero-width characters and
// tag characters; everything else printable passes.
func printableRune(r rune) bool {
	switch {
	case r >= 0x80 && r < 0xa0: // C1 controls (0x9b is a CSI)
		return false
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return false
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff:
		return false
	case r >= 0xe0000 && r <= 0xe007f:
		return false
	case r == 0xfffd:
		return true
	}
	return unicode.IsPrint(r) || unicode.IsSpace(r)
}

func hex4(r rune) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 6)
	for shift := 20; shift >= 0; shift -= 4 {
		out = append(out, digits[(r>>uint(shift))&0xf])
	}
	return string(out)
}
