package sandboxpolicy

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/gocache"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// The sandbox as Harvey uses it: what a command may use (sandbox_view.go
// and the gate's commandSandboxFor build the Spec), its environment, the
// status line, and which rule a failed command ran into and the setting
// that allows it. The launcher itself is internal/sandbox.

// StatusText says what holds on this machine: the mode's line, then
// each promise of the table (internal/sandbox/modes.go) as this mode
// keeps it.
func StatusText(policy config.SandboxPolicy) string {
	s := sandbox.Available()
	lines := []string{Line(policy)}
	m := s.Mode()
	for _, p := range sandbox.Promises {
		lines = append(lines, "  "+strings.ReplaceAll(p.What, "`", "")+": "+p.How[m])
	}
	if m == sandbox.ModeFull && s.Landlock < 4 {
		lines = append(lines, fmt.Sprintf("  (Landlock ABI %d: TCP is kept out by the network namespace alone)", s.Landlock))
	}
	if m == sandbox.ModeLandlock && s.Landlock < 4 {
		lines = append(lines, fmt.Sprintf("  NOTE: Landlock ABI %d cannot restrict TCP: the network is NOT restricted", s.Landlock))
	}
	return strings.Join(lines, "\n")
}

// Line is the one line that names the sandbox mode (the start line
// where it is less than full, /status, /security, --output's turn_start).
func Line(policy config.SandboxPolicy) string {
	s := sandbox.Available()
	if s.Mode() != sandbox.ModeNone {
		return s.Summary(SessionLoopback() != "")
	}
	if policy.Unsandboxed {
		return "sandbox: none (" + s.Why + "): commands run UNSANDBOXED, as your config allows (sandbox: {unsandboxed: true})"
	}
	return "sandbox: none (" + s.Why + "): commands, user tools, hooks and stdio MCP servers refuse; sandbox: {unsandboxed: true} in your own config runs them unsandboxed"
}

// ModeName is the mode's name, and "none, unsandboxed" where the user
// runs commands with no sandbox on purpose.
func ModeName(policy config.SandboxPolicy) string {
	m := string(sandbox.Available().Mode())
	if m == string(sandbox.ModeNone) && policy.Unsandboxed {
		m += ", unsandboxed"
	}
	return m
}

// JobWatch is how often a background job's check runs while it runs: where
// commands have no private root (Landlock only), .git and agents/ are
// writable to them, and a change must not stand until the job ends (issue
// 75); 0 elsewhere (the mounts keep them read-only).
func JobWatch() time.Duration {
	if sandbox.Available().Mode() == sandbox.ModeLandlock {
		return 500 * time.Millisecond
	}
	return 0
}

// NoSandboxRefusal refuses to start a program where there is no sandbox
// and the user's own config does not allow it unsandboxed (nil
// otherwise). Every program Harvey starts for the user or the model —
// run_command, ! and /run, user tools, stdio MCP servers — passes it.
func NoSandboxRefusal(policy config.SandboxPolicy) error {
	s := sandbox.Available()
	if s.Enforced() || policy.Unsandboxed {
		return nil
	}
	return refusal.Errorf("refused: no sandbox on this system (%s); commands run only sandboxed unless your own config sets sandbox: {unsandboxed: true}", s.Why)
}

// GitSpec is the sandbox for git: it reads the workspace and the private
// git directory and writes nothing.
func GitSpec(root, gitDir string) *sandbox.Spec {
	return &sandbox.Spec{Workspace: root, RO: append([]string{root, gitDir}, SystemTrees()...)}
}

// Paths lists what a command may write and read besides the
// workspace: the private TMPDIR and the user's declared paths (rw), the
// toolchain caches found in the environment (caches: writable, through an
// overlay where namespaces allow), and the system's trees (ro).
func Paths(user config.SandboxPolicy) (rw, caches, ro []string) {
	home, _ := os.UserHomeDir()
	add := func(list *[]string, p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(*list, p) {
			*list = append(*list, filepath.Clean(p))
		}
	}
	if t := sandbox.Available().Tmp; t != "" {
		add(&rw, t)
	}
	for _, p := range userCaches(home) {
		add(&caches, p)
	}
	for _, p := range user.Writable {
		add(&rw, datadir.ExpandHome(p, home))
	}
	for _, p := range SystemTrees() {
		add(&ro, p)
	}
	for _, p := range user.Readable {
		add(&ro, datadir.ExpandHome(p, home))
	}
	return rw, caches, ro
}

// SystemTrees are the system's directories every program may read (not
// /run or /var/lib: sockets, and containers' and services' secrets).
func SystemTrees() []string {
	out := []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys", "/nix", "/snap"}
	if g := os.Getenv("GOROOT"); g != "" && filepath.IsAbs(g) {
		out = append(out, filepath.Clean(g))
	}
	return out
}

// userCaches are the toolchain caches of this environment: the XDG cache
// (go-build, pip, uv, ...), Go's build and module caches, npm's, cargo's
// registry, Maven's and Gradle's. A cache that does not exist yet is not
// made in the user's home: with namespaces the command sees it as an empty
// private layer (CacheLayer.Empty), so the first build in a new home works
// and the home gains nothing; without them (Landlock only) each tool gets
// a private cache of its own (PrivateCaches) and these are read-only. One
// inside another (GOCACHE in ~/.cache) is left to the outer one.
func userCaches(home string) []string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" && home != "" {
		cache = filepath.Join(home, ".cache")
	}
	gomod := goModCache(home)
	list := append([]string{cache, os.Getenv("GOCACHE"), gomod, goSumdb(home)}, toolCaches(home)...)
	return outermost(list)
}

// goSumdb is where go get, go mod tidy and go install pkg@version keep
// what they learned of the checksum database: GOPATH's pkg/sumdb, beside
// the module cache (no variable moves it alone; GOMODCACHE does not).
// Without it a first go get fails, "open .../pkg/sumdb/sum.golang.org/latest".
func goSumdb(home string) string {
	if gp := os.Getenv("GOPATH"); gp != "" {
		return filepath.Join(strings.Split(gp, ":")[0], "pkg", "sumdb")
	}
	if home != "" {
		return filepath.Join(home, "go", "pkg", "sumdb")
	}
	return ""
}

// goModCache is Go's module cache: GOMODCACHE, else GOPATH's, else ~/go's.
func goModCache(home string) string {
	if p := os.Getenv("GOMODCACHE"); p != "" {
		return p
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		return filepath.Join(strings.Split(gp, ":")[0], "pkg", "mod")
	}
	if home != "" {
		return filepath.Join(home, "go", "pkg", "mod")
	}
	return ""
}

// toolCache is where a tool keeps what it downloads or builds: its
// default place in the home (or in the XDG data directory), the variable
// that moves it, and the programs whose presence on PATH means a command
// may fill it first (a cache not made yet gets an empty private layer).
type toolCache struct {
	env   string   // the variable naming the cache itself ("" none)
	home  string   // its place in the home when env is not set ("" none)
	data  string   // or its place in the XDG data directory
	tools []string // any of these on PATH: listed even before it exists
}

// toolCacheTable is the caches of the toolchains people use, besides the
// XDG cache (pip, uv, yarn 1, deno, go-build, pnpm's metadata, Homebrew
// and nix keep theirs in ~/.cache, which is one cache already) and Go's
// (userCaches). A cache inside a toolchain's own root (cargo's registry
// in ~/.cargo, bun's in ~/.bun) must be one, or the root carries it
// read-only.
var toolCacheTable = []toolCache{
	{env: "npm_config_cache", home: ".npm", tools: []string{"npm", "npx", "node"}},
	{env: "CARGO_HOME", home: ".cargo", tools: []string{"cargo"}}, // registry/ and git/ below it (toolCachePaths)
	{home: ".m2/repository", tools: []string{"mvn", "java"}},
	{home: ".m2/wrapper", tools: []string{"mvn", "java"}},
	{env: "GRADLE_USER_HOME", home: ".gradle", tools: []string{"gradle", "java"}}, // the whole Gradle home: its daemon's registry and native libraries too
	{env: "BUN_INSTALL_CACHE_DIR", home: ".bun/install/cache", tools: []string{"bun"}},
	{env: "DENO_DIR", tools: []string{"deno"}},
	{env: "PIP_CACHE_DIR", tools: []string{"pip", "pip3"}},
	{env: "UV_CACHE_DIR", tools: []string{"uv"}},
	{env: "npm_config_store_dir", data: "pnpm/store", tools: []string{"pnpm"}},
	{home: ".yarn/berry/cache", tools: []string{"yarn"}},
	{home: ".volta/cache", tools: []string{"volta"}},
	{env: "HOMEBREW_CACHE", tools: []string{"brew"}},
	{env: "CONDA_PKGS_DIRS", tools: []string{"conda", "mamba"}}, // else each conda root's pkgs/ (condaCaches)
}

// NpmCache is npm's cache in home ($npm_config_cache, else ~/.npm): the
// cache whose layer a shared npx package goes under (internal/npxshare).
func NpmCache(home string) string {
	if p := toolCachePaths(toolCacheTable[0], home); len(p) > 0 {
		return filepath.Clean(p[0])
	}
	return ""
}

// toolCaches are the caches of toolCacheTable in home: those that exist,
// and those of a tool on PATH.
func toolCaches(home string) []string {
	if home == "" {
		return nil
	}
	var list []string
	for _, c := range toolCacheTable {
		for _, p := range toolCachePaths(c, home) {
			if _, err := os.Stat(p); err == nil || slices.ContainsFunc(c.tools, onPath) {
				list = append(list, p)
			}
		}
	}
	return append(list, condaCaches()...)
}

// toolCachePaths is where c lies in home (a variable's list of
// directories, or cargo's caches under its home). Gradle's is its whole
// home: a build writes its daemon's registry, native libraries and
// temporary files there beside caches/ and wrapper/, and its
// gradle.properties (credentials) is masked as everywhere.
func toolCachePaths(c toolCache, home string) []string {
	var base []string
	switch v := os.Getenv(c.env); {
	case c.env != "" && v != "":
		base = filepath.SplitList(v)
	case c.home != "":
		base = []string{filepath.Join(home, c.home)}
	case c.data == "pnpm/store" && os.Getenv("PNPM_HOME") != "":
		base = []string{filepath.Join(os.Getenv("PNPM_HOME"), "store")} // pnpm's own default where it is set
	case c.data != "":
		data := os.Getenv("XDG_DATA_HOME")
		if data == "" {
			data = filepath.Join(home, ".local", "share")
		}
		base = []string{filepath.Join(data, c.data)}
	}
	var out []string
	for _, b := range base {
		switch c.env {
		case "CARGO_HOME":
			out = append(out, filepath.Join(b, "registry"), filepath.Join(b, "git"))
		default:
			out = append(out, b)
		}
	}
	return out
}

// onPath reports whether a program of that name is on Harvey's PATH (the
// one commands get). Every command's sandbox asks for every tool of
// toolCacheTable, so the answer is kept for the session, by PATH: a tool
// installed meanwhile has its cache seen from the next start (until then
// a first build of it fills no cache of its own).
func onPath(prog string) bool {
	key := os.Getenv("PATH") + "\x00" + prog
	if v, ok := onPathSeen.Load(key); ok {
		return v.(bool)
	}
	_, err := exec.LookPath(prog)
	onPathSeen.Store(key, err == nil)
	return err == nil
}

var onPathSeen sync.Map // PATH and program → on it

// condaCaches are the package caches of the conda installs on PATH
// (miniforge, miniconda, anaconda: ROOT/bin with ROOT/conda-meta): ROOT/pkgs,
// which conda install fills.
func condaCaches() []string {
	if os.Getenv("CONDA_PKGS_DIRS") != "" {
		return nil
	}
	path := os.Getenv("PATH")
	if v, ok := condaSeen.Load(path); ok {
		return v.([]string)
	}
	out := condaRoots(path)
	condaSeen.Store(path, out)
	return out
}

var condaSeen sync.Map // PATH → its conda caches

// condaRoots finds condaCaches' pkgs/ directories on path.
func condaRoots(path string) []string {
	var out []string
	for _, d := range filepath.SplitList(path) {
		if b := filepath.Base(d); !filepath.IsAbs(d) || b != "bin" && b != "condabin" {
			continue
		}
		root := filepath.Dir(filepath.Clean(d))
		if fi, err := os.Stat(filepath.Join(root, "conda-meta")); err == nil && fi.IsDir() && !slices.Contains(out, filepath.Join(root, "pkgs")) {
			out = append(out, filepath.Join(root, "pkgs"))
		}
	}
	return out
}

// outermost is the absolute paths of list, cleaned, less those inside
// another of them, each once.
func outermost(list []string) []string {
	var out []string
	for _, p := range list {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if !slices.ContainsFunc(list, func(q string) bool { return q != "" && q != p && sandbox.Under(p, []string{filepath.Clean(q)}) }) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Env points TMPDIR at the private directory, and the tools at
// the spec's private caches (Landlock only).
func Env(env []string, spec *sandbox.Spec) []string {
	env = sandboxTmpEnv(env)
	if spec == nil || len(spec.CacheEnv) == 0 {
		return env
	}
	set := map[string]bool{}
	for _, kv := range spec.CacheEnv {
		k, _, _ := strings.Cut(kv, "=")
		set[strings.ToUpper(k)] = true
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return set[strings.ToUpper(k)]
	})
	return append(out, spec.CacheEnv...)
}

// privateCacheVars are the settings that move each tool's cache, and the
// directory each gets in the workspace's private caches: the XDG cache
// (pip, uv, yarn 1, deno, Homebrew, pnpm's metadata), Go's build and
// module caches, npm's, bun's, deno's, Gradle's home, yarn's, uv's, pip's,
// pnpm's store, conda's packages, and cargo's whole home (its registry
// and git caches have no setting of their own: a crate the user has is
// fetched again, through the registry proxy; cargo still reads the user's
// ~/.cargo/config.toml for a workspace under the home, as it reads every
// parent directory's .cargo). Maven's stays the user's, read-only.
var privateCacheVars = [][2]string{{"XDG_CACHE_HOME", "xdg"}, {"GOCACHE", "go-build"}, {"GOMODCACHE", "go-mod"}, {"GOPATH", "gopath"}, {"CARGO_HOME", "cargo"},
	{"npm_config_cache", "npm"}, {"BUN_INSTALL_CACHE_DIR", "bun"}, {"DENO_DIR", "deno"}, {"GRADLE_USER_HOME", "gradle"},
	{"YARN_CACHE_FOLDER", "yarn"}, {"UV_CACHE_DIR", "uv"}, {"PIP_CACHE_DIR", "pip"}, {"npm_config_store_dir", "pnpm-store"},
	{"CONDA_PKGS_DIRS", "conda-pkgs"}}

// PrivateCaches are the variables and directories of the workspace's
// private caches where commands have no mount namespace (Landlock only;
// GOPATH too, for the checksum database's state, which only it moves):
// DATA/caches/HASH(workspace)/PURPOSE-landlock/NAME, writable by its
// commands alone; the user's own caches stay read-only. Go reads the
// user's module cache as a file:// proxy and fills its private one, so a
// build that needs a module the user has works offline; GOPROXY goes on to
// the user's proxy only where commands may reach the network.
func PrivateCaches(workspace, purpose string, network bool) (env, dirs []string) {
	data := datadir.Path()
	if data == "" {
		return nil, nil
	}
	base := filepath.Join(data, "caches", datadir.Key(workspace), purpose+"-landlock")
	for _, v := range privateCacheVars {
		d := filepath.Join(base, v[1])
		if os.MkdirAll(d, 0o700) != nil {
			continue
		}
		env = append(env, v[0]+"="+d)
	}
	if len(env) > 0 {
		dirs = append(dirs, base)
	}
	home, _ := os.UserHomeDir()
	proxy := "off"
	if network {
		proxy = os.Getenv("GOPROXY")
		if proxy == "" {
			proxy = "https://proxy.golang.org,direct"
		}
	}
	if dl := filepath.Join(goModCache(home), "cache", "download"); goModCache(home) != "" && dirExists(dl) {
		proxy = "file://" + dl + "," + proxy
	}
	return append(env, "GOPROXY="+proxy), dirs
}

// GoCacheProg is the go command's cache program for a command whose
// private caches are env's (internal/gocache: the private GOCACHE first,
// then yours, read-only), and the executable it runs, which the command
// must be able to read; "" where this executable does not serve it, you
// have no Go build cache, or a path holds a space (GOCACHEPROG is split at
// spaces).
func GoCacheProg(env []string) (prog, exe string) {
	private := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOCACHE="); ok {
			private = v
		}
	}
	yours := os.Getenv("GOCACHE")
	if yours == "" {
		if d, err := os.UserCacheDir(); err == nil {
			yours = filepath.Join(d, "go-build")
		}
	}
	exe, err := os.Executable()
	if !gocache.Served || err != nil || private == "" || !dirExists(yours) || strings.ContainsAny(exe+private+yours, " \t\n") {
		return "", ""
	}
	return strings.Join([]string{exe, gocache.Arg, private, yours}, " "), exe
}

// dirExists reports whether p is a directory.
func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// sandboxTmpEnv points TMPDIR at the private directory, and Java's
// build tools too (Java reads no TMPDIR: its java.io.tmpdir is /tmp,
// which commands may not write), after what the user's own options say.
func sandboxTmpEnv(env []string) []string {
	t := sandbox.Available().Tmp
	if t == "" {
		return env
	}
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "TMPDIR", "TMP", "TEMP":
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "TMPDIR="+t, "TMP="+t, "TEMP="+t)
	out = appendOpts(out, "MAVEN_OPTS", "-Djava.io.tmpdir="+t)
	out = appendOpts(out, "GRADLE_OPTS", "-Djava.io.tmpdir="+t)
	if g := commandGitConfig(); g != "" {
		out = append(slices.DeleteFunc(out, func(kv string) bool { return strings.HasPrefix(kv, "GIT_CONFIG_GLOBAL=") }), "GIT_CONFIG_GLOBAL="+g)
	}
	return out
}

// appendOpts adds opts after the options the variable name already holds
// in env (the last of a Java property wins).
func appendOpts(env []string, name, opts string) []string {
	i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	if i < 0 {
		return append(env, name+"="+opts)
	}
	env[i] = name + "=" + strings.TrimSpace(strings.TrimPrefix(env[i], name+"=")+" "+opts)
	return env
}

// containsAny reports whether s holds one of the words.
func containsAny(s string, words ...string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(s, w) })
}

// ResolvConfDir is where /etc/resolv.conf really lives when it links out
// of /etc (systemd-resolved's /run/systemd/resolve): commands allowed the
// network need it.
func ResolvConfDir() []string {
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !sandbox.Under(r, []string{"/etc"}) {
		return []string{filepath.Dir(r)}
	}
	return nil
}

// Rule names the rule that stopped a command.
type Rule int

const (
	RuleNone     Rule = iota
	RulePath          // a path outside what commands may read or write
	RuleReadOnly      // agents/ or .git/
	RuleNetwork       // a TCP connection
	RuleExec          // safe mode: a program not allowed to execute
)

// Blocked finds, in a failed command's output, the refusal the
// sandbox caused and says which rule in one line. The kernel's answer is
// EACCES/EPERM/EROFS; the path or socket in the message says which rule.
func Blocked(out string, exit int, spec *sandbox.Spec) (Rule, string) {
	if exit == 0 || spec == nil {
		return RuleNone, ""
	}
	for _, line := range strings.Split(out, "\n") {
		low := strings.ToLower(line)
		for _, rule := range []func(line, low string, spec *sandbox.Spec) (Rule, string){blockedLaunch, blockedMissing, blockedOffline, blockedNoProxy, blockedDenied} {
			if r, why := rule(line, low, spec); r != RuleNone {
				return r, why
			}
		}
	}
	return RuleNone, ""
}

// OutsidePath finds, in a program's output, a path outside what its
// sandbox lets it write that it tried to write or open (a read-only file
// system, a path that does not exist for it, a permission Landlock
// refused), whatever its exit status: a hook that logs and goes on exits
// 0. "" when there is none.
func OutsidePath(out string, spec *sandbox.Spec) string {
	if spec == nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		low := strings.ToLower(line)
		var p string
		switch {
		case strings.Contains(low, "read-only file system"):
			p = objectBefore(line, ": read-only file system")
		case containsAny(low, "permission denied", "operation not permitted"):
			p = deniedPath(line)
		default:
			p = missingPath(line)
		}
		if p == "" || !strings.ContainsRune(p, '/') {
			continue
		}
		if abs := filepath.Clean(fsinfo.AbsIn(spec.Dir, p)); !sandbox.Under(abs, spec.RW) && !sandbox.Under(abs, spec.ReadOnly) && !sandbox.Under(abs, spec.Hidden) {
			return abs
		}
	}
	return ""
}

// blockedLaunch: a read-only file system, or the launcher's own refusal
// to execute a program.
func blockedLaunch(line, low string, spec *sandbox.Spec) (Rule, string) {
	if strings.Contains(low, "read-only file system") {
		p := objectBefore(line, ": read-only file system")
		if abs := fsinfo.AbsIn(spec.Dir, p); p != "" && !sandbox.Under(abs, spec.ReadOnly) && !sandbox.Under(abs, spec.Hidden) && !sandbox.Under(abs, spec.Pinned) {
			return RulePath, "[sandbox: path outside: " + p + " may be read but not written by commands (sandbox.writable in your config adds a path)]"
		}
		return RuleReadOnly, "[sandbox: agents/ and .git/'s config and hooks are read-only to commands]"
	}
	if strings.Contains(low, "device or resource busy") && strings.Contains(line, ".git") {
		return RuleReadOnly, "[sandbox: .git itself and its config cannot be moved, replaced or rewritten by commands (commits, branches and stashes work); change git's configuration yourself, outside Harvey]"
	}
	if !strings.Contains(line, "harvey sandbox:") || !strings.Contains(line, "not allowed to execute") {
		return RuleNone, ""
	}
	if len(spec.Exec) == 0 {
		// Not safe mode: the program lies outside what commands may run.
		return RulePath, "[sandbox: path outside: " + spec.Argv[0] + " is outside what commands may read and run (the system, the workspace, and the toolchains your PATH leads to); sandbox.readable in your config adds its directory]"
	}
	return RuleExec, "[sandbox: not allowed to execute: in safe mode only allowed_commands run]"
}

// blockedMissing: a path that does not exist for commands (agents/, or
// anything outside the root the sandbox builds).
func blockedMissing(line, _ string, spec *sandbox.Spec) (Rule, string) {
	p := missingPath(line)
	if p == "" {
		return RuleNone, ""
	}
	abs := fsinfo.AbsIn(spec.Dir, p)
	switch {
	case sandbox.Under(abs, spec.Hidden):
		return RuleReadOnly, "[sandbox: agents/ is Harvey's own: commands see it empty and read-only]"
	case !spec.NoNS && !sandbox.Under(abs, spec.RW) && !sandbox.Under(abs, spec.RO):
		return RulePath, "[sandbox: path outside: " + p + " does not exist for commands (they see the workspace, TMPDIR, toolchains, caches and the system's directories; sandbox.readable or sandbox.writable in your config adds a path)]"
	}
	return RuleNone, ""
}

// blockedOffline: a network of its own (loopback, and the registry proxy)
// answers name lookups and outside connections as a machine offline does.
func blockedOffline(_, low string, spec *sandbox.Spec) (Rule, string) {
	if spec.Network || spec.NoNS && spec.Loopback == "" {
		return RuleNone, ""
	}
	if containsAny(low, "network is unreachable", "temporary failure in name resolution", "could not resolve", "no such host", "eai_again", "enotfound", "getaddrinfo", "name or service not known") {
		return RuleNetwork, "[sandbox: network: commands reach package registries only, through Harvey's proxy (HTTPS_PROXY is set for them); sandbox.hosts in your config adds a host, sandbox.network: true allows every connection]"
	}
	refused := containsAny(low, "connection refused", "couldn't connect to server", "econnrefused")
	if refused && spec.Session == "" && spec.Loopback == "" {
		return RuleNetwork, "[sandbox: network: a command's 127.0.0.1 is its own here (servers it starts are reachable, yours are not); sandbox.network: true in your config shares your machine's network]"
	}
	if refused {
		if f := forwardNamed(low, spec.Forwards); f != "" {
			// Listed already: the hint to list it would mislead (issue 76).
			return RuleNetwork, "[sandbox: network: your service " + f + " (sandbox.hosts) refused the connection: commands reach it at " + f + " only, so it must be running and listening there on your machine (not only on ::1 or a socket); a change to sandbox.hosts takes effect when Harvey starts again]"
		}
		return RuleNetwork, "[sandbox: network: commands share the session's 127.0.0.1, not your machine's (servers they start are reachable, yours are not); sandbox.hosts in your config adds a service of yours (127.0.0.1:5432), sandbox.network: true shares your machine's network]"
	}
	return RuleNone, ""
}

// forwardNamed is the service of yours among forwards (127.0.0.1:5432)
// whose port the refusal names ("": none).
func forwardNamed(low string, forwards []string) string {
	for _, f := range forwards {
		_, port, err := net.SplitHostPort(f)
		if err != nil {
			continue
		}
		for i := strings.Index(low, port); i >= 0; {
			end := i + len(port)
			if (i == 0 || !isDigit(low[i-1])) && (end == len(low) || !isDigit(low[end])) {
				return f
			}
			next := strings.Index(low[end:], port)
			if next < 0 {
				break
			}
			i = end + next
		}
	}
	return ""
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// blockedNoProxy: without namespaces and without the session's loopback
// the launcher keeps (a loopback that is 127.0.0.1 alone, a helper of
// Harvey's own) there is no registry proxy and Landlock refuses TCP, which tools word as EACCES: say so, and
// what gives the whole sandbox back.
func blockedNoProxy(_, low string, spec *sandbox.Spec) (Rule, string) {
	if !spec.NoNS || spec.Network || spec.Loopback != "" {
		return RuleNone, ""
	}
	if strings.Contains(low, "disabled by goproxy=off") {
		return RuleNetwork, "[sandbox: network: Landlock only here (no user namespaces), so Go's modules come from your own module cache alone and this one is not there; `harvey sandbox` says how to get the whole sandbox; sandbox.network: true in your config allows every connection]"
	}
	// Landlock refuses every TCP connection here: EACCES, as curl (cargo),
	// urllib3 (pip: "from versions: none" when it hears nothing) and others
	// word it.
	if containsAny(low, "connect", "connection") && containsAny(low, "permission denied", "eacces", "os error 13", "errno 13") ||
		containsAny(low, "could not connect to server", "failed to establish a new connection", "(from versions: none)") {
		return RuleNetwork, "[sandbox: network: Landlock only here (no user namespaces), so commands get no registry proxy and no TCP; `harvey sandbox` says why and how to get the whole sandbox; sandbox.network: true in your config allows every connection]"
	}
	return RuleNone, ""
}

// blockedDenied: the kernel's EACCES/EPERM, named by the socket or the
// path in the message.
func blockedDenied(line, low string, spec *sandbox.Spec) (Rule, string) {
	if !containsAny(low, "permission denied", "operation not permitted", "could not create local repository at ") {
		return RuleNone, ""
	}
	if !spec.Network && (strings.Contains(low, "connect") || strings.Contains(low, "/dev/tcp/") || strings.Contains(low, "socket") || strings.Contains(low, "bind")) {
		return RuleNetwork, "[sandbox: network: commands may not open TCP connections unless you allow it (sandbox: network: true in your config)]"
	}
	p := deniedPath(line)
	if p == "" {
		return RuleNone, ""
	}
	if !strings.ContainsRune(p, '/') && len(spec.Exec) > 0 {
		return RuleExec, "[sandbox: not allowed to execute: " + p + " (in safe mode only allowed_commands run)]"
	}
	abs := fsinfo.AbsIn(spec.Dir, p)
	switch {
	case sandbox.Under(abs, spec.ReadOnly):
		return RuleReadOnly, "[sandbox: agents/ and .git/'s config and hooks are read-only to commands]"
	case !sandbox.Under(abs, spec.RW) && sandbox.Under(abs, spec.RO):
		return RulePath, "[sandbox: path outside: " + p + " may be read but not written by commands (sandbox.writable in your config adds a path)]"
	case !sandbox.Under(abs, spec.RW):
		return RulePath, "[sandbox: path outside: " + p + " is outside what commands may use (the workspace, TMPDIR, toolchain caches, the system)]"
	case len(spec.Exec) > 0:
		return RuleExec, "[sandbox: not allowed to execute: in safe mode only allowed_commands run]"
	}
	return RuleNone, ""
}

// deniedPath is the object of "prog: OBJECT: Permission denied" (quotes
// and "cannot create" style verbs removed), or of Maven's "Could not
// create local repository at OBJECT" (it names no error).
func deniedPath(line string) string {
	if _, p, ok := strings.Cut(line, "Could not create local repository at "); ok {
		p, _, _ = strings.Cut(p, " -> ")
		return strings.TrimSpace(p)
	}
	return objectBefore(line, ": permission denied", ": operation not permitted")
}

// missingPath is the object of "prog: OBJECT: No such file or directory"
// (or a shell's "cannot create OBJECT: Directory nonexistent"): in a
// hidden directory, what the sandbox does not show.
func missingPath(line string) string {
	return objectBefore(line, ": no such file or directory", ": directory nonexistent")
}

// objectBefore is the path before the first of the (lower-case) endings
// found in line.
func objectBefore(line string, endings ...string) string {
	i := -1
	for _, e := range endings {
		if i = strings.LastIndex(strings.ToLower(line), e); i >= 0 {
			break
		}
	}
	if i < 0 {
		return ""
	}
	head := line[:i]
	if j := strings.LastIndex(head, ": "); j >= 0 {
		head = head[j+2:]
	}
	head = strings.TrimSpace(head)
	if f := strings.Fields(head); len(f) > 1 {
		head = f[len(f)-1]
	}
	return strings.Trim(head, "'\"`‘’")
}
