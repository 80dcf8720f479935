package harvey

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/gitrepo"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/wspath"
	"github.com/harvey-agent/harvey/internal/wsquery"
)

// AgentsDir is the workspace subdirectory that holds Harvey's own state
// (harvey.yaml, knowledge.db, sessions/, history). No model-driven tool may
// read, list, search or write it.
const AgentsDir = wspath.AgentsDir

// ErrRefused marks an effect a rule refused (as opposed to one that failed):
// the audit log records it as denied. It is internal/refusal's, the one
// kind every rule refuses with.
var ErrRefused = refusal.ErrRefused

// Workspace is the directory Harvey was started in: the path policy's Tree
// (internal/wspath: every file operation of Harvey's own process goes
// through its os.Root, so no path can leave it, and Resolve is the one
// path gate), and what the session keeps about it.
type Workspace struct {
	*wspath.Tree

	git *gitrepo.Repo // the private git directory (internal/gitrepo), made by openWorkspace

	// secretFree remembers, per file content (its fsinfo.Stamp),
	// whether redaction leaves it unchanged.
	secretFree sync.Map

	// config is the session's configuration, whose permissions: block
	// the path gate reads at every check, so /permissions takes effect at
	// once (nil: everything is allowed).
	config *configfile.File

	// index is the workspace index in this process (internal/wsquery):
	// its syncs one at a time, its build as /rag status and find_code see
	// it, and whether you said yes to indexing your home or /.
	index *wsquery.Store
	// dropAgents: remove agents/ at exit when this start made it (you
	// declined to index your home: Harvey leaves nothing there).
	dropAgents atomic.Bool
}

// openWorkspace opens dir as the workspace (wspath.Open: agents/ made a
// real directory in it) with its private git directory; the path gate
// reads the permissions: block of the session's config at every check.
func openWorkspace(dir string) (*Workspace, error) {
	t, err := wspath.Open(dir)
	if err != nil {
		return nil, err
	}
	w := &Workspace{Tree: t}
	w.index = wsquery.New(t, w.ragBounds)
	w.git = gitrepo.New(t.OSRoot(), t.Root, w.runGitConfig)
	t.SetPermissions(func() map[string][]string {
		if w.config == nil || w.config.Config == nil {
			return nil
		}
		return w.config.Permissions
	})
	return w, nil
}

// ragBounds is the index's walk settings: your config's rag: {workspace:}.
func (w *Workspace) ragBounds() config.RagWorkspace {
	if w.config == nil || w.config.Config == nil {
		return config.RagWorkspace{}
	}
	return w.config.Config.RAG.Workspace
}

// Close releases the workspace root and removes the private git directory.
func (w *Workspace) Close() error {
	w.git.Close()
	if w.MadeAgents() && w.dropAgents.Load() {
		w.OSRoot().RemoveAll(AgentsDir)
	}
	return w.Tree.Close()
}

// readAtMost reads up to limit bytes from r and reports whether more remained.
func readAtMost(r io.Reader, limit int) ([]byte, bool, error) {
	buf, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	if len(buf) > limit {
		return buf[:limit], true, nil
	}
	return buf, false, nil
}

// UserToolsDir is where tool files live, relative to the workspace.
const UserToolsDir = wspath.UserToolsDir

// runGitConfig runs git for the private directory's config reading, with
// the environment and the sandbox every git gets.
func (ws *Workspace) runGitConfig(ctx context.Context, home string, argv []string) []byte {
	res := runner.Run(ctx, runner.Proc{Dir: home, Argv: argv, Env: gitrepo.Env(home), Timeout: 10 * time.Second, Limit: 1 << 20, SplitStderr: true, Sandbox: sandboxpolicy.GitSpec(ws.Root, home)})
	return res.Output
}
