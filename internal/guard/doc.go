// Package guard keeps what a command may not change behind the user's
// back: the workspace's .git — what makes the user's next git run a
// program (config, hooks, the .git file, modules, worktrees, locks) and
// what makes it show another history or hide a change (the index's gitlinks
// and skip-worktree bits, replace refs, grafts) — and agents/, Harvey's own
// directory, where the sandbox cannot hide it.
//
// Around every process Harvey starts in the workspace (a command, a hook, a
// call to a stdio MCP server): Command records before it runs and writes a
// journal of that record to the data directory (internal/datadir);
// Guard.Check after it undoes what must not stay, says a line each what it
// undid, and names the files the process changed in the workspace (the
// journal names git's index and the larger hooks by their blobs, kept once
// each: journal_blobs.go; a snapshot takes an index whose stamp is the
// last one's from memory: index_memo.go). Life
// and Guard.Call do the same across a stdio server's whole life. Recover,
// at the next start, runs the check of a journal whose Harvey stopped
// before its check. Protected and Pinned are the same rules as the
// sandbox's mounts: what stays read-only to a command in every git
// directory the workspace uses, and which git directories are pinned.
//
// Git's own syntax is git's: a repository's config is read by asking git
// (git config --includes --show-origin), the index is read in each of its
// versions, and nothing is written through a link. It imports nothing of
// the agent's.
package guard

import "github.com/harvey-agent/harvey/internal/wspath"

// AgentsDir is the workspace's directory that is Harvey's own (the path
// policy's one definition).
const AgentsDir = wspath.AgentsDir
