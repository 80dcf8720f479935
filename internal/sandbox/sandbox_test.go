package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain plays the launcher when the launcher's argv starts the test
// binary (Wrap names the running executable), and answers the namespace
// probe.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		done := coverLauncher()
		code := RunLauncher(os.Args[2:])
		done()
		os.Exit(code)
	}
	if code, ok := treeHelper(); ok {
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		os.Exit(0)
	}
	code := m.Run()
	RemoveTmp()
	os.Exit(code)
}

// run starts sh -c line through the launcher under spec and returns its
// combined output and whether it succeeded.
func run(t *testing.T, spec Spec, line string) (string, bool) {
	t.Helper()
	s := Available()
	spec.Argv = []string{"/bin/sh", "-c", line}
	spec.Env = []string{"PATH=/usr/bin:/bin"}
	argv := s.Wrap(&spec)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{}
	cmd.SysProcAttr = ProcAttr(spec)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// What the spec names is all there is: a write inside the writable tree
// lands, one outside it is refused and nothing appears there, a hidden
// directory is empty and read-only, and a file outside every tree does not
// exist for the command.
func TestLauncherConfines(t *testing.T) {
	s := Available()
	if !s.Enforced() {
		t.Skip("no sandbox here: " + s.Why)
	}
	ws, outside := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(ws, "agents"), 0o700)
	os.WriteFile(filepath.Join(ws, "agents", "secret"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(outside, "private"), []byte("p"), 0o600)
	spec := Spec{Dir: ws, Workspace: ws, RW: []string{ws}, RO: []string{"/usr", "/bin", "/lib", "/lib64", "/etc"},
		Hidden: []string{filepath.Join(ws, "agents")}}
	if out, ok := run(t, spec, "echo in > in.txt && cat in.txt"); !ok || !strings.Contains(out, "in") {
		t.Fatalf("a write in the workspace: %v %s", ok, out)
	}
	if out, ok := run(t, spec, "echo out > "+filepath.Join(outside, "out.txt")); ok {
		t.Fatalf("a write outside succeeded: %s", out)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Fatal("a file appeared outside the workspace")
	}
	if out, ok := run(t, spec, "cat "+filepath.Join(outside, "private")); ok || strings.Contains(out, "p") && !strings.Contains(out, "No such") {
		t.Fatalf("read outside: %v %s", ok, out)
	}
	if s.NS {
		if out, ok := run(t, spec, "ls -A agents; echo x > agents/new"); ok || strings.Contains(out, "secret") {
			t.Fatalf("agents/ not hidden and read-only: %v %s", ok, out)
		}
	}
}

// The launcher refuses what is not a spec.
func TestLauncherRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"not base64!"}, {"e30="}} { // e30= is {}: no argv
		if code := RunLauncher(args); code != 126 {
			t.Errorf("%q: exit %d", args, code)
		}
	}
}

// A cache inside a readable toolchain root (~/go/pkg/mod in ~/go) keeps
// its private layer: the command's write lands in the layer, the user's
// cache is unchanged. Where no layer can be mounted (here: an upper
// directory that does not exist) the cache is read-only, never the user's
// own cache written directly; without namespaces too.
func TestLauncherCacheInsideToolchainRoot(t *testing.T) {
	s := Available()
	if !s.Enforced() || !s.NS {
		t.Skip("no namespaces here")
	}
	ws, home, layers := t.TempDir(), t.TempDir(), t.TempDir()
	root := filepath.Join(home, "go")
	cache := filepath.Join(root, "pkg", "mod")
	os.MkdirAll(cache, 0o755)
	os.WriteFile(filepath.Join(cache, "dep.go"), []byte("real\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	upper, work := filepath.Join(layers, "upper"), filepath.Join(layers, "work")
	os.Mkdir(upper, 0o700)
	os.Mkdir(work, 0o700)
	base := Spec{Dir: ws, Workspace: ws, RW: []string{ws, cache}, RO: []string{"/usr", "/bin", "/lib", "/lib64", "/etc", root}}
	poison := "echo POISON > " + filepath.Join(cache, "dep.go") + "; cat " + filepath.Join(cache, "dep.go")
	spec := base
	spec.Overlays = []CacheLayer{{Lower: cache, Upper: upper, Work: work}}
	if out, ok := run(t, spec, poison); !ok || !strings.Contains(out, "POISON") {
		t.Fatalf("the command's own layer: %v %s", ok, out)
	}
	if b, _ := os.ReadFile(filepath.Join(cache, "dep.go")); string(b) != "real\n" {
		t.Fatalf("the user's cache inside a toolchain root was written: %q", b)
	}
	spec.Overlays = []CacheLayer{{Lower: cache, Upper: filepath.Join(layers, "missing", "upper"), Work: work}}
	if out, _ := run(t, spec, poison); !strings.Contains(out, "read-only") {
		t.Errorf("no layer: want a read-only cache and a line that says so: %s", out)
	}
	spec.NoNS = true
	spec.Overlays = []CacheLayer{{Lower: cache, Upper: upper, Work: work}}
	run(t, spec, poison)
	if b, _ := os.ReadFile(filepath.Join(cache, "dep.go")); string(b) != "real\n" {
		t.Fatalf("a cache was written directly: %q", b)
	}
}

// A pinned directory (.git) cannot be renamed, removed or replaced; what
// is inside it stays writable.
func TestLauncherPinnedDirectory(t *testing.T) {
	s := Available()
	if !s.Enforced() || !s.NS {
		t.Skip("no namespaces here")
	}
	ws := t.TempDir()
	git := filepath.Join(ws, ".git")
	os.Mkdir(git, 0o755)
	os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	spec := Spec{Dir: ws, Workspace: ws, RW: []string{ws}, RO: []string{"/usr", "/bin", "/lib", "/lib64", "/etc"}, Pinned: []string{git}}
	out, _ := run(t, spec, "mv .git .git~; rm -rf .git; mkdir -p .git; echo x > .git/new && echo inside-ok")
	if !strings.Contains(out, "inside-ok") {
		t.Errorf("writes inside .git: %s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git~")); err == nil {
		t.Fatalf(".git was renamed: %s", out)
	}
	if fi, err := os.Lstat(git); err != nil || !fi.IsDir() {
		t.Fatalf(".git was replaced: %v", err)
	}
}

// The one table has a value for every mode in every row, and "yes" only
// where the mode keeps the promise whole.
func TestModeTableComplete(t *testing.T) {
	for _, p := range Promises {
		for _, m := range Modes {
			if p.How[m] == "" {
				t.Errorf("%q: nothing said for %s", p.What, m)
			}
		}
	}
	if n := len(Lacks(ModeFull)); n != 0 {
		t.Errorf("full lacks %d promises", n)
	}
	if n := len(Lacks(ModeNone)); n != len(Promises) {
		t.Errorf("none keeps %d promises", len(Promises)-n)
	}
}

// docs/sandbox.md and SECURITY.md hold the table as Table writes it: one
// definition.
func TestModeTableInDocs(t *testing.T) {
	for _, doc := range []string{"docs/sandbox.md", "SECURITY.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), Table()) {
			t.Errorf("%s does not hold the mode table as internal/sandbox/modes.go writes it:\n%s", doc, Table())
		}
	}
}

// A layer below the cache (CacheLayer.Below: what Harvey fetched once for
// every workspace) shows under the user's cache, or alone where the cache
// does not exist yet; what the command writes goes to the workspace's layer
// and neither lower one changes.
func TestLauncherLayerBelowTheCache(t *testing.T) {
	s := Available()
	if !s.Enforced() || !s.NS {
		t.Skip("no namespaces here")
	}
	for _, made := range []bool{true, false} {
		ws, home, layers, below := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
		cache := filepath.Join(home, ".npm")
		if made {
			os.MkdirAll(cache, 0o755)
			os.WriteFile(filepath.Join(cache, "mine"), []byte("the user's\n"), 0o644)
		}
		os.WriteFile(filepath.Join(below, "shared"), []byte("fetched once\n"), 0o644)
		l := CacheLayer{Lower: cache, Upper: filepath.Join(layers, "upper"), Work: filepath.Join(layers, "work"), Empty: filepath.Join(layers, "empty"), Below: below}
		for _, d := range []string{l.Upper, l.Work, l.Empty} {
			os.Mkdir(d, 0o700)
		}
		spec := Spec{Dir: ws, Workspace: ws, RW: []string{ws, cache}, RO: []string{"/usr", "/bin", "/lib", "/lib64", "/etc"}, Overlays: []CacheLayer{l}}
		sh := filepath.Join(cache, "shared")
		out, ok := run(t, spec, "cat "+sh+"; echo changed > "+sh+"; cat "+sh+"; ls "+cache)
		if !ok || !strings.HasPrefix(out, "fetched once\nchanged\n") || strings.Contains(out, "mine") != made {
			t.Errorf("cache made %v: %v %q", made, ok, out)
		}
		if b, _ := os.ReadFile(filepath.Join(below, "shared")); string(b) != "fetched once\n" {
			t.Errorf("cache made %v: the layer below was written: %q", made, b)
		}
		if b, _ := os.ReadFile(filepath.Join(l.Upper, "shared")); string(b) != "changed\n" {
			t.Errorf("cache made %v: the write is not in the workspace's layer: %q", made, b)
		}
		if _, err := os.Stat(sh); err == nil {
			t.Errorf("cache made %v: the write reached the user's cache", made)
		}
	}
}

// The start line says what TCP commands have in Landlock-only mode: the
// session's loopback where it has one; none at all where the loopback is
// 127.0.0.1 alone (a minimal container's), and not restricted before ABI 4.
func TestLandlockOnlySummarySaysItsTCP(t *testing.T) {
	t.Setenv("HARVEY_TEST_LANDLOCK_ABI", "")
	s := &State{Landlock: 5, self: "/harvey", NSWhy: "no user namespaces", NSFix: "(fix)"}
	for _, c := range []struct {
		abi      int
		loopback bool
		want     string
	}{
		{5, true, "the session's loopback and the registry proxy through the launcher"},
		{5, false, "no TCP at all"},
		{3, true, "TCP not restricted"},
	} {
		s.Landlock = c.abi
		if got := s.Summary(c.loopback); !strings.Contains(got, "Landlock only") || !strings.Contains(got, c.want) {
			t.Errorf("ABI %d, loopback %v: %q, want %q in it", c.abi, c.loopback, got, c.want)
		}
	}
}
