// Test support: helpers the tests of the root package share.
package harvey

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/walk"
	"github.com/harvey-agent/harvey/internal/wsfile"
	"github.com/harvey-agent/harvey/internal/wspath"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

func fc(name, args string) anyllm.FunctionCall {
	return anyllm.FunctionCall{Name: name, Arguments: args}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// runtimeMem measures bytes allocated between start and grown.
type runtimeMem struct{ before uint64 }

func (m *runtimeMem) start() {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.before = s.TotalAlloc
}

func (m *runtimeMem) grown() uint64 {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.TotalAlloc - m.before
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

// settleGoroutines waits until the goroutine count stops changing and
// returns it (for leak checks).
func settleGoroutines() int {
	n := 0
	for i := 0; i < 50; i++ {
		runtime.GC()
		n = runtime.NumGoroutine()
		time.Sleep(20 * time.Millisecond)
		if n == runtime.NumGoroutine() {
			break
		}
	}
	return n
}

// writeWorkspaceFile writes content to p through the path gate with no
// approval between (the resolution and the write a commit makes): what
// the boundary and crash tests attack.
func writeWorkspaceFile(ws *Workspace, p, content string) (existed bool, made []string, err error) {
	rp, err := ws.Resolve(p, wspath.OpWrite)
	if err != nil {
		return false, nil, err
	}
	defer rp.Close()
	made, err = wsfile.WriteResolved(ws.Tree, rp, content)
	return rp.Info != nil, made, err
}

// commandSandbox is the sandbox for a command the user or the model runs
// in the workspace: writes in the workspace (agents/ and .git/ read-only),
// TMPDIR, the caches and the user's paths; in safe mode only the
// allowlisted programs execute.
func (g *Gate) commandSandbox() *sandbox.Spec {
	return g.commandSandboxFor("run")
}

// searchWorkspace runs pattern over the files under p (internal/walk's
// Search, with the workspace's redaction cache): the text, and how many
// matches it shows.
func searchWorkspace(ctx context.Context, ws *Workspace, pattern, p string, maxBytes int) (string, int, error) {
	h, err := walk.Search(ctx, ws.Tree, &ws.secretFree, pattern, p, maxBytes)
	return h.Text, h.Shown, err
}
