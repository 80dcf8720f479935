// Package secrets is the one definition of what is secret: the
// sensitive-file denylist every tool, search, git and the sandbox's view
// apply to a path (FileDenied; GitExcludes, the same tables as git
// pathspecs), and the redaction every tool result, command output, reply,
// recording and log line passes through (Redact, RedactWindow, the
// LineRedactor for a text read from its start, the ReplyRedactor for a
// streamed reply, Known for the values Harvey was given: tokens, client
// secrets), and the environment every child process inherits (Environ:
// an allowlist, less what looks secret, URLs without their credentials).
// It knows nothing of a workspace, a model or a session.
package secrets

import (
	"maps"
	"slices"
	"strings"
)

// Sensitive-file denylist (security.md §6). Matched case-insensitively on
// every component name and on the path relative to the workspace, after the
// names are folded by NormName (trailing dots/spaces and ":stream" dropped).

var (
	deniedExact = setOf(
		".env", ".envrc", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass", ".my.cnf",
		".git-credentials", ".gitconfig", ".dockercfg", "known_hosts", "authorized_keys",
		".htpasswd", ".s3cfg", ".bash_history", ".zsh_history", ".psql_history",
		".mysql_history", ".python_history", ".node_repl_history", ".yarnrc", ".yarnrc.yml",
		".vault-token", ".boto", ".terraformrc", "terraform.rc", "auth.json", ".dockerconfigjson",
		".pg_service.conf", ".cargo-credentials", "htpasswd",
		// Credential stores real tools keep (issue 75): Claude Code's OAuth
		// token and account, Gemini CLI's, Ivy's, rclone's remotes, npm's rc
		// without its dot ($XDG_CONFIG_HOME/npm/npmrc), pip's index
		// credentials, Maven's master password.
		".credentials.json", ".credentials", ".claude.json", "oauth_creds.json", "rclone.conf", "npmrc",
		"pip.conf", "settings-security.xml",
	)
	deniedPrefix = []string{
		"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials", "terraform.tfstate", ".yarnrc",
		"kubeconfig", "deploy_key",
	}
	deniedSuffix = []string{
		".pem", ".key", ".p12", ".pfx", ".pkcs12", ".jks", ".keystore", ".asc", ".gpg",
		".ppk", ".ovpn", ".kdbx", ".keychain", ".tfvars", "_rsa", "_dsa", "_ecdsa", "_ed25519",
		".env", "-key.json", "_key.json",
	}
	// Directories whose whole content is secret.
	deniedDirs = setOf(".ssh", ".aws", ".azure", ".gnupg", ".password-store")
	// Relative-path suffixes (matched on the last components). Each
	// contains one of pathSuffixHints (FileDenied relies on it).
	deniedPathSuffix = []string{
		".kube/config", ".docker/config.json", ".git/config", ".git/config.worktree", ".config/gcloud",
		".config/gh/hosts.yml", ".m2/settings.xml", ".gradle/gradle.properties", ".cargo/credentials",
		// Tokens under ~/.config as their tools' docs place them: hub, glab,
		// Nix's access-tokens, pnpm's rc, sops and age keys, GitHub
		// Copilot, doctl, 1Password, Hetzner, configstore (firebase-tools and
		// other npm CLIs), Netlify, Stripe, Gitea's tea, Cachix, rclone,
		// Bitwarden; fly.io's and Cloudflare wrangler's configs; GNOME's
		// keyrings.
		".config/hub", ".config/glab-cli", ".config/nix/nix.conf", ".config/pnpm/rc", ".config/sops", ".config/age",
		".config/github-copilot", ".config/doctl", ".config/op", ".config/hcloud", ".config/configstore",
		".config/netlify", ".config/stripe", ".config/tea", ".config/cachix", ".config/rclone", ".config/bitwarden cli",
		".fly/config.yml", ".wrangler/config", ".local/share/keyrings",
	}
	pathSuffixHints = []string{"config", "settings", "hosts", "gradle", "credentials", "keyrings"}
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

// GitExcludes turns the denylist above into git pathspec excludes
// (case-insensitive globs), so git never prints a denied file: generated
// from the same tables, never a second list. git cannot express the
// template exception (.env.example), so those are left out of git output
// too.
func GitExcludes() []string {
	ex := func(glob string) string { return ":(exclude,icase,glob)" + glob }
	var out []string
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

// FileDenied reports whether the clean relative path rel names a file
// that tools must never read or write (keys, env files, credentials).
func FileDenied(rel string) bool {
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
		last = NormName(c)
		if deniedDirs[last] {
			return true
		}
	}
	if last == "" {
		return false
	}
	// Every path suffix in the list holds one of the hints (checked first,
	// without allocating: search asks this for every file).
	if strings.IndexByte(rel, '/') >= 0 && containsAnyFold(rel, pathSuffixHints) {
		comps := strings.Split(rel, "/")
		norm := make([]string, len(comps))
		for i, c := range comps {
			norm[i] = NormName(c)
		}
		joined := strings.Join(norm, "/")
		for _, suf := range deniedPathSuffix {
			if joined == suf || strings.HasSuffix(joined, "/"+suf) || strings.Contains(joined+"/", "/"+suf+"/") || strings.HasPrefix(joined, suf+"/") {
				return true
			}
		}
		// Any config under .git/ (submodules keep theirs in
		// .git/modules/NAME/config, where CI checkouts store credentials).
		if (last == "config" || last == "config.worktree") && (norm[0] == ".git" || strings.Contains(joined, "/.git/")) {
			return true
		}
	}
	return sensitiveName(last)
}

// containsAnyFold reports whether s contains one of the lower-case words,
// ignoring ASCII case, without allocating.
func containsAnyFold(s string, words []string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		for _, w := range words {
			if w[0] == c && i+len(w) <= len(s) && strings.EqualFold(s[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
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

// NormName folds a path component the way case-insensitive file systems and
// Windows compare names: lower case, trailing dots and spaces dropped,
// anything after ':' (alternate data streams) dropped. Every rule on names
// (this denylist, agents/, .git) compares folded names.
func NormName(c string) string {
	if i := strings.IndexByte(c, ':'); i >= 0 {
		c = c[:i]
	}
	c = strings.TrimRight(c, ". ")
	return strings.ToLower(c)
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
