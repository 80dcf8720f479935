package harvey

import (
	"context"
	"testing"
)

// BenchmarkRunTrue measures what the launcher adds to run_command true
// (BENCHMARKS.md): sandboxed against unconfined in the same run.
func BenchmarkRunTrue(b *testing.B) {
	ws, err := openWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	a := &Agent{Workspace: ws, Config: &ConfigFile{Config: defaultConfig()}}
	for _, mode := range []string{"unconfined", "sandboxed"} {
		b.Run(mode, func(b *testing.B) {
			var sb *sandboxSpec
			if mode == "sandboxed" {
				if !sandboxAvailable().enforced() {
					b.Skip("no Landlock")
				}
				sb = a.commandSandbox()
			}
			for b.Loop() {
				runProcess(context.Background(), procSpec{Dir: ws.Root, Argv: []string{"true"}, Env: baseEnv(), Sandbox: sb})
			}
		})
	}
}
