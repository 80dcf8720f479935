// Feature: release builds and their installer (issue 38) — install.sh on
// each machine it detects, the arm64 and armv7 binaries under Debian's qemu
// user-mode emulation. With HARVEY_DIST set (.ci/release-check sets it to
// dist/ after release/build.sh), the release archives and binaries
// themselves are tested; without it, archives and binaries made here.
package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// fakeRelease writes one archive per target holding a harvey that prints
// its target, and SHA256SUMS, into dir.
func fakeRelease(t *testing.T, dir string, targets []string) {
	t.Helper()
	var sums strings.Builder
	for _, tg := range targets {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		body := "#!/bin/sh\necho " + tg + "\n"
		for _, f := range []struct{ name, body string }{{"README.md", "# Harvey\n"}, {"harvey", body}} {
			tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.body))})
			tw.Write([]byte(f.body))
		}
		tw.Close()
		gz.Close()
		name := tg + ".tar.gz"
		os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644)
		sum := sha256.Sum256(buf.Bytes())
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums.String()), 0o644)
}

var releaseTargets = []string{"harvey_linux_amd64", "harvey_linux_arm64", "harvey_linux_armv7", "harvey_linux_armv6", "harvey_darwin_amd64", "harvey_darwin_arm64"}

// stubMachine writes uname, getconf and dpkg that answer as the machine
// described, into a directory put first on PATH.
func stubMachine(t *testing.T, os_, machine, longBit, dpkgArch string) string {
	t.Helper()
	d := t.TempDir()
	write := func(name, body string) {
		if err := osWriteExec(filepath.Join(d, name), "#!/bin/sh\n"+body); err != nil {
			t.Fatal(err)
		}
	}
	write("uname", `case "$1" in -s) echo `+os_+`;; -m) echo `+machine+`;; *) echo `+os_+`;; esac`+"\n")
	write("getconf", "echo "+longBit+"\n")
	if dpkgArch != "" {
		write("dpkg", "echo "+dpkgArch+"\n")
	} else {
		write("dpkg", "exit 127\n")
	}
	return d
}

func osWriteExec(p, body string) error { return os.WriteFile(p, []byte(body), 0o755) }

// install.sh installs from a local directory of archives into a temporary
// home for each machine it must tell apart (detected from stubbed uname,
// getconf and dpkg), says what to add to PATH, and refuses a tampered
// archive in one line with nothing installed and nothing left behind.
func TestInstallScript(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dist := t.TempDir()
	real := os.Getenv("HARVEY_DIST")
	if real != "" {
		dist = real
	} else {
		fakeRelease(t, dist, releaseTargets)
	}
	script, _ := filepath.Abs("install.sh")
	run := func(stubs, home, tmp string, args ...string) (string, error) {
		cmd := exec.Command(sh, append([]string{script}, args...)...)
		cmd.Env = []string{"PATH=" + stubs + ":/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, m := range []struct {
		name, os, machine, bits, dpkg, want string
	}{
		{"x86_64", "Linux", "x86_64", "64", "amd64", "harvey_linux_amd64"},
		{"aarch64", "Linux", "aarch64", "64", "arm64", "harvey_linux_arm64"},
		{"armv7l", "Linux", "armv7l", "32", "armhf", "harvey_linux_armv7"},
		{"armv6l (Pi Zero)", "Linux", "armv6l", "32", "armhf", "harvey_linux_armv6"},
		{"aarch64 kernel, armhf userland (Raspberry Pi OS)", "Linux", "aarch64", "32", "armhf", "harvey_linux_armv7"},
		{"aarch64 kernel, 32-bit userland without dpkg", "Linux", "aarch64", "32", "", "harvey_linux_armv7"},
		{"macOS on Apple silicon", "Darwin", "arm64", "64", "", "harvey_darwin_arm64"},
	} {
		home, tmp := t.TempDir(), t.TempDir()
		out, err := run(stubMachine(t, m.os, m.machine, m.bits, m.dpkg), home, tmp, "--from", dist)
		if err != nil {
			t.Fatalf("%s: %v\n%s", m.name, err, out)
		}
		bin := filepath.Join(home, ".local", "bin", "harvey")
		if real == "" {
			if b, _ := os.ReadFile(bin); !strings.Contains(string(b), m.want+"\n") {
				t.Errorf("%s: installed %q, want %s", m.name, b, m.want)
			}
		} else if !sameAsArchiveBinary(t, dist, m.want, bin) {
			t.Errorf("%s: the installed binary is not %s's", m.name, m.want)
		}
		if !strings.Contains(out, "add it to your PATH") {
			t.Errorf("%s: nothing said about PATH: %s", m.name, out)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("%s: left %v in TMPDIR", m.name, left)
		}
	}
	// --dir, and a PATH that already has it.
	home, tmp, dir := t.TempDir(), t.TempDir(), t.TempDir()
	stubs := stubMachine(t, "Linux", "x86_64", "64", "amd64")
	cmd := exec.Command(sh, script, "--from", dist, "--dir", dir)
	cmd.Env = []string{"PATH=" + stubs + ":" + dir + ":/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp}
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "add it to your PATH") {
		t.Fatalf("--dir on PATH: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "harvey")); err != nil {
		t.Fatal("--dir: not installed there")
	}
	// A tampered archive: one line, nothing installed, nothing left.
	bad := t.TempDir()
	for _, f := range []string{"SHA256SUMS", "harvey_linux_amd64.tar.gz"} {
		b, err := os.ReadFile(filepath.Join(dist, f))
		if err != nil {
			t.Fatal(err)
		}
		if f != "SHA256SUMS" {
			b[len(b)/2] ^= 0xff
		}
		os.WriteFile(filepath.Join(bad, f), b, 0o644)
	}
	home, tmp = t.TempDir(), t.TempDir()
	out, err := run(stubs, home, tmp, "--from", bad)
	if err == nil || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "checksum mismatch") {
		t.Fatalf("a tampered archive: %v %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, ".local")); err == nil {
		t.Error("a tampered archive left something in the home")
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("a tampered archive left %v in TMPDIR", left)
	}
	installAppArmorOffer(t, sh, script, dist, stubs)
}

// Where Ubuntu restricts user namespaces (a fixture /proc/sys says so),
// install.sh offers the AppArmor profile: yes installs what harvey
// sandbox apparmor prints through sudo (a stub that records), no says how
// to do it later; elsewhere it says nothing about it.
func installAppArmorOffer(t *testing.T, sh, script, dist, stubs string) {
	proc := t.TempDir()
	os.MkdirAll(filepath.Join(proc, "kernel"), 0o755)
	os.WriteFile(filepath.Join(proc, "kernel", "apparmor_restrict_unprivileged_userns"), []byte("1\n"), 0o644)
	log := filepath.Join(t.TempDir(), "sudo.log")
	osWriteExec(filepath.Join(stubs, "sudo"), "#!/bin/sh\necho \"$*\" >> "+log+"\ncase $1 in tee) cat >> "+log+" ;; esac\n")
	for _, c := range []struct{ sys, answer, want, not string }{
		{proc, "yes", "installed /etc/apparmor.d/harvey", ""},
		{proc, "no", "to do it later: harvey sandbox apparmor", ""},
		{t.TempDir(), "yes", "", "AppArmor"},
	} {
		os.Remove(log)
		cmd := exec.Command(sh, script, "--from", dist)
		cmd.Env = []string{"PATH=" + stubs + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(), "HARVEY_PROC_SYS=" + c.sys, "HARVEY_APPARMOR=" + c.answer}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) || (c.not != "" && strings.Contains(string(out), c.not)) {
			t.Errorf("AppArmor offer (%s): %v\n%s", c.answer, err, out)
		}
		b, _ := os.ReadFile(log)
		if installed := strings.Contains(string(b), "apparmor_parser -r /etc/apparmor.d/harvey"); installed != (c.want == "installed /etc/apparmor.d/harvey") || installed && !strings.Contains(string(b), "tee /etc/apparmor.d/harvey") {
			t.Errorf("AppArmor offer (%s): sudo was asked:\n%s", c.answer, b)
		}
	}
}

// sameAsArchiveBinary reports whether bin is the harvey in target's archive.
func sameAsArchiveBinary(t *testing.T, dist, target, bin string) bool {
	f, err := os.Open(filepath.Join(dist, target+".tar.gz"))
	if err != nil {
		return false
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return false
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return false
		}
		if h.Name == "harvey" {
			var buf bytes.Buffer
			buf.ReadFrom(tr)
			got, _ := os.ReadFile(bin)
			return bytes.Equal(buf.Bytes(), got)
		}
	}
}

// The arm64 and armv7 binaries answer --version and one headless turn
// against the fake Ollama under Debian's qemu user-mode emulation (the
// release's own binaries with HARVEY_DIST; cross-built here otherwise).
func TestReleaseBinariesUnderQemu(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("qemu user mode runs on Linux")
	}
	if os.Getenv("HARVEY_DIST") == "" && os.Getenv("HARVEY_TEST_QEMU") == "" {
		// Two cross builds and emulated runs: about 45 s of two cores, and
		// .ci/release-check runs this test on the release's own binaries.
		t.Skip("the release's binaries are tried under qemu by .ci/release-check (HARVEY_DIST); HARVEY_TEST_QEMU=1 cross-builds and tries them here")
	}
	for _, c := range []struct {
		qemu, goarch, goarm, dist string
	}{
		{"qemu-aarch64-static", "arm64", "", "harvey_linux_arm64_v8.0"},
		{"qemu-arm-static", "arm", "7", "harvey_linux_arm_7"},
	} {
		t.Run(c.goarch+c.goarm, func(t *testing.T) {
			t.Parallel()
			qemu, err := exec.LookPath(c.qemu)
			if err != nil {
				if os.Getenv("HARVEY_DIST") != "" {
					t.Fatalf("%s is needed to test the release binaries (apt-get install qemu-user-static)", c.qemu)
				}
				t.Skipf("no %s (apt-get install qemu-user-static)", c.qemu)
			}
			bin := filepath.Join(os.Getenv("HARVEY_DIST"), c.dist, "harvey")
			if os.Getenv("HARVEY_DIST") == "" {
				bin = filepath.Join(t.TempDir(), "harvey")
				build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/harvey")
				build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+c.goarch, "GOARM="+c.goarm)
				if out, err := build.CombinedOutput(); err != nil {
					t.Fatalf("cross build: %v %s", err, out)
				}
			}
			out, err := exec.Command(qemu, bin, "--version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "linux/"+c.goarch) {
				t.Fatalf("--version under %s: %v %s", c.qemu, err, out)
			}
			if os.Getenv("HARVEY_DIST") != "" && !strings.Contains(string(out), "commit ") {
				t.Errorf("a release binary's --version names no commit: %s", out)
			}
			f := fakeollama.New(t, "llama3.2:latest")
			f.Script(fakeollama.TextReply("llama3.2", "Hello from a Pi."))
			cmd := exec.Command(qemu, bin, "-p", "hi", "--model", "llama3.2", "--ollama", f.URL())
			cmd.Dir = t.TempDir()
			cmd.Env = append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST=", "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
			out, err = cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Hello from a Pi.") {
				t.Fatalf("a headless turn under %s: %v\n%s", c.qemu, err, out)
			}
		})
	}
}

// The packages' maintainer scripts load Harvey's AppArmor profile after
// install and unload it before removal only where AppArmor is active, and
// never fail the install or removal (issue 53): run with stub aa-enabled
// and apparmor_parser, the profile at a fixture path.
func TestPackageMaintainerScripts(t *testing.T) {
	for _, script := range []struct{ file, want string }{{"release/packaging/postinstall.sh", "-r -T -W"}, {"release/packaging/preremove.sh", "-R"}} {
		body, err := os.ReadFile(script.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name           string
			active, parser bool
			parserFails    bool
			profile        bool
			wantLoaded     bool
		}{
			{"active", true, true, false, true, true},
			{"inactive", false, true, false, true, false},
			{"no apparmor_parser", true, false, false, true, false},
			{"no profile", true, true, false, false, false},
			{"the parser fails", true, true, true, true, true},
		} {
			t.Run(filepath.Base(script.file)+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				bin, log, profile := filepath.Join(dir, "bin"), filepath.Join(dir, "log"), filepath.Join(dir, "harvey.profile")
				os.Mkdir(bin, 0o755)
				if c.profile {
					os.WriteFile(profile, []byte("profile harvey /usr/bin/harvey {}\n"), 0o644)
				}
				exit := map[bool]string{true: "0", false: "1"}
				osWriteExec(filepath.Join(bin, "aa-enabled"), "#!/bin/sh\nexit "+exit[c.active]+"\n")
				if c.parser {
					osWriteExec(filepath.Join(bin, "apparmor_parser"), "#!/bin/sh\necho \"$@\" >> "+log+"\nexit "+exit[!c.parserFails]+"\n")
				}
				s := strings.ReplaceAll(string(body), "/etc/apparmor.d/harvey", profile)
				cmd := exec.Command("/bin/sh", "-c", s, "postinst", "configure")
				cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("the script failed: %v %s", err, out)
				}
				got, _ := os.ReadFile(log)
				if loaded := strings.Contains(string(got), script.want+" "+profile); loaded != c.wantLoaded {
					t.Errorf("apparmor_parser called %q; want a call with %q: %v", got, script.want, c.wantLoaded)
				}
			})
		}
	}
}

// The release's Debian and RPM packages (with HARVEY_DIST, after
// release/build.sh): Harvey at /usr/bin/harvey, the AppArmor profile at
// /etc/apparmor.d/harvey naming that path (a config file), and the
// maintainer scripts that load it.
func TestLinuxPackages(t *testing.T) {
	dist := os.Getenv("HARVEY_DIST")
	if dist == "" {
		t.Skip("HARVEY_DIST is not set: .ci/release-check builds the packages and runs this")
	}
	postinst, _ := os.ReadFile("release/packaging/postinstall.sh")
	for _, arch := range []string{"amd64", "arm64", "armv7", "armv6"} {
		deb := filepath.Join(dist, "harvey_linux_"+arch+".deb")
		if _, err := exec.LookPath("dpkg-deb"); err != nil {
			t.Skip("no dpkg-deb to read the packages with")
		}
		out, err := exec.Command("dpkg-deb", "--contents", deb).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v %s", deb, err, out)
		}
		for _, f := range []string{"./usr/bin/harvey", "./etc/apparmor.d/harvey", "./usr/share/doc/harvey/README.md"} {
			if !strings.Contains(string(out), f+"\n") {
				t.Errorf("%s does not install %s:\n%s", deb, f, out)
			}
		}
		profile, err := exec.Command("sh", "-c", "dpkg-deb --fsys-tarfile '"+deb+"' | tar -xOf - ./etc/apparmor.d/harvey").Output()
		if err != nil || !strings.Contains(string(profile), `profile harvey "/usr/bin/harvey" flags=(unconfined)`) || !strings.Contains(string(profile), "userns,") {
			t.Errorf("%s: the profile does not name /usr/bin/harvey: %v\n%s", deb, err, profile)
		}
		ctl := t.TempDir()
		if out, err := exec.Command("dpkg-deb", "--control", deb, ctl).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		if b, _ := os.ReadFile(filepath.Join(ctl, "conffiles")); !strings.Contains(string(b), "/etc/apparmor.d/harvey") {
			t.Errorf("%s: the profile is not a config file: %q", deb, b)
		}
		if b, _ := os.ReadFile(filepath.Join(ctl, "postinst")); !bytes.Equal(b, postinst) {
			t.Errorf("%s: postinst is not release/packaging/postinstall.sh:\n%s", deb, b)
		}
		rpmFile := filepath.Join(dist, "harvey_linux_"+arch+".rpm")
		if _, err := exec.LookPath("rpm"); err != nil {
			t.Logf("no rpm to read %s with", rpmFile)
			continue
		}
		out, err = exec.Command("rpm", "-qp", "--list", rpmFile).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "/usr/bin/harvey\n") || !strings.Contains(string(out), "/etc/apparmor.d/harvey\n") {
			t.Errorf("%s: %v\n%s", rpmFile, err, out)
		}
		out, _ = exec.Command("rpm", "-qp", "--scripts", rpmFile).CombinedOutput()
		if !strings.Contains(string(out), "apparmor_parser -r -T -W") || !strings.Contains(string(out), "aa-enabled --quiet") {
			t.Errorf("%s: the scripts do not load the profile where AppArmor is active:\n%s", rpmFile, out)
		}
		out, _ = exec.Command("rpm", "-qp", "--configfiles", rpmFile).CombinedOutput()
		if !strings.Contains(string(out), "/etc/apparmor.d/harvey") {
			t.Errorf("%s: the profile is not a config file:\n%s", rpmFile, out)
		}
	}
}
