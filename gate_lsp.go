package harvey

import (
	"context"
	"time"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/lsp"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/wsfile"
	"github.com/harvey-agent/harvey/internal/wsquery"
)

// lspHost is what the language servers (internal/lsp) get of the session:
// a file the gate changed is shown to its server; its errors end the result.
type lspHost struct{ g *Gate }

func (h lspHost) Sandbox(purpose string) (*sandbox.Spec, error) {
	if err := sandboxpolicy.NoSandboxRefusal(h.g.cfg.Sandbox); err != nil {
		return nil, err
	}
	if !sandbox.Available().Enforced() {
		return nil, nil
	}
	return h.g.commandSandboxFor(purpose), nil
}

func (h lspHost) Env() []string { return runner.EnvFor(h.g.cfg.Sandbox) }

func (h lspHost) Say(line string) { h.g.note(line) } // the gate's note is always set (newAgent)

func (h lspHost) Record(line string) { h.g.log.Record("undone", line, audit.Denied, 0) }

// newLSP is the session's language servers, from your lsp: settings.
func newLSP(g *Gate) *lsp.Manager {
	c := g.cfg.LSP
	return lsp.New(g.ws.Root, lspHost{g}, lsp.Config{Off: c.Off, Servers: c.Servers, Wait: time.Duration(c.Wait),
		Visible: func(rel string) bool { return wsquery.Readable(g.ws.Tree, rel) }})
}

// diagnose is what a language server says of a change the gate just
// committed, waited for until ctx (the turn) ends: errors only for a model
// whose window is under 8k tokens.
func (g *Gate) diagnose(ctx context.Context, fc *wsfile.Change) string {
	if g.lsp == nil || g.bare || fc == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute) // Ctrl-C ends the wait
	defer cancel()
	if d := g.lsp.Diagnose(ctx, fc.Target, fc.Content, g.maxOut() < 8192); d != "" {
		return "\n" + d
	}
	return ""
}
