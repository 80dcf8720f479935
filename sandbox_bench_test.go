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

	"github.com/harvey-agent/harvey/internal/config"
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
	a := newAgent(ws, &ConfigFile{Config: config.Default()}, newLineReader(strings.NewReader("")), io.Discard, io.Discard)
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
	base, integrities := npmFixture(b, leftpadPackage)
	dir := b.TempDir()
	writeFile(b, dir, "go.mod", "module m\n\ngo 1.21\n")
	writeFile(b, dir, "main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"ok\") }\n")
	writeFile(b, dir, "package.json", `{"name":"app","version":"1.0.0","dependencies":{"leftpad":"1.0.0"}}`)
	writeFile(b, dir, "package-lock.json", fmt.Sprintf(`{"name":"app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"app","version":"1.0.0","dependencies":{"leftpad":"1.0.0"}},"node_modules/leftpad":{"version":"1.0.0","resolved":"%s/leftpad/-/leftpad-1.0.0.tgz","integrity":"%s"}}}`, base, integrities["leftpad"]))
	ws, err := openWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	cfg := config.Default()
	cfg.Sandbox.Hosts = []string{strings.TrimPrefix(base, "http://")}
	a := newAgent(ws, &ConfigFile{Config: cfg}, newLineReader(strings.NewReader("")), io.Discard, io.Discard)
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
