package harvey

import (
	"context"
	"fmt"

	"github.com/harvey-agent/harvey/internal/rag"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/walk"
)

// harvey rag and /rag are internal/rag's; what stays here is the session's
// side: the workspace index built in the background in the REPL, and the
// question before it indexes a home.

// ragEnv is what internal/rag works with in this session.
func ragEnv(a *Agent) rag.Env {
	return rag.Env{Tree: a.Workspace.Tree, Index: a.Workspace.index, Cfg: a.Config.Config, OllamaURL: a.OllamaURL, GenModel: a.ModelName,
		Progress: a.Err, Embedder: newEmbedder}
}

// startIndexing starts the build: in an interactive session with an
// agents/ directory only (a headless run builds the index at its first
// query, if it has one).
func startIndexing(tm *Terminal, ws *Workspace, prev *indexBuild) *indexBuild {
	if !tm.Interactive || ws == nil || !ws.HasAgents() || !askIndexHome(tm, ws) {
		return prev
	}
	prev.stop() // one build at a time
	ctx, cancel := context.WithCancel(context.Background())
	b := &indexBuild{cancel: cancel, done: make(chan struct{})}
	ws.index.MarkBuilding()
	go func() {
		defer close(b.done)
		ws.index.Build(ctx)
	}()
	return b
}

// askIndexHome asks, in the REPL, before the index walks a workspace that
// is your home directory or / (headless, the first query refuses). False:
// no index this session, and the line says which setting allows it.
func askIndexHome(tm *Terminal, ws *Workspace) bool {
	if walk.Refusal(ws.Root, ws.ragBounds(), ws.index.HomeOK.Load()) == nil {
		return true
	}
	ans, err := tm.In.Ask(fmt.Sprintf("%s is your home directory (or /). Index it for find_code? Projects first; caches, toolchains and build output are left out; up to the index's caps. No: Harvey leaves nothing here. [y/N] ", ws.Root))
	if err == nil && termtext.IsYes(ans) {
		ws.index.HomeOK.Store(true)
		return true
	}
	ws.dropAgents.Store(true)
	tm.logf("%s", tm.dim("· no workspace index this session: find_code refuses, and Harvey leaves nothing in this directory when it exits (rag: {workspace: {index_home: true}} in your own config indexes a home)"))
	return false
}

// indexBuild is the index brought up to date in the background when the
// REPL starts, so the model's first find_code does not wait for a whole
// build (a query meanwhile waits for it, then finds it done).
type indexBuild struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// stop cancels the build (what it indexed is kept) and waits for it.
func (b *indexBuild) stop() {
	if b != nil {
		b.cancel()
		<-b.done
	}
}
