package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/gocache"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// fixtureHome is a home as installers leave it (a rustup-style cargo with
// a credential, a pyenv shim), made the process's home for the test.
func fixtureHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for p, body := range map[string]string{
		".cargo/bin/cargo":                 "#!/bin/sh\n",
		".cargo/credentials.toml":          "[registry]\ntoken = \"FIXTURE\"\n",
		".cargo/env":                       "export PATH\n",
		".pyenv/shims/python":              "#!/bin/sh\n",
		".local/bin/tool":                  "#!/bin/sh\n",
		".local/share/Trash/files/private": "x\n",
	} {
		p = filepath.Join(home, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"XDG_CACHE_HOME", "XDG_DATA_HOME", "GOPATH", "GOMODCACHE", "GOCACHE", "CARGO_HOME", "RUSTUP_HOME", "PYENV_ROOT", "npm_config_cache", "GRADLE_USER_HOME", "CONDA_PKGS_DIRS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	t.Setenv("PATH", strings.Join([]string{filepath.Join(home, ".cargo/bin"), filepath.Join(home, ".pyenv/shims"), filepath.Join(home, ".local/bin"), "/usr/bin", "/bin"}, ":"))
	return home
}

// The toolchains PATH leads to are readable, each by its root; never the
// home, ~/.local whole, or a system tree.
func TestToolchainRoots(t *testing.T) {
	home := fixtureHome(t)
	got := ToolchainRoots(os.Environ(), home)
	for _, want := range []string{".cargo", ".rustup", ".pyenv", ".local/bin", ".local/lib"} {
		if !slices.Contains(got, filepath.Join(home, want)) {
			t.Errorf("ToolchainRoots lacks ~/%s: %v", want, got)
		}
	}
	for _, p := range got {
		if p == home || p == filepath.Join(home, ".local") || p == filepath.Join(home, ".local/share") || sandbox.Under(p, []string{"/usr", "/bin"}) {
			t.Errorf("ToolchainRoots grants %s", p)
		}
	}
	// PATH=~/bin grants ~/bin's parent, the home: never.
	if got := ToolchainRoots([]string{"PATH=" + filepath.Join(home, "bin") + ":relative/bin"}, home); len(got) != 0 {
		t.Errorf("PATH=~/bin:relative/bin granted %v", got)
	}
}

// A credential file at a toolchain's root reads as empty; the toolchain's
// other files and trees outside the home are left alone.
func TestMaskedCredentials(t *testing.T) {
	home := fixtureHome(t)
	got := MaskedCredentials(home, []string{filepath.Join(home, ".cargo"), "/usr", home})
	if !slices.Equal(got, []string{filepath.Join(home, ".cargo/credentials.toml")}) {
		t.Errorf("MaskedCredentials = %v", got)
	}
}

// A command's spec: the workspace writable with agents/ hidden, the
// toolchains readable, the credential masked, the proxy the one way out;
// the user's network setting, a bare helper, safe mode and the services
// of sandbox.hosts each change what they say and nothing else.
func TestCommandSpec(t *testing.T) {
	home := fixtureHome(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
	policy := config.SandboxPolicy{Hosts: []string{"127.0.0.1:5432", "pypi.corp.example"}, Readable: []string{"~/notes"}}
	spec := CommandSpec(SpecFor{Root: root, Policy: policy, Purpose: "test"})
	if spec.RW[0] != root || spec.Workspace != root {
		t.Errorf("the workspace is not the first writable path: %v", spec.RW)
	}
	if !slices.Contains(spec.Hidden, filepath.Join(root, "agents")) {
		t.Errorf("agents/ not hidden: %v", spec.Hidden)
	}
	if !sandbox.Under(filepath.Join(root, ".git", "config"), spec.ReadOnly) || !slices.Contains(spec.Ensure, filepath.Join(root, ".git", "hooks")) {
		t.Errorf(".git's config and hooks: read-only %v, ensured %v", spec.ReadOnly, spec.Ensure)
	}
	for _, p := range []string{filepath.Join(home, ".cargo"), filepath.Join(home, "notes"), "/usr"} {
		if !slices.Contains(spec.RO, p) {
			t.Errorf("%s not readable: %v", p, spec.RO)
		}
	}
	if sandbox.Under(home, append(append([]string{}, spec.RW...), spec.RO...)) {
		t.Errorf("the whole home is reachable")
	}
	if !slices.Contains(spec.Masked, filepath.Join(home, ".cargo/credentials.toml")) {
		t.Errorf("cargo's credential not masked: %v", spec.Masked)
	}
	if spec.Network {
		t.Error("the network without the user's setting")
	}
	if spec.Proxy != "" && !slices.Contains(spec.RO, filepath.Dir(spec.Proxy)) {
		t.Errorf("the proxy's socket %s is not readable", spec.Proxy)
	}
	if !slices.Equal(spec.Forwards, []string{"127.0.0.1:5432"}) {
		t.Errorf("Forwards = %v, want the one local service", spec.Forwards)
	}
	if len(spec.Exec) != 0 {
		t.Errorf("Exec outside safe mode: %v", spec.Exec)
	}

	open := CommandSpec(SpecFor{Root: root, Policy: config.SandboxPolicy{Network: true}, Purpose: "test"})
	if !open.Network || open.Proxy != "" || len(open.Forwards) != 0 {
		t.Errorf("network: true: Network %v, Proxy %q, Forwards %v", open.Network, open.Proxy, open.Forwards)
	}
	bare := CommandSpec(SpecFor{Root: root, Policy: config.SandboxPolicy{Network: true}, Purpose: "test", Bare: true})
	if bare.Network || bare.Proxy != "" || len(bare.Overlays) != 0 || len(bare.CacheEnv) != 0 {
		t.Errorf("a bare helper got the network or caches: %+v", bare)
	}
	once := CommandSpec(SpecFor{Root: root, Purpose: "test", Network: true, Readable: []string{"/srv/transcript"}})
	if !once.Network || !slices.Contains(once.RO, "/srv/transcript") {
		t.Errorf("the user's yes: Network %v, RO %v", once.Network, once.RO)
	}

	safe := CommandSpec(SpecFor{Root: root, Purpose: "test", SafeMode: true, Allowed: []string{"sh", "no-such-program-here"}})
	sh, _ := LookPath("sh")
	if !slices.Contains(safe.Exec, sh) || slices.ContainsFunc(safe.Exec, func(p string) bool { return strings.Contains(p, "no-such") }) {
		t.Errorf("safe mode's programs: %v", safe.Exec)
	}
	none := CommandSpec(SpecFor{Root: root, Purpose: "test", SafeMode: true, Allowed: []string{"no-such-program-here"}})
	if !slices.Equal(none.Exec, []string{"/nonexistent"}) {
		t.Errorf("safe mode with nothing found runs %v", none.Exec)
	}
}

// A hook of the user's own reads what its command names, writes its own
// paths (not ~/.claude whole), and gets the network only when it says so.
func TestCommandSpecForAHook(t *testing.T) {
	home := fixtureHome(t)
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	script := filepath.Join(home, "hooks", "check.sh")
	os.MkdirAll(filepath.Dir(script), 0o755)
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	root := t.TempDir()
	spec := CommandSpec(SpecFor{Root: root, Purpose: "hook", Hook: &HookView{Home: home, Argv: []string{script}, Writable: []string{"~/.local/state/hooks"}, Network: true}})
	if !sandbox.Under(script, spec.RO) || !slices.Contains(spec.RW, filepath.Join(home, ".local/state/hooks")) || !spec.Network {
		t.Errorf("hook: RO %v RW %v Network %v", spec.RO, spec.RW, spec.Network)
	}
	if sandbox.Under(filepath.Join(home, ".claude"), append(spec.RO, spec.RW...)) {
		t.Errorf("the hook sees ~/.claude: RO %v RW %v", spec.RO, spec.RW)
	}
}

// What a command may use besides the workspace, in a home where nothing
// has run yet: the caches of the tools on PATH (even before they exist),
// the user's paths with ~ expanded, the system's trees; a cache inside
// another is the outer one's.
func TestPaths(t *testing.T) {
	home := fixtureHome(t)
	t.Setenv("GOCACHE", filepath.Join(home, ".cache", "go-build"))
	rw, caches, ro := Paths(config.SandboxPolicy{Writable: []string{"~/out"}, Readable: []string{"/srv/data", "relative"}})
	if !slices.Contains(rw, filepath.Join(home, "out")) {
		t.Errorf("rw = %v", rw)
	}
	for _, want := range []string{".cache", "go/pkg/mod", "go/pkg/sumdb", ".cargo/registry", ".cargo/git"} {
		if !slices.Contains(caches, filepath.Join(home, want)) {
			t.Errorf("caches lack ~/%s: %v", want, caches)
		}
	}
	if slices.Contains(caches, filepath.Join(home, ".cache", "go-build")) {
		t.Errorf("GOCACHE inside ~/.cache listed besides it: %v", caches)
	}
	if !slices.Contains(ro, "/usr") || !slices.Contains(ro, "/srv/data") || slices.Contains(ro, "relative") {
		t.Errorf("ro = %v", ro)
	}
	if slices.ContainsFunc(SystemTrees(), func(p string) bool { return p == "/run" || strings.HasPrefix(p, "/var") }) {
		t.Errorf("SystemTrees reaches /run or /var: %v", SystemTrees())
	}
	t.Setenv("GOPATH", filepath.Join(home, "gp")+":"+filepath.Join(home, "gp2"))
	if got := goModCache(home); got != filepath.Join(home, "gp", "pkg", "mod") {
		t.Errorf("goModCache with GOPATH = %s", got)
	}
	if got := goSumdb(home); got != filepath.Join(home, "gp", "pkg", "sumdb") {
		t.Errorf("goSumdb with GOPATH = %s", got)
	}
}

// npm's cache follows its variable; cargo's caches are its home's registry
// and git; pnpm's store follows PNPM_HOME or the XDG data directory; a
// conda install on PATH brings its pkgs/.
func TestToolCachePaths(t *testing.T) {
	home := fixtureHome(t)
	if got := NpmCache(home); got != filepath.Join(home, ".npm") {
		t.Errorf("NpmCache = %s", got)
	}
	t.Setenv("npm_config_cache", "/srv/npm-cache/")
	if got := NpmCache(home); got != "/srv/npm-cache" {
		t.Errorf("NpmCache with npm_config_cache = %s", got)
	}
	t.Setenv("CARGO_HOME", "/opt/cargo")
	cargo := slices.IndexFunc(toolCacheTable, func(c toolCache) bool { return c.env == "CARGO_HOME" })
	if got := toolCachePaths(toolCacheTable[cargo], home); !slices.Equal(got, []string{"/opt/cargo/registry", "/opt/cargo/git"}) {
		t.Errorf("cargo's caches = %v", got)
	}
	pnpm := slices.IndexFunc(toolCacheTable, func(c toolCache) bool { return c.data == "pnpm/store" })
	if got := toolCachePaths(toolCacheTable[pnpm], home); !slices.Equal(got, []string{filepath.Join(home, ".local/share/pnpm/store")}) {
		t.Errorf("pnpm's store = %v", got)
	}
	t.Setenv("PNPM_HOME", "/opt/pnpm")
	if got := toolCachePaths(toolCacheTable[pnpm], home); !slices.Equal(got, []string{"/opt/pnpm/store"}) {
		t.Errorf("pnpm's store with PNPM_HOME = %v", got)
	}
	conda := filepath.Join(home, "miniforge3")
	os.MkdirAll(filepath.Join(conda, "conda-meta"), 0o755)
	os.MkdirAll(filepath.Join(conda, "bin"), 0o755)
	if got := condaRoots(filepath.Join(conda, "bin") + ":/usr/bin:relative/bin"); !slices.Equal(got, []string{filepath.Join(conda, "pkgs")}) {
		t.Errorf("condaRoots = %v", got)
	}
}

// Where commands have no mount namespace each tool's cache is a private
// directory of the workspace's; Go reads the user's module cache as a
// proxy, and goes on to the network only where commands may reach it.
func TestPrivateCaches(t *testing.T) {
	home := fixtureHome(t)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	os.MkdirAll(filepath.Join(home, "go/pkg/mod/cache/download"), 0o755)
	t.Setenv("GOPROXY", "")
	env, dirs := PrivateCaches("/w", "run", false)
	if len(dirs) != 1 || !sandbox.Under(dirs[0], []string{filepath.Join(home, "data", "harvey", "caches")}) {
		t.Fatalf("dirs = %v", dirs)
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "CARGO_HOME", "npm_config_cache", "GRADLE_USER_HOME", "XDG_CACHE_HOME"} {
		if !sandbox.Under(vars[k], dirs) {
			t.Errorf("%s = %q, not in the private caches", k, vars[k])
		} else if fi, err := os.Stat(vars[k]); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v", k, err)
		}
	}
	if want := "file://" + filepath.Join(home, "go/pkg/mod/cache/download") + ",off"; vars["GOPROXY"] != want {
		t.Errorf("offline GOPROXY = %q, want %q", vars["GOPROXY"], want)
	}
	env, _ = PrivateCaches("/w", "run", true)
	if !slices.Contains(env, "GOPROXY=file://"+filepath.Join(home, "go/pkg/mod/cache/download")+",https://proxy.golang.org,direct") {
		t.Errorf("online GOPROXY: %v", env)
	}
	other, _ := PrivateCaches("/other", "run", false)
	if slices.Equal(env[:3], other[:3]) {
		t.Error("two workspaces share private caches")
	}
}

// Each cache gets a layer of the workspace's and the purpose's own; a
// layer that would lie inside a cache is not made.
func TestCacheOverlays(t *testing.T) {
	home := fixtureHome(t)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	cache := filepath.Join(home, ".cache")
	layers := CacheOverlays("/w", "run", []string{cache})
	if len(layers) != 1 || layers[0].Lower != cache || !sandbox.Under(layers[0].Upper, []string{filepath.Join(home, "data")}) || !dirExists(layers[0].Empty) {
		t.Fatalf("layers = %+v", layers)
	}
	if mcp := CacheOverlays("/w", "mcp-x", []string{cache}); mcp[0].Upper == layers[0].Upper {
		t.Error("a server shares the commands' layer")
	}
	if got := CacheOverlays("/w", "run", []string{filepath.Join(home, "data")}); len(got) != 0 {
		t.Errorf("a layer inside its own cache: %+v", got)
	}
}

// A command's environment: TMPDIR and Java's temporary directory are the
// private one, the spec's private caches replace the user's variables.
func TestEnv(t *testing.T) {
	spec := &sandbox.Spec{CacheEnv: []string{"GOCACHE=/private/go-build"}}
	got := Env([]string{"PATH=/usr/bin", "gocache=/mine", "GOCACHE=/mine", "TMPDIR=/tmp"}, spec)
	if !slices.Contains(got, "GOCACHE=/private/go-build") || slices.Contains(got, "GOCACHE=/mine") || slices.Contains(got, "gocache=/mine") {
		t.Errorf("Env = %v", got)
	}
	if tmp := sandbox.Available().Tmp; tmp != "" && (!slices.Contains(got, "TMPDIR="+tmp) || slices.Contains(got, "TMPDIR=/tmp")) {
		t.Errorf("TMPDIR not the private one: %v", got)
	}
	if got := Env([]string{"A=1"}, nil); !slices.Contains(got, "A=1") {
		t.Errorf("Env without a spec = %v", got)
	}
}

// git reads only the allowlisted keys of the user's config: identity and
// how files are written, never what runs a program or holds a credential.
func TestWriteGitKeys(t *testing.T) {
	var b strings.Builder
	writeGitKeys(&b, []byte("user.name\nAda \"Countess\"\x00credential.helper\n!echo pw\x00alias.st\n!touch x\x00core.hookspath\n/x\x00"+
		"url.https://t@github.com/.insteadof\nhttps://github.com/\x00color.ui\nauto\x00color.diff.meta\nblue\x00init.defaultBranch\ntrunk\x00"))
	got := b.String()
	for _, want := range []string{"[user]\n\tname = \"Ada \\\"Countess\\\"\"\n", "[color]\n\tui = \"auto\"\n", "[init]\n\tdefaultbranch = \"trunk\"\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
	for _, bad := range []string{"helper", "alias", "hookspath", "insteadof", "meta"} {
		if strings.Contains(got, bad) {
			t.Errorf("%s passed: %q", bad, got)
		}
	}
}

// A program's install tree: a node_modules/.bin link's project, a bin
// directory's parent; nothing for the system's programs.
func TestInstallTree(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(proj, "node_modules", ".bin"), 0o755)
	os.MkdirAll(filepath.Join(proj, "node_modules", "srv", "bin"), 0o755)
	os.WriteFile(filepath.Join(proj, "node_modules", "srv", "bin", "srv.js"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("../srv/bin/srv.js", filepath.Join(proj, "node_modules", ".bin", "srv"))
	got := InstallTree(filepath.Join(proj, "node_modules", ".bin", "srv"))
	if len(got) == 0 || !slices.Contains(got, proj) {
		t.Errorf("InstallTree(node_modules/.bin/srv) = %v", got)
	}
	if got := InstallTree("sh"); len(got) != 0 {
		t.Errorf("InstallTree(sh) = %v", got)
	}
	if got := InstallTree("no-such-program-here"); got != nil {
		t.Errorf("InstallTree(missing) = %v", got)
	}
}

// A name found only through a relative PATH entry is refused; a path is
// taken as it is; a missing program says so.
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.MkdirAll("bin", 0o755)
	os.WriteFile(filepath.Join("bin", "harvey-lp-fixture"), []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("PATH", "bin:/usr/bin:/bin")
	if _, err := LookPath("harvey-lp-fixture"); err == nil || !strings.Contains(err.Error(), "relative PATH entry") {
		t.Errorf("a program through a relative PATH entry: %v", err)
	}
	if p, err := LookPath("./bin/harvey-lp-fixture"); err != nil || p != "./bin/harvey-lp-fixture" {
		t.Errorf("./bin/harvey-lp-fixture: %q %v", p, err)
	}
	if _, err := LookPath("no-such-program-here"); err == nil || !strings.Contains(err.Error(), "command not found") {
		t.Errorf("missing: %v", err)
	}
	if p, err := LookPath("sh"); err != nil || !filepath.IsAbs(p) {
		t.Errorf("sh: %q %v", p, err)
	}
}

// The mode's lines: the start line first in /security's text, the refusal
// where there is no sandbox and the user has not opted out, git's spec
// reading the workspace and its git directory and writing nothing.
func TestModeLines(t *testing.T) {
	s := sandbox.Available()
	text := StatusText(config.SandboxPolicy{})
	if first, _, _ := strings.Cut(text, "\n"); first != Line(config.SandboxPolicy{}) {
		t.Errorf("StatusText starts %q, not the mode's line", first)
	}
	err := NoSandboxRefusal(config.SandboxPolicy{})
	if s.Enforced() != (err == nil) {
		t.Errorf("enforced %v, refusal %v", s.Enforced(), err)
	}
	if err != nil && !strings.Contains(err.Error(), "unsandboxed: true") {
		t.Errorf("the refusal names no setting: %v", err)
	}
	if NoSandboxRefusal(config.SandboxPolicy{Unsandboxed: true}) != nil {
		t.Error("refused although the user runs commands unsandboxed")
	}
	if m := ModeName(config.SandboxPolicy{Unsandboxed: true}); s.Mode() == sandbox.ModeNone && m != "none, unsandboxed" || s.Mode() != sandbox.ModeNone && m != string(s.Mode()) {
		t.Errorf("ModeName = %q in mode %s", m, s.Mode())
	}
	g := GitSpec("/w", "/d/git")
	if len(g.RW) != 0 || !slices.Contains(g.RO, "/w") || !slices.Contains(g.RO, "/d/git") || g.Network {
		t.Errorf("GitSpec = %+v", g)
	}
}

// Where commands have no layers (Landlock only), Go's build cache is the
// workspace's private one, and what it misses is read from yours through
// internal/gocache: GOCACHEPROG names this executable (readable to the
// command), the private cache and yours — never where a path has a space
// (GOCACHEPROG is split at spaces), nor where you have no Go build cache.
func TestGoCacheProgReadsYoursWritesThePrivate(t *testing.T) {
	yours := t.TempDir()
	t.Setenv("GOCACHE", yours)
	exe, _ := os.Executable()
	prog, ro := GoCacheProg([]string{"GOPATH=/p/gopath", "GOCACHE=/p/go-build"})
	if want := exe + " " + gocache.Arg + " /p/go-build " + yours; prog != want || ro != exe {
		t.Errorf("GOCACHEPROG %q (readable %q), want %q", prog, ro, want)
	}
	if prog, _ := GoCacheProg([]string{"GOCACHE=/p q/go-build"}); prog != "" {
		t.Errorf("a path with a space: %q", prog)
	}
	t.Setenv("GOCACHE", filepath.Join(yours, "none"))
	if prog, _ := GoCacheProg([]string{"GOCACHE=/p/go-build"}); prog != "" {
		t.Errorf("no cache of yours: %q", prog)
	}
}
