package harvey

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/rag"
)

// ragCommand is harvey rag ARGS: the workspace index and the RAG stores
// from the command line (internal/rag does the work; /rag is the same in the
// REPL).
func ragCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ws, err := openWorkspace(".")
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	defer ws.Close()
	if err := ws.EnsureAgents(); err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	// permissions: as the session reads them (yours, and the workspace's
	// the stricter way until you confirm it).
	cf, _ := configfile.Load(ws.Tree)
	if cf == nil {
		cf = &configfile.File{Config: config.Default()}
	}
	ws.config = cf
	env := rag.Env{Tree: ws.Tree, Index: ws.index, Cfg: cf.Config, OllamaURL: resolveOllamaURL("", cf.Config.OllamaURL), GenModel: cf.Config.Model,
		Progress: stderr, Embedder: newEmbedder}
	if err := rag.Do(ctx, env, args, stdout); err != nil {
		fmt.Fprintf(stderr, "harvey rag: %s\n", err)
		if len(args) == 0 || strings.HasPrefix(err.Error(), "usage: ") {
			return 2 // bad usage, as the README's exit statuses say
		}
		return 1
	}
	return 0
}
