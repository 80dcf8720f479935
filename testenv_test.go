package harvey

import (
	"bytes"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// testEnv builds an agent on a temp workspace with the fake as backend.
type testEnv struct {
	a      *Agent
	ws     *Workspace
	dir    string
	out    *bytes.Buffer
	errOut *bytes.Buffer
}

func newTestEnv(t *testing.T, f *fakeollama.Server, model string) *testEnv {
	t.Helper()
	dir := t.TempDir()
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	cf, err := configfile.Load(ws.Tree)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	a := newAgent(ws, cf, newLineReader(strings.NewReader("")), out, errOut)
	a.approvals.auto = true
	if f != nil {
		a.OllamaURL = f.URL()
		if err := a.UseModel(t.Context(), model); err != nil {
			t.Fatal(err)
		}
	}
	return &testEnv{a: a, ws: ws, dir: dir, out: out, errOut: errOut}
}
