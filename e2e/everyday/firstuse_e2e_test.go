// Feature: every package manager's whole first use works in the sandbox
// (issue 62), as a new user meets it: a fresh home (no module cache, no
// checksum database, no ~/.cargo/registry, no pip cache), the built binary,
// each kernel mode, run by CI as root and as an ordinary account. Each
// tool adds a dependency from a registry, tidies or builds, and runs what
// it got: go get + go mod tidy + go run (GONOSUMDB honoured), npm install
// PKG + node, python3 -m venv + pip install PKG + python, cargo add +
// cargo build + cargo run, Maven's plugin and dependency, gradle (twice,
// with its daemon, as a user runs it). The registries are local servers that speak
// each tool's protocol (the Go module proxy, PEP 503's simple index,
// npm's registry, cargo's sparse index), named in the user's
// sandbox.hosts as a registry of theirs would be. In Landlock only the
// launcher keeps the same network (the session's loopback, the proxy, the
// services named), so each works there too; Maven's local repository is
// the user's, read-only, there, which its failure says in one line.
package everyday

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/kernelsim"
)

// pmFirstUse is one package manager's first use: the project, the lines a
// user types (!commands, run by --run in one session), and what the last
// one prints when it all worked.
type pmFirstUse struct {
	name  string
	needs []string // programs it needs (skipped, saying why, without them)
	files map[string]string
	steps []string
	want  string
	env   []string // variables the user's shell has for it
}

// registries serves a Go module proxy (/go/), a PEP 503 simple index and
// its wheel (/simple/, /files/) and a cargo sparse registry (/cargo/), each
// with one package, on 127.0.0.2.
func registries(t *testing.T) (base string, maven bool) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	base = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	serve := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) })
	}

	// The Go module proxy protocol: example.com/greet v1.0.0.
	gomod := "module example.com/greet\n\ngo 1.21\n"
	var gz bytes.Buffer
	zw := zip.NewWriter(&gz)
	for name, body := range map[string]string{"go.mod": gomod, "greet.go": "package greet\n\nfunc Hello() string { return \"hello from the Go proxy\" }\n"} {
		w, _ := zw.Create("example.com/greet@v1.0.0/" + name)
		w.Write([]byte(body))
	}
	zw.Close()
	info := `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`
	serve("/go/example.com/greet/@v/list", "v1.0.0\n")
	serve("/go/example.com/greet/@latest", info)
	serve("/go/example.com/greet/@v/v1.0.0.info", info)
	serve("/go/example.com/greet/@v/v1.0.0.mod", gomod)
	serve("/go/example.com/greet/@v/v1.0.0.zip", gz.String())

	// PEP 503 and a wheel: greetpy 1.0.0.
	wheel := pythonWheel("greetpy", "1.0.0", map[string]string{"greetpy/__init__.py": "def hello():\n    return 'hello from the Python index'\n"})
	wsum := sha256.Sum256(wheel)
	serve("/simple/", `<a href="greetpy/">greetpy</a>`)
	serve("/simple/greetpy/", fmt.Sprintf(`<a href="%s/files/greetpy-1.0.0-py3-none-any.whl#sha256=%x">greetpy-1.0.0-py3-none-any.whl</a>`, base, wsum))
	serve("/files/greetpy-1.0.0-py3-none-any.whl", string(wheel))

	// Cargo's sparse registry: greetrs 0.1.0.
	crate := tarGz(map[string]string{
		"greetrs-0.1.0/Cargo.toml": "[package]\nname = \"greetrs\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"greetrs-0.1.0/src/lib.rs": "pub fn hello() -> &'static str { \"hello from the crate registry\" }\n",
	})
	csum := sha256.Sum256(crate)
	serve("/cargo/index/config.json", fmt.Sprintf(`{"dl": "%s/cargo/dl/{crate}/{version}"}`, base))
	line, _ := json.Marshal(map[string]any{"name": "greetrs", "vers": "0.1.0", "deps": []any{}, "cksum": hex.EncodeToString(csum[:]), "features": map[string]any{}, "yanked": false})
	serve("/cargo/index/gr/ee/greetrs", string(line)+"\n")
	serve("/cargo/dl/greetrs/0.1.0", string(crate))

	// A Maven repository: a dependency, and a plugin (built here) where
	// Maven and a JDK are.
	repo, plugin := mavenRepository(t)
	for name, body := range repo {
		serve("/maven2/"+name, string(body))
	}

	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base, plugin
}

// mavenRepository is a Maven repository's files (path → content): a
// dependency, com.example:greeting:1.0, whose jar carries a greeting; and,
// where Maven and a JDK are here (plugin), a plugin whose goal resolves
// the project's dependencies and prints the greeting each carries,
// compiled here against Maven's own plugin API, with the plexus-utils 1.1
// Maven adds to a plugin that names none.
func mavenRepository(t *testing.T) (files map[string][]byte, plugin bool) {
	pom := func(g, a, packaging string) []byte {
		return []byte(fmt.Sprintf("<project><modelVersion>4.0.0</modelVersion><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version><packaging>%s</packaging></project>\n",
			g, a, "1.0", packaging))
	}
	files = map[string][]byte{
		"com/example/greeting/1.0/greeting-1.0.pom": pom("com.example", "greeting", "jar"),
		"com/example/greeting/1.0/greeting-1.0.jar": zipOf(map[string]string{"greeting.txt": "hello from the Maven repository\n"}),
	}
	if class := greetMojoClass(t); class != nil {
		plugin = true
		files["com/example/greet-maven-plugin/1.0/greet-maven-plugin-1.0.pom"] = pom("com.example", "greet-maven-plugin", "maven-plugin")
		files["com/example/greet-maven-plugin/1.0/greet-maven-plugin-1.0.jar"] = zipOf(map[string]string{"com/example/GreetMojo.class": string(class), "META-INF/maven/plugin.xml": greetPluginXML})
		files["org/codehaus/plexus/plexus-utils/1.1/plexus-utils-1.1.pom"] = pom("org.codehaus.plexus", "plexus-utils", "jar")
		files["org/codehaus/plexus/plexus-utils/1.1/plexus-utils-1.1.jar"] = zipOf(map[string]string{"README": "a stand-in\n"})
	}
	for name, body := range files {
		sum := sha1.Sum(body)
		files[name+".sha1"] = []byte(hex.EncodeToString(sum[:]))
	}
	return files, plugin
}

// greetMojoClass is the fixture plugin's class, compiled here against
// Maven's own plugin API; nil where there is no JDK or no Maven here.
func greetMojoClass(t *testing.T) []byte {
	mvn, err := exec.LookPath("mvn")
	javac, err2 := exec.LookPath("javac")
	if err != nil || err2 != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(mvn); err == nil {
		mvn = real
	}
	api, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(mvn)), "lib", "maven-plugin-api*.jar"))
	if len(api) == 0 {
		return nil
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "GreetMojo.java")
	os.WriteFile(src, []byte(greetMojo), 0o644)
	if out, err := exec.Command(javac, "--release", "11", "-cp", api[0], "-d", dir, src).CombinedOutput(); err != nil {
		t.Logf("no Maven plugin for the fixture: %v %s", err, out)
		return nil
	}
	class, _ := os.ReadFile(filepath.Join(dir, "com", "example", "GreetMojo.class"))
	return class
}

func zipOf(files map[string]string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for n, body := range files {
		w, _ := zw.Create(n)
		w.Write([]byte(body))
	}
	zw.Close()
	return b.Bytes()
}

// greetMojo is the fixture plugin's goal: the greeting in each jar of the
// project's compile class path (its dependencies, resolved by Maven).
const greetMojo = `package com.example;

import java.util.List;
import java.util.jar.JarFile;
import org.apache.maven.plugin.AbstractMojo;

public class GreetMojo extends AbstractMojo {
    private List<String> classpath;

    public void execute() {
        for (String p : classpath) {
            if (!p.endsWith(".jar")) continue;
            try (JarFile j = new JarFile(p)) {
                var e = j.getEntry("greeting.txt");
                if (e != null) System.out.println(new String(j.getInputStream(e).readAllBytes()).trim());
            } catch (java.io.IOException x) {
                throw new RuntimeException(x);
            }
        }
    }
}
`

const greetPluginXML = `<plugin>
  <name>greet</name>
  <groupId>com.example</groupId>
  <artifactId>greet-maven-plugin</artifactId>
  <version>1.0</version>
  <goalPrefix>greet</goalPrefix>
  <mojos>
    <mojo>
      <goal>greet</goal>
      <requiresDependencyResolution>compile</requiresDependencyResolution>
      <requiresProject>true</requiresProject>
      <implementation>com.example.GreetMojo</implementation>
      <language>java</language>
      <instantiationStrategy>per-lookup</instantiationStrategy>
      <executionStrategy>once-per-session</executionStrategy>
      <threadSafe>true</threadSafe>
      <parameters>
        <parameter><name>classpath</name><type>java.util.List</type><required>true</required><editable>false</editable><description>the compile class path</description></parameter>
      </parameters>
      <configuration>
        <classpath implementation="java.util.List">${project.compileClasspathElements}</classpath>
      </configuration>
    </mojo>
  </mojos>
  <dependencies/>
</plugin>
`

// pythonWheel is a pure-Python wheel of files, with its metadata and a
// RECORD of their hashes (pip checks them).
func pythonWheel(name, version string, files map[string]string) []byte {
	info := name + "-" + version + ".dist-info/"
	files[info+"METADATA"] = "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
	files[info+"WHEEL"] = "Wheel-Version: 1.0\nGenerator: harvey-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	var record strings.Builder
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for n, body := range files {
		w, _ := zw.Create(n)
		w.Write([]byte(body))
		sum := sha256.Sum256([]byte(body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(body))
	}
	record.WriteString(info + "RECORD,,\n")
	w, _ := zw.Create(info + "RECORD")
	w.Write([]byte(record.String()))
	zw.Close()
	return b.Bytes()
}

func tarGz(files map[string]string) []byte {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for n, body := range files {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

func firstUses(base, npmBase string, maven bool) []pmFirstUse {
	host := strings.TrimPrefix(base, "http://")
	mavenNeeds := []string{"mvn", "javac"}
	if !maven {
		mavenNeeds = append(mavenNeeds, "Maven's plugin API for the fixture")
	}
	return []pmFirstUse{
		{name: "go", needs: []string{"go"}, files: map[string]string{
			"go.mod":  "module app\n\ngo 1.21\n",
			"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/greet\"\n)\n\nfunc main() { fmt.Println(greet.Hello()) }\n",
		}, steps: []string{"!go get example.com/greet@v1.0.0", "!go mod tidy", "!go run ."}, want: "hello from the Go proxy",
			env: []string{"GOPROXY=" + base + "/go", "GONOSUMDB=example.com", "GOTOOLCHAIN=local", "GOFLAGS=-modcacherw"}},
		{name: "npm", needs: []string{"npm", "node"}, files: map[string]string{"package.json": `{"name":"app","version":"1.0.0"}`},
			steps: []string{"!npm install leftpad", `!node -e "console.log('padded ' + require('leftpad')('7', 3))"`}, want: "padded 007",
			env: []string{"npm_config_registry=" + npmBase + "/", "npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false", "npm_config_fetch_retries=0"}},
		{name: "pip", needs: []string{"/usr/bin/python3"}, steps: []string{
			"!/usr/bin/python3 -m venv .venv",
			"!.venv/bin/pip install --disable-pip-version-check --retries 0 --index-url " + base + "/simple/ greetpy",
			`!.venv/bin/python -c "import greetpy; print(greetpy.hello())"`,
		}, want: "hello from the Python index"},
		{name: "cargo", needs: []string{"cargo"}, files: map[string]string{
			"Cargo.toml":         "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
			"src/main.rs":        "fn main() { println!(\"{}\", greetrs::hello()); }\n",
			".cargo/config.toml": "[source.crates-io]\nreplace-with = \"fixture\"\n\n[source.fixture]\nregistry = \"sparse+" + base + "/cargo/index/\"\n\n[net]\nretry = 0\n",
		}, steps: []string{"!cargo add greetrs@0.1.0", "!cargo build -q", "!cargo run -q"}, want: "hello from the crate registry",
			env: []string{"host:" + host}},
		// Maven resolves a plugin and a dependency into a local repository
		// the new home does not have (Java's user.home is the account's,
		// not $HOME: the option says which home is the user's here).
		{name: "maven", needs: mavenNeeds, files: map[string]string{
			"pom.xml": `<project><modelVersion>4.0.0</modelVersion><groupId>app</groupId><artifactId>app</artifactId><version>1.0</version>
  <dependencies><dependency><groupId>com.example</groupId><artifactId>greeting</artifactId><version>1.0</version></dependency></dependencies>
  <repositories><repository><id>central</id><url>` + base + `/maven2/</url></repository></repositories>
  <pluginRepositories><pluginRepository><id>central</id><url>` + base + `/maven2/</url></pluginRepository></pluginRepositories>
</project>
`,
			// Maven refuses plain-HTTP repositories but on 127.0.0.1 unless
			// a settings file lifts its blocking mirror, as a project with
			// a repository of its own over HTTP does.
			".mvn/maven.config": "-s .mvn/settings.xml\n",
			// The JVM a short build wants (C1 only, one GC thread), as
			// many projects set it: the JIT's compilers took the cores.
			".mvn/jvm.config":   "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC\n",
			".mvn/settings.xml": "<settings><mirrors><mirror><id>maven-default-http-blocker</id><mirrorOf>none</mirrorOf><url>http://0.0.0.0/</url><blocked>false</blocked></mirror></mirrors></settings>\n",
		}, steps: []string{"!mvn -B -q -Duser.home=$HOME com.example:greet-maven-plugin:1.0:greet"}, want: "hello from the Maven repository"},
		// Gradle resolves the same dependency into a Gradle home the new
		// home does not have, with its daemon as a user runs it (the
		// account's user.home is not $HOME: GRADLE_USER_HOME says which).
		{name: "gradle", needs: []string{"gradle", "java"}, files: map[string]string{
			"build.gradle": "apply plugin: 'java'\nrepositories { maven { url '" + base + "/maven2/' } }\ndependencies { compile 'com.example:greeting:1.0' }\n" +
				"task greet { doLast { configurations.compile.each { f -> def z = new java.util.zip.ZipFile(f); def e = z.getEntry('greeting.txt'); if (e != null) println z.getInputStream(e).text.trim() } } }\n",
			"settings.gradle":   "rootProject.name = 'app'\n",
			"gradle.properties": "org.gradle.jvmargs=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m\n", // as .mvn/jvm.config
		}, steps: []string{"!gradle -q greet", "!gradle -q greet"}, want: "hello from the Maven repository", env: []string{"GRADLE_USER_HOME=$HOME/.gradle"}},
	}
}

func TestEndToEndFirstUseOfEachPackageManager(t *testing.T) {
	e2e.RequireSandbox(t)
	bin := e2e.Build(t)
	base, maven := registries(t)
	npmBase, _ := e2e.NPMFixture(t, e2e.LeftpadPackage)
	for _, kernel := range e2e.Kernels() {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			for _, fu := range firstUses(base, npmBase, maven) {
				t.Run(fu.name, func(t *testing.T) { firstUseIn(t, bin, kernel, base, npmBase, fu) })
			}
		})
	}
}

func firstUseIn(t *testing.T, bin, kernel, base, npmBase string, fu pmFirstUse) {
	path := "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"
	var rustup string
	for _, p := range fu.needs {
		full, err := exec.LookPath(p)
		if err != nil {
			t.Skipf("%s is not installed here", p)
		}
		// Where the program really is: a PATH entry of links into another
		// home (CI's fresh home links root's rustup) is not this new home's.
		if real, err := filepath.EvalSymlinks(full); err == nil {
			full = filepath.Join(filepath.Dir(real), filepath.Base(full))
		}
		if p == "cargo" {
			// rustup's toolchains, where its installer left them; a
			// fresh CARGO_HOME (no registry) in the new home.
			rs := exec.Command("rustup", "show", "home")
			rs.Env = append(os.Environ(), "HOME="+cmp.Or(os.Getenv("HARVEY_TEST_REAL_HOME"), os.Getenv("HOME")), "RUSTUP_HOME=")
			out, err := rs.Output()
			if err != nil {
				t.Skipf("rustup does not run as this user: %v", err)
			}
			rustup = strings.TrimSpace(string(out))
			if real, err := filepath.EvalSymlinks(rustup); err == nil {
				rustup = real
			}
		}
		path = filepath.Dir(full) + ":" + path
	}
	root := t.TempDir()
	dir, home, cfg := filepath.Join(root, "app"), filepath.Join(root, "home"), filepath.Join(root, "config")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(home, 0o755)
	for n, body := range fu.files {
		e2e.WriteFile(t, dir, n, body)
	}
	e2e.WriteFile(t, cfg, "harvey/harvey.yaml", fmt.Sprintf("sandbox:\n  hosts: [%q, %q]\n  env: [npm_config_registry, npm_config_update_notifier, npm_config_audit, npm_config_fund, npm_config_fetch_retries]\n",
		strings.TrimPrefix(base, "http://"), strings.TrimPrefix(npmBase, "http://")))
	script := filepath.Join(root, "steps.txt")
	os.WriteFile(script, []byte(strings.Join(fu.steps, "\n")+"\n"), 0o644)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + cfg, "XDG_CACHE_HOME=", "XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"PATH=" + path, "HARVEY_SESSION_NET=" + os.Getenv("HARVEY_SESSION_NET")}
	if rustup != "" {
		env = append(env, "RUSTUP_HOME="+rustup, "CARGO_HOME="+filepath.Join(home, ".cargo"))
	}
	for _, e := range fu.env {
		if !strings.HasPrefix(e, "host:") {
			env = append(env, strings.ReplaceAll(e, "$HOME", home))
		}
	}
	// Each toolchain works outside Harvey first, with this case's
	// variables (a rustup whose `rustup default` was never run has no
	// cargo to run): else the case is left out, saying why (issue 79). Its
	// home is a throwaway one: Gradle writes ~/.gradle even for --version,
	// and the new home must stay as the installer left it.
	throwaway := t.TempDir()
	var check []string
	for _, e := range env {
		check = append(check, strings.ReplaceAll(e, home, throwaway)) // HOME, GRADLE_USER_HOME, CARGO_HOME
	}
	for _, p := range fu.needs {
		version := map[bool]string{true: "version", false: "--version"}[filepath.Base(p) == "go"]
		if err := e2e.ToolchainWorks(check, p, version); err != nil {
			t.Skip(err)
		}
	}
	out, errOut, code := e2e.RunKernel(t, kernel, bin, dir, "", env, "--run", script, "--yes")
	if kernel == string(kernelsim.NoUserNS) && fu.name == "maven" {
		// Landlock only: Maven first meets the home it may not write (its
		// local repository is the user's, read-only, there): said in one
		// line.
		said := "[sandbox: path outside: " + filepath.Join(home, ".m2", "repository") + " may be read but not written by commands (sandbox.writable"
		if code == 0 || !strings.Contains(out, said) {
			t.Errorf("Landlock only: exit %d, the failure does not say why:\n%s\n%s", code, out, errOut)
		}
		return
	}
	if code != 0 || !strings.Contains(out, fu.want) {
		t.Fatalf("%s's first use in a fresh home: exit %d\n%s\n%s", fu.name, code, out, errOut)
	}
	if entries, _ := os.ReadDir(home); fu.name != "cargo" && len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the fresh home was written: %v", names)
	}
}

// Java reads no proxy variable: Maven reaches the registries through
// Harvey's proxy by the options Harvey adds to MAVEN_OPTS, so a repository
// the user has not named is refused by the proxy, and said so naming the
// host and the setting (without them Maven would look the name up itself
// and say only "unknown host").
func TestEndToEndMavenThroughTheRegistryProxy(t *testing.T) {
	e2e.RequireSandbox(t)
	for _, p := range []string{"mvn", "java"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed here", p)
		}
	}
	bin := e2e.Build(t)
	root := t.TempDir()
	dir, home, cfg := filepath.Join(root, "app"), filepath.Join(root, "home"), filepath.Join(root, "config")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(filepath.Join(cfg, "harvey"), 0o755)
	e2e.WriteFile(t, dir, "pom.xml", `<project><modelVersion>4.0.0</modelVersion><groupId>app</groupId><artifactId>app</artifactId><version>1.0</version>
  <pluginRepositories><pluginRepository><id>central</id><url>https://maven.example.test/maven2/</url></pluginRepository></pluginRepositories>
</project>
`)
	script := filepath.Join(root, "steps.txt")
	os.WriteFile(script, []byte("!mvn -B -q -Duser.home=$HOME com.example:greet-maven-plugin:1.0:greet\n"), 0o644)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + cfg, "XDG_CACHE_HOME=", "XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"PATH=/usr/local/bin:/usr/bin:/bin", "HARVEY_SESSION_NET=" + os.Getenv("HARVEY_SESSION_NET")}
	out, errOut, code := e2e.RunKernel(t, "", bin, dir, "", env, "--run", script, "--yes")
	if code == 0 || !strings.Contains(out, "[sandbox: network: maven.example.test") {
		t.Fatalf("exit %d: the proxy's refusal is not said:\n%s\n%s", code, out, errOut)
	}
}
