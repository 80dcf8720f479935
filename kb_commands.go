package harvey

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/harvey-agent/harvey/internal/knowledge"
)

// The /kb commands (internal/knowledge's): the only way into the knowledge
// base. The database is opened on first use (start-up stays fast) and
// closed with the session.

func (k *knowledgeStore) knowledgeBase() (*knowledge.Base, error) {
	if k.db != nil {
		return k.db, nil
	}
	kb, err := openKnowledgeBase(k.ws)
	if err != nil {
		return nil, err
	}
	k.db = kb
	return kb, nil
}

// knowledgeStore opens the session's knowledge base at its first use.
type knowledgeStore struct {
	ws *Workspace
	db *knowledge.Base // nil until the first /kb command
}

// cmdKB gets its line as typed (Raw): an observation keeps its quotes;
// the other subcommands split it as every command does.
func cmdKB(_ context.Context, a *Agent, raw []string, out io.Writer) error {
	line := strings.Join(raw, " ")
	args := splitArgs(line)
	sub := "status"
	if len(args) > 0 {
		sub = strings.ToLower(args[0])
		args = args[1:]
	}
	if sub == "help" {
		fmt.Fprintln(out, knowledge.Help)
		return nil
	}
	kb, err := a.kb.knowledgeBase()
	if err != nil {
		return err
	}
	_, text, _ := strings.Cut(strings.TrimSpace(line), " ")
	return knowledge.Do(kb, sub, args, strings.TrimSpace(text), out, a.addContext)
}

// openKnowledgeBase opens (creating or migrating) the knowledge base in the
// workspace's agents/ directory.
func openKnowledgeBase(ws *Workspace) (*knowledge.Base, error) {
	return knowledge.Open(filepath.Join(ws.Root, AgentsDir, "knowledge.db"), AgentsDir+"/knowledge.db")
}
