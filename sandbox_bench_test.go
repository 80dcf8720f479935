// Feature: what the sandbox costs everyday work (a bare command, a build, an
// install), each beside the same work unsandboxed in the same run; spans
// internal/runner.
package harvey

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
)

// BenchmarkRunTrue measures what the launcher adds to run_command true
// (BENCHMARKS.md): in each kernel mode this machine can give (full,
// namespaces only, Landlock only) against unconfined in the same run.
func BenchmarkRunTrue(b *testing.B) {
	ws, err := openWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	a := newAgent(ws, &configfile.File{Config: config.Default()}, newLineReader(strings.NewReader("")), io.Discard, io.Discard)
	for _, mode := range []string{"unconfined", "sandboxed", "namespaces-only", "landlock-only"} {
		b.Run(mode, func(b *testing.B) {
			var sb *sandbox.Spec
			if mode != "unconfined" {
				if sandbox.Available().Mode() != sandbox.ModeFull {
					b.Skip("the modes are measured where the whole sandbox is there")
				}
				sb = a.gate.commandSandbox()
				sb.NoLandlock, sb.NoNS = mode == "namespaces-only", mode == "landlock-only"
			}
			for b.Loop() {
				runner.Run(context.Background(), runner.Proc{Dir: ws.Root, Argv: []string{"true"}, Env: runner.BaseEnv(), Sandbox: sb})
			}
		})
	}
}

// BenchmarkEverydayWork measures what the sandbox (its own root, the cache
// layers, the network namespace and the registry proxy) adds to a go build
// of a small module (warm caches) and to an npm ci of one dependency from
// a local registry: sandboxed against unconfined in the same run
// (BENCHMARKS.md).
func BenchmarkEverydayWork(b *testing.B) {
	if !sandbox.Available().Enforced() || !sandbox.Available().NS {
		b.Skip("no sandbox with namespaces")
	}
	base, integrities := e2e.NPMFixture(b, e2e.LeftpadPackage)
	dir := b.TempDir()
	e2e.WriteFile(b, dir, "go.mod", "module m\n\ngo 1.21\n")
	e2e.WriteFile(b, dir, "main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"ok\") }\n")
	e2e.WriteFile(b, dir, "package.json", `{"name":"app","version":"1.0.0","dependencies":{"leftpad":"1.0.0"}}`)
	e2e.WriteFile(b, dir, "package-lock.json", fmt.Sprintf(`{"name":"app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"app","version":"1.0.0","dependencies":{"leftpad":"1.0.0"}},"node_modules/leftpad":{"version":"1.0.0","resolved":"%s/leftpad/-/leftpad-1.0.0.tgz","integrity":"%s"}}}`, base, integrities["leftpad"]))
	ws, err := openWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	cfg := config.Default()
	cfg.Sandbox.Hosts = []string{strings.TrimPrefix(base, "http://")}
	a := newAgent(ws, &configfile.File{Config: cfg}, newLineReader(strings.NewReader("")), io.Discard, io.Discard)
	for _, work := range []struct{ name, cmd string }{
		{"go-build", "go build -o app ."},
		{"npm-ci", "npm ci --no-audit --no-fund --prefer-offline --loglevel=error"},
	} {
		if _, err := exec.LookPath(strings.Fields(work.cmd)[0]); err != nil {
			continue
		}
		for _, mode := range []string{"unconfined", "sandboxed"} {
			b.Run(work.name+"/"+mode, func(b *testing.B) {
				var sb *sandbox.Spec
				env := append(runner.BaseEnv(), "npm_config_update_notifier=false")
				if mode == "sandboxed" {
					sb = a.gate.commandSandbox()
				}
				for b.Loop() {
					res := runner.Run(context.Background(), runner.Proc{Dir: dir, Argv: []string{"sh", "-c", work.cmd}, Env: env, Sandbox: sb, Timeout: time.Minute})
					if res.ExitCode != 0 {
						b.Fatalf("%s: %s", work.cmd, res.Output)
					}
				}
			})
		}
	}
}

// BenchmarkCommandCost is a command's whole cost as the user meets it:
// `true` through the gate (the check before and after it included), with
// the session idle a moment between commands and back to back, in an
// empty workspace and in one with 10,000 files (an ignored node_modules),
// beside bubblewrap running the same `true` with the same isolation (a
// root of the system's trees and the workspace, every namespace) in the
// same run (issue 61: at most 1.5×; BENCHMARKS.md): idle, bubblewrap runs
// between Harvey's commands, idle too (its bwrap-ns/op), so each pair
// shares a minute; back to back, beside bubblewrap back to back.
func BenchmarkCommandCost(b *testing.B) {
	if !sandbox.Available().Enforced() {
		b.Skip("no sandbox here")
	}
	for _, files := range []int{0, 10000} {
		dir := b.TempDir()
		git := func(args ...string) {
			c := exec.Command("git", append([]string{"-c", "user.email=b@example.com", "-c", "user.name=b"}, args...)...)
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		git("init", "-q")
		e2e.WriteFile(b, dir, ".gitignore", "node_modules\n")
		for i := 0; i < files; i++ {
			e2e.WriteFile(b, dir, fmt.Sprintf("node_modules/p%d/f%d.js", i/100, i), "x\n")
		}
		git("add", ".gitignore")
		git("commit", "-qm", "init")
		// As a user or a model issues commands: the session idle a moment
		// between them (not timed); and back to back.
		for _, pause := range []time.Duration{100 * time.Millisecond, 0} {
			name := "harvey"
			if pause == 0 {
				name = "harvey-back-to-back"
			}
			b.Run(fmt.Sprintf("%s/%dfiles", name, files), func(b *testing.B) {
				ws, err := openWorkspace(dir)
				if err != nil {
					b.Fatal(err)
				}
				defer ws.Close()
				a := newAgent(ws, &configfile.File{Config: config.Default()}, newLineReader(strings.NewReader("")), io.Discard, io.Discard)
				a.approvals.auto = true
				a.gate.runChecked(context.Background(), "", "true", 0) // the session's first command starts its network
				// Idle, bubblewrap's `true` runs between Harvey's, idle too
				// (not timed as Harvey's; its own metric): the two share each
				// minute, so the ratio holds however this machine's speed
				// drifts between minutes.
				ref := bwrapRef{b: b, cmd: bubblewrapTrue(dir)}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if pause > 0 {
						b.StopTimer()
						time.Sleep(pause)
						if ref.run(1) {
							time.Sleep(pause)
						}
						b.StartTimer()
					} else if i > 0 && i%20 == 0 {
						// Back to back, bubblewrap's own burst of ten every
						// twenty commands: the ratio's two sides share
						// the same minutes here too. One untimed command
						// after it, so that every timed one follows one
						// of Harvey's at once (its spare still starting).
						b.StopTimer()
						if ref.run(10) {
							a.gate.runChecked(context.Background(), "", "true", 0)
						}
						b.StartTimer()
					}
					if _, err := a.gate.runChecked(context.Background(), "", "true", 0); err != nil {
						b.Fatal(err)
					}
				}
				ref.report()
			})
		}
		b.Run(fmt.Sprintf("bubblewrap/%dfiles", files), func(b *testing.B) {
			bw := bubblewrapTrue(dir)
			if bw == nil {
				b.Skip("no bubblewrap that runs here (bench/run.sh installs it)")
			}
			for b.Loop() {
				if err := bw().Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bwrapRef is bubblewrap's `true` run between Harvey's commands, untimed
// as theirs, reported as its own metric: bwrap-ns/op is the mean of one
// bubblewrap run.
type bwrapRef struct {
	b     *testing.B
	cmd   func() *exec.Cmd // nil: no bubblewrap here
	total time.Duration
	runs  int
}

// run runs bubblewrap n times back to back, if there is one.
func (r *bwrapRef) run(n int) bool {
	if r.cmd == nil {
		return false
	}
	for range n {
		start := time.Now()
		if err := r.cmd().Run(); err != nil {
			r.b.Fatal(err)
		}
		r.total += time.Since(start)
		r.runs++
	}
	return true
}

func (r *bwrapRef) report() {
	if r.runs > 0 {
		r.b.ReportMetric(float64(r.total.Nanoseconds())/float64(r.runs), "bwrap-ns/op")
	}
}

// bubblewrapTrue makes bubblewrap's `true` with the isolation Harvey's
// command has (a root of the system's trees and dir, every namespace), or
// nil where bubblewrap is not there or does not run.
func bubblewrapTrue(dir string) func() *exec.Cmd {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil
	}
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}
	for _, p := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64"} {
		args = append(args, "--ro-bind-try", p, p)
	}
	args = append(args, "--bind", dir, dir, "--chdir", dir, "true")
	if exec.Command(bwrap, args...).Run() != nil {
		return nil
	}
	return func() *exec.Cmd { return exec.Command(bwrap, args...) }
}
