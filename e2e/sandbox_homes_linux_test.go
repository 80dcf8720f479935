// Feature: every home a real installer leaves works (issue 53). Each
// layout is a fresh home made as its installer leaves it (the tool's
// directories, its programs as stubs where the tool is not installed, its
// variables and PATH), run through the built binary in each kernel mode
// that runs commands: true, the tool's --version and a write to its cache
// (where the tool's own setting puts it) work, and the home itself, its
// caches included, is byte for byte as it was. In Landlock-only mode the
// cache write works where the tool has a setting Harvey points at a
// private cache, as the mode's row of the table says; elsewhere it is
// refused. CI runs this as root and as an ordinary account.
package e2e

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/kernelsim"
)

// homeCheck is one tool of a layout: the command that shows it runs, and
// where it keeps its cache (a shell word: its own setting, else its
// default).
type homeCheck struct {
	run      string
	cache    string
	landlock bool // the cache is private (writable) in Landlock-only mode
}

// homeLayout is a home as an installer leaves it.
type homeLayout struct {
	name   string
	files  map[string]string // path in the home → content ("#!..." files are executable)
	links  map[string]string // path in the home → target (HOME/ is the home, OUT/ a place beside it)
	outer  map[string]string // files beside the home (OUT/): a /nix store, say
	path   []string          // PATH entries before the system's (HOME/...)
	env    []string          // the installer's variables (HOME/...)
	checks []homeCheck
}

func stub(out string) string {
	return "#!/bin/sh\necho \"" + out + "\"\n"
}

const xdgCache = "${XDG_CACHE_HOME:-$HOME/.cache}"

// goSumdb is where go get keeps the checksum database's state (issue 62:
// go get failed in a home where it did not exist yet).
const goSumdb = "$(go env GOPATH 2>/dev/null || echo \"${GOPATH:-$HOME/go}\")/pkg/sumdb"

var homeLayouts = []homeLayout{
	{name: "empty", checks: []homeCheck{{"ls --version | head -1", xdgCache + "/probe-tool", true}}},
	{name: "rustup-fresh", files: map[string]string{
		".cargo/bin/cargo":      "#!/bin/sh\ncat \"${RUSTUP_HOME:-$HOME/.rustup}/settings.toml\" >/dev/null && echo 'cargo 1.95.0 (stub)'\n",
		".cargo/bin/rustup":     stub("rustup 1.28.2 (stub)"),
		".cargo/env":            "export PATH=\"$HOME/.cargo/bin:$PATH\"\n",
		".rustup/settings.toml": "default_toolchain = \"stable-x86_64-unknown-linux-gnu\"\n",
		".rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/rustc": stub("rustc 1.95.0 (stub)"),
	}, path: []string{"HOME/.cargo/bin"}, checks: []homeCheck{{"cargo --version", "${CARGO_HOME:-$HOME/.cargo}/registry", true}}},
	{name: "rustup-used", files: map[string]string{
		".cargo/bin/cargo":      "#!/bin/sh\ncat \"${RUSTUP_HOME:-$HOME/.rustup}/settings.toml\" >/dev/null && echo 'cargo 1.95.0 (stub)'\n",
		".cargo/env":            "export PATH=\"$HOME/.cargo/bin:$PATH\"\n",
		".rustup/settings.toml": "default_toolchain = \"stable\"\n",
		".cargo/registry/index/index.crates.io-1949cf8c6b5b557f/.cache/se/rd/serde":   "cached index\n",
		".cargo/registry/cache/index.crates.io-1949cf8c6b5b557f/serde-1.0.0.crate":    "crate\n",
		".cargo/registry/src/index.crates.io-1949cf8c6b5b557f/serde-1.0.0/src/lib.rs": "pub fn f() {}\n",
		".cargo/git/db/dep-0123456789abcdef/HEAD":                                     "ref: refs/heads/main\n",
		".cargo/.package-cache":   "",
		".cargo/credentials.toml": "[registry]\ntoken = \"home-secret-cargo\"\n",
	}, path: []string{"HOME/.cargo/bin"}, checks: []homeCheck{{"cargo --version && ! grep -qs home-secret-cargo $HOME/.cargo/credentials.toml", "${CARGO_HOME:-$HOME/.cargo}/registry", true}, {"true", "${CARGO_HOME:-$HOME/.cargo}/git", true}}},
	{name: "go-bin-only", files: map[string]string{"go/bin/gopls": stub("golang.org/x/tools/gopls v0.20.0 (stub)")},
		path: []string{"HOME/go/bin"}, checks: []homeCheck{{"gopls version", "${GOMODCACHE:-$HOME/go/pkg/mod}", true}, {"true", "${GOCACHE:-$HOME/.cache/go-build}", true}, {"true", goSumdb, true}}},
	{name: "go-used", files: map[string]string{
		"go/bin/gopls": stub("gopls v0.20.0 (stub)"),
		"go/pkg/mod/cache/download/example.com/m/@v/v1.0.0.zip":                                 "zip\n",
		"go/pkg/mod/example.com/m@v1.0.0/m.go":                                                  "package m\n",
		".cache/go-build/00/0000000000000000000000000000000000000000000000000000000000000000-a": "object\n",
	}, path: []string{"HOME/go/bin"}, checks: []homeCheck{{"gopls version", "${GOMODCACHE:-$HOME/go/pkg/mod}", true}, {"true", "${GOCACHE:-$HOME/.cache/go-build}", true}, {"true", goSumdb, true}}},
	{name: "nvm-without-npm-cache", files: map[string]string{
		".nvm/nvm.sh":                                                   "# nvm\n",
		".nvm/versions/node/v20.11.0/bin/node":                          stub("v20.11.0"),
		".nvm/versions/node/v20.11.0/bin/npm":                           stub("10.2.4"),
		".nvm/versions/node/v20.11.0/lib/node_modules/npm/package.json": "{}\n",
	}, path: []string{"HOME/.nvm/versions/node/v20.11.0/bin"}, env: []string{"NVM_DIR=HOME/.nvm"},
		checks: []homeCheck{{"npm --version && node --version", "${npm_config_cache:-$HOME/.npm}", true}}},
	{name: "nvm-with-npm-cache", files: map[string]string{
		".nvm/nvm.sh":                          "# nvm\n",
		".nvm/versions/node/v20.11.0/bin/node": stub("v20.11.0"),
		".nvm/versions/node/v20.11.0/bin/npm":  stub("10.2.4"),
		".npm/_cacache/index-v5/00/00/0000":    "index\n",
		".npm/_logs/2026-01-01-debug-0.log":    "log\n",
	}, path: []string{"HOME/.nvm/versions/node/v20.11.0/bin"}, env: []string{"NVM_DIR=HOME/.nvm"},
		checks: []homeCheck{{"npm --version", "${npm_config_cache:-$HOME/.npm}", true}}},
	{name: "pyenv", files: map[string]string{
		".pyenv/bin/pyenv":                  stub("pyenv 2.4.0 (stub)"),
		".pyenv/shims/python":               "#!/bin/sh\nexec \"${PYENV_ROOT:-$HOME/.pyenv}/versions/3.12.1/bin/python\" \"$@\"\n",
		".pyenv/versions/3.12.1/bin/python": stub("Python 3.12.1"),
		".pyenv/version":                    "3.12.1\n",
		".cache/pip/http-v2/0/0/0/cached":   "wheel\n",
	}, path: []string{"HOME/.pyenv/shims", "HOME/.pyenv/bin"}, env: []string{"PYENV_ROOT=HOME/.pyenv"},
		checks: []homeCheck{{"python --version", "${PIP_CACHE_DIR:-" + xdgCache + "/pip}", true}}},
	{name: "uv-pipx", files: map[string]string{
		".local/bin/uv": stub("uv 0.5.0 (stub)"),
		".local/share/pipx/venvs/black/bin/black":        stub("black, 24.1.0 (stub)"),
		".local/share/pipx/venvs/black/pyvenv.cfg":       "home = /usr/bin\n",
		".local/share/uv/python/cpython-3.12/bin/python": stub("Python 3.12 (uv)"),
	}, links: map[string]string{".local/bin/black": "HOME/.local/share/pipx/venvs/black/bin/black"},
		path:   []string{"HOME/.local/bin"},
		checks: []homeCheck{{"uv --version && black --version", "${UV_CACHE_DIR:-" + xdgCache + "/uv}", true}}},
	{name: "miniforge", files: map[string]string{
		"miniforge3/bin/conda":          stub("conda 24.1.0 (stub)"),
		"miniforge3/bin/python":         stub("Python 3.12.1 (conda)"),
		"miniforge3/condabin/conda":     stub("conda 24.1.0 (stub)"),
		"miniforge3/conda-meta/history": "==> 2026-01-01 <==\n",
		"miniforge3/pkgs/urls.txt":      "https://conda.anaconda.org/conda-forge/linux-64/python.conda\n",
	}, path: []string{"HOME/miniforge3/bin", "HOME/miniforge3/condabin"},
		checks: []homeCheck{{"conda --version && python --version", "${CONDA_PKGS_DIRS:-$HOME/miniforge3/pkgs}", true}}},
	{name: "volta", files: map[string]string{
		".volta/bin/volta":                         stub("2.0.1 (stub)"),
		".volta/bin/node":                          "#!/bin/sh\nexec \"$VOLTA_HOME/tools/image/node/20.11.0/bin/node\" \"$@\"\n",
		".volta/tools/image/node/20.11.0/bin/node": stub("v20.11.0"),
		".volta/tools/user/platform.json":          "{}\n",
	}, path: []string{"HOME/.volta/bin"}, env: []string{"VOLTA_HOME=HOME/.volta"},
		checks: []homeCheck{{"volta --version && node --version", "${npm_config_cache:-$HOME/.npm}", true}, {"true", "$HOME/.volta/cache", false}}},
	{name: "sdkman-maven-gradle", files: map[string]string{
		".sdkman/bin/sdkman-init.sh":                  "# sdkman\n",
		".sdkman/candidates/java/21.0.2-tem/bin/java": stub("openjdk 21.0.2 (stub)"),
		".sdkman/candidates/maven/3.9.6/bin/mvn":      stub("Apache Maven 3.9.6 (stub)"),
		".sdkman/candidates/gradle/8.6/bin/gradle":    stub("Gradle 8.6 (stub)"),
		".gradle/gradle.properties":                   "systemProp.gradle.publish.key=home-secret-gradle\n",
	}, links: map[string]string{
		".sdkman/candidates/java/current":   "21.0.2-tem",
		".sdkman/candidates/maven/current":  "3.9.6",
		".sdkman/candidates/gradle/current": "8.6",
	}, path: []string{"HOME/.sdkman/candidates/java/current/bin", "HOME/.sdkman/candidates/maven/current/bin", "HOME/.sdkman/candidates/gradle/current/bin"},
		env:    []string{"SDKMAN_DIR=HOME/.sdkman", "JAVA_HOME=HOME/.sdkman/candidates/java/current"},
		checks: []homeCheck{{"mvn --version && java --version", "$HOME/.m2/repository", false}, {"gradle --version && ! grep -qs home-secret-gradle $HOME/.gradle/gradle.properties", "${GRADLE_USER_HOME:-$HOME/.gradle}/daemon", true}}},
	{name: "asdf", files: map[string]string{
		".asdf/bin/asdf":                         stub("v0.14.0 (stub)"),
		".asdf/shims/node":                       "#!/bin/sh\nexec \"${ASDF_DATA_DIR:-$HOME/.asdf}/installs/nodejs/20.11.0/bin/node\" \"$@\"\n",
		".asdf/installs/nodejs/20.11.0/bin/node": stub("v20.11.0"),
		".tool-versions":                         "nodejs 20.11.0\n",
	}, path: []string{"HOME/.asdf/shims", "HOME/.asdf/bin"},
		checks: []homeCheck{{"node --version && asdf --version", "${npm_config_cache:-$HOME/.npm}", true}}},
	{name: "bun-deno", files: map[string]string{
		".bun/bin/bun":   stub("1.1.0 (stub)"),
		".deno/bin/deno": stub("deno 2.0.0 (stub)"),
	}, path: []string{"HOME/.bun/bin", "HOME/.deno/bin"}, env: []string{"BUN_INSTALL=HOME/.bun", "DENO_INSTALL=HOME/.deno"},
		checks: []homeCheck{{"bun --version", "${BUN_INSTALL_CACHE_DIR:-$HOME/.bun/install/cache}", true}, {"deno --version", "${DENO_DIR:-" + xdgCache + "/deno}", true}}},
	{name: "nix", outer: map[string]string{"nix/store/0000-hello-2.12/bin/hello": stub("hello (GNU Hello) 2.12")},
		links: map[string]string{
			".nix-profile": "OUT/nix/var/nix/profiles/per-user/user/profile",
		},
		path:   []string{"HOME/.nix-profile/bin"},
		checks: []homeCheck{{"hello --version", xdgCache + "/nix", true}}},
	{name: "homebrew-linux", files: map[string]string{
		".linuxbrew/bin/brew":                    stub("Homebrew 4.2.0 (stub)"),
		".linuxbrew/Cellar/hello/2.12/bin/hello": stub("hello (GNU Hello) 2.12"),
	}, links: map[string]string{".linuxbrew/bin/hello": "../Cellar/hello/2.12/bin/hello"},
		path: []string{"HOME/.linuxbrew/bin"}, env: []string{"HOMEBREW_PREFIX=HOME/.linuxbrew"},
		checks: []homeCheck{{"brew --version && hello --version", "${HOMEBREW_CACHE:-" + xdgCache + "/Homebrew}", true}}},
	{name: "pnpm", files: map[string]string{".local/share/pnpm/pnpm": stub("9.0.0 (stub)")},
		path: []string{"HOME/.local/share/pnpm"}, env: []string{"PNPM_HOME=HOME/.local/share/pnpm"},
		checks: []homeCheck{{"pnpm --version", "${npm_config_store_dir:-${PNPM_HOME:-$HOME/.local/share/pnpm}/store}", true}}},
}

// make builds the layout in a fresh home under root and returns the home
// and the variables its installer would have set.
func (l homeLayout) make(t *testing.T, root string) (string, []string) {
	t.Helper()
	home, out := filepath.Join(root, "home"), filepath.Join(root, "out")
	os.MkdirAll(home, 0o755)
	expand := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "HOME/", home+"/"), "OUT/", out+"/")
	}
	for dir, files := range map[string]map[string]string{home: l.files, out: l.outer} {
		for p, content := range files {
			WriteFile(t, dir, p, content)
			if strings.HasPrefix(content, "#!") {
				os.Chmod(filepath.Join(dir, p), 0o755)
			}
		}
	}
	if l.name == "nix" {
		// The profile links, as nix leaves them: a per-user profile that is
		// a generation, itself a link into the store.
		prof := filepath.Join(out, "nix/var/nix/profiles/per-user/user")
		os.MkdirAll(prof, 0o755)
		os.Symlink(filepath.Join(out, "nix/store/0000-hello-2.12"), filepath.Join(prof, "profile-1-link"))
		os.Symlink("profile-1-link", filepath.Join(prof, "profile"))
	}
	for p, target := range l.links {
		os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o755)
		if err := os.Symlink(expand(target), filepath.Join(home, p)); err != nil {
			t.Fatal(err)
		}
	}
	var path []string
	for _, p := range l.path {
		path = append(path, expand(p))
	}
	env := []string{"HOME=" + home, "PATH=" + strings.Join(append(path, "/usr/local/bin", "/usr/bin", "/bin"), ":"),
		"XDG_CACHE_HOME=", "GOPATH=", "GOMODCACHE=", "GOCACHE=", "CARGO_HOME=", "RUSTUP_HOME=", "PYENV_ROOT=", "NVM_DIR=", "VOLTA_HOME=",
		"SDKMAN_DIR=", "ASDF_DATA_DIR=", "BUN_INSTALL=", "DENO_INSTALL=", "npm_config_cache=", "PIP_CACHE_DIR=", "UV_CACHE_DIR="}
	for _, e := range l.env {
		env = append(env, expand(e))
	}
	return home, env
}

// treeState is every entry under root: a file's mode and content hash, a
// link's target, a directory's mode.
func treeState(root string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			out[p] = "unreadable"
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			out[p] = "link " + t
		case fi.IsDir():
			out[p] = "dir " + fi.Mode().String()
		default:
			b, _ := os.ReadFile(p)
			out[p] = fmt.Sprintf("file %s %x", fi.Mode(), sha256.Sum256(b))
		}
		return nil
	})
	return out
}

func TestEndToEndHomes(t *testing.T) {
	Announce("seventeen homes as installers leave them, in each kernel mode")
	bin := Build(t)
	for _, kernel := range Kernels() {
		for _, l := range homeLayouts {
			t.Run(kernel+"/"+l.name, func(t *testing.T) {
				t.Parallel()
				testHome(t, bin, kernel, l)
			})
		}
	}
}

func testHome(t *testing.T, bin, kernel string, l homeLayout) {
	root := t.TempDir()
	home, env := l.make(t, root)
	dir := filepath.Join(root, "ws")
	os.MkdirAll(dir, 0o755)
	env = append(env, "XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_DATA_HOME="+filepath.Join(root, "data"))
	before := treeState(home)
	lines := []string{"!true"}
	for i, c := range l.checks {
		lines = append(lines, "!"+c.run, fmt.Sprintf("!mkdir -p \"%s\" && echo written > \"%s/harvey-probe-%d\" && cat \"%s/harvey-probe-%d\"", c.cache, c.cache, i, c.cache, i))
	}
	script := filepath.Join(root, "script")
	os.WriteFile(script, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	out, errOut, code := RunKernel(t, kernel, bin, dir, "", env, "--run", script, "--yes")
	landlock := kernel == string(kernelsim.NoUserNS)
	refused := landlock && slices.ContainsFunc(l.checks, func(c homeCheck) bool { return !c.landlock }) // a write meant to fail
	if want := map[bool]int{false: 0, true: 1}[refused]; code != want {                                 // --run fails when a step does
		t.Fatalf("exit %d, want %d\n%s\n%s", code, want, out, errOut)
	}
	blocks := runResults(out)
	if len(blocks) != len(lines) {
		t.Fatalf("%d results for %d lines:\n%s\n%s", len(blocks), len(lines), out, errOut)
	}
	result := func(line string) string {
		for i, l := range lines {
			if l == line {
				return line + "\n" + blocks[i]
			}
		}
		return ""
	}
	if r := result(lines[0]); !strings.Contains(r, "[exit 0]") {
		t.Errorf("true: %s", r)
	}
	for i, c := range l.checks {
		if r := result(lines[1+2*i]); !strings.Contains(r, "[exit 0]") {
			t.Errorf("%s: %s", c.run, r)
		}
		r := result(lines[2+2*i])
		wrote := strings.Contains(r, "[exit 0]") && strings.Contains(r, "written")
		if want := !landlock || c.landlock; wrote != want {
			t.Errorf("a write to the cache %s: want it to work %v, it did %v: %s", c.cache, want, wrote, r)
		}
		if !wrote && !strings.Contains(r, "[sandbox:") {
			t.Errorf("a refused write to the cache does not name the rule: %s", r)
		}
	}
	after := treeState(home)
	for p, s := range after {
		if before[p] != s {
			t.Errorf("the home changed: %s: %q, was %q", p, s, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("the home lost %s", p)
		}
	}
}

// runResults splits the standard output of harvey --run into each line's
// result: its output, its status line ([exit N], [timed out ...]) and the
// notes after it ([sandbox: ...], [harvey: ...]).
func runResults(out string) []string {
	var blocks []string
	var cur strings.Builder
	ended := false
	status := func(line string) bool {
		return strings.HasPrefix(line, "[exit ") || strings.HasPrefix(line, "[timed out") || strings.HasPrefix(line, "[error")
	}
	for _, line := range strings.SplitAfter(out, "\n") {
		if ended && (!strings.HasPrefix(line, "[") || status(line)) {
			blocks = append(blocks, cur.String())
			cur.Reset()
			ended = false
		}
		cur.WriteString(line)
		ended = ended || status(line)
	}
	if ended {
		blocks = append(blocks, cur.String())
	}
	return blocks
}
