package secrets

import (
	"path"
	"strings"

	"github.com/harvey-agent/harvey/internal/lazyre"
)

// envAllow lists variables (or prefixes ending in "_") a child may inherit.
var envAllow = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TEMP", "TMP", "LANG", "LC_", "TERM", "TZ", "OLLAMA_", "HARVEY_",
	"GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "CGO_ENABLED", "XDG_",
	// the toolchains' own settings: where they live and how they build
	"GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOTOOLCHAIN", "GOEXPERIMENT", "GOOS", "GOARCH", "GOAMD64", "GOARM", "GOWORK",
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "PYENV_ROOT", "PYENV_VERSION", "NVM_DIR", "VOLTA_HOME", "ASDF_DATA_DIR", "SDKMAN_DIR",
	"JAVA_HOME", "MAVEN_HOME", "GRADLE_USER_HOME", "VIRTUAL_ENV", "CC", "CXX", "PKG_CONFIG_PATH",
	"NPM_CONFIG_", "PIP_", "UV_", "CARGO_", "RUSTUP_", "PNPM_HOME", "BUN_INSTALL", "BUN_INSTALL_CACHE_DIR", "DENO_INSTALL", "DENO_DIR",
	"HOMEBREW_PREFIX", "HOMEBREW_CELLAR", "HOMEBREW_REPOSITORY", "HOMEBREW_CACHE", "CONDA_PKGS_DIRS", "CONDA_PREFIX", "CONDA_EXE",
	"YARN_CACHE_FOLDER"} // (names with TOKEN, _AUTH, PASSWORD... never pass)

// envDenyWords: a variable whose name contains one of these never passes.
var envDenyWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "_AUTH", "SESSION", "COOKIE", "DSN", "PRIVATE"}

// envDenyExact are capability sockets and credential pointers.
var envDenyExact = setOf("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "GOOGLE_APPLICATION_CREDENTIALS", "KUBECONFIG", "DATABASE_URL", "REDIS_URL", "OLLAMA_API_KEY")

// Environ is the environment a child process gets from env: the
// variables an allowlist names (the toolchains' settings among them), less
// any whose name looks secret (KEY, TOKEN, SECRET, PASSWORD, _AUTH, ...)
// or that carries a capability (SSH_AUTH_SOCK, KUBECONFIG, cloud
// credentials), with credentials cut out of the URLs the rest carry
// (GOPROXY=https://user:token@proxy passes as https://proxy). Every
// program Harvey starts gets it: commands, git, hooks' sandboxes, MCP
// servers' and credential commands' environments before what the user's
// config adds.
func Environ(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !envAllowed(name) {
			continue
		}
		out = append(out, stripURLCredentials(kv))
	}
	return out
}

// urlUserinfoRE finds the user:password@ (or token@) part of URLs.
var urlUserinfoRE = lazyre.New(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@,|]+@`)

// stripURLCredentials removes credentials embedded in URLs of an inherited
// variable (GOPROXY=https://user:token@proxy, OLLAMA_HOST=http://u:p@host):
// a child gets the URL, not the secret.
func stripURLCredentials(kv string) string {
	if !strings.Contains(kv, "@") || !strings.Contains(kv, "://") {
		return kv
	}
	return urlUserinfoRE().ReplaceAllString(kv, "$1")
}

// YourEnviron is your environment less what looks secret (the same
// rule as Environ's, without its allowlist), credentials cut out of URLs:
// what a hook of your own gets, so a variable that switches it on or
// configures it arrives, and a token does not.
func YourEnviron(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || envSecret(name) {
			continue
		}
		out = append(out, stripURLCredentials(kv))
	}
	return out
}

// Named is what env holds of the variables the user's own config names
// for commands (sandbox.env): a name, or a pattern (NODE_*, *_URL), matched
// as written. A variable that looks secret (DATABASE_URL, NPM_TOKEN)
// passes only when a pattern is its exact name: no glob lets a secret
// through by accident. URLs keep their credentials only when named
// exactly too.
func Named(env, patterns []string) []string {
	if len(patterns) == 0 {
		return nil
	}
	var out []string
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		exact, glob := false, false
		for _, p := range patterns {
			if p == name {
				exact = true
			} else if m, err := path.Match(p, name); err == nil && m {
				glob = true
			}
		}
		switch {
		case exact:
			out = append(out, kv)
		case glob && !envSecret(name):
			out = append(out, stripURLCredentials(kv))
		}
	}
	return out
}

// WithNamed is base with the variables Named finds in env added, each
// replacing base's of the same name.
func WithNamed(base, env, patterns []string) []string {
	named := Named(env, patterns)
	if len(named) == 0 {
		return base
	}
	have := map[string]bool{}
	for _, kv := range named {
		n, _, _ := strings.Cut(kv, "=")
		have[n] = true
	}
	out := make([]string, 0, len(base)+len(named))
	for _, kv := range base {
		if n, _, _ := strings.Cut(kv, "="); !have[n] {
			out = append(out, kv)
		}
	}
	return append(out, named...)
}

// envSecret reports whether a variable's name looks secret or names a
// capability: it never passes.
func envSecret(name string) bool {
	up := strings.ToUpper(name)
	if envDenyExact[up] || strings.HasPrefix(up, "AWS_") || strings.HasPrefix(up, "AZURE_") || strings.HasPrefix(up, "VAULT_") {
		return true
	}
	for _, w := range envDenyWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

func envAllowed(name string) bool {
	if envSecret(name) {
		return false
	}
	up := strings.ToUpper(name)
	for _, a := range envAllow {
		if up == a || (strings.HasSuffix(a, "_") && strings.HasPrefix(up, a)) {
			return true
		}
	}
	return false
}
