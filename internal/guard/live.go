package guard

import "sync"

// Checks that overlap. A check records what must not change before its
// process runs; where a process that is still running can write .git (a
// background job or an MCP server where commands have Landlock only, or
// no sandbox), a check taken meanwhile would record what that process had
// just planted (a core.fsmonitor line) as the state to keep, and put it
// back after its own command, when the running process's check has already
// undone it and may have ended. So a check taken while another is open
// records .git's protected files — its config, hooks, modules/,
// worktrees/, lock files, replace refs, the .git file and the paths git
// runs — as the oldest open check of the workspace recorded them: nothing
// sandboxed may change them, and the open check undoes any change anyway.
// The index, which commands change on purpose (git add), is recorded as
// it is now.

// open are the checks journaled and not done, oldest first.
var open struct {
	sync.Mutex
	guards []*Guard
}

// opened notes c as open (once).
func opened(c *Guard) {
	open.Lock()
	defer open.Unlock()
	for _, g := range open.guards {
		if g == c {
			return
		}
	}
	open.guards = append(open.guards, c)
}

// closed notes c done.
func closed(c *Guard) {
	open.Lock()
	defer open.Unlock()
	for i, g := range open.guards {
		if g == c {
			open.guards = append(open.guards[:i], open.guards[i+1:]...)
			return
		}
	}
}

// oldestOpen is the oldest open check of root's git (nil: none).
func oldestOpen(root string) *gitGuard {
	open.Lock()
	defer open.Unlock()
	for _, g := range open.guards {
		if g.git != nil && g.root == root {
			return g.git
		}
	}
	return nil
}

// inherit takes old's record of the protected files, where g and old
// record the same git directories.
func (g *gitGuard) inherit(old *gitGuard) {
	if g == nil || old == nil || g == old || g.fresh || old.fresh || g.root != old.root || len(g.dirs) != len(old.dirs) {
		return
	}
	for i, d := range g.dirs {
		if old.dirs[i].dir != d.dir {
			return
		}
	}
	g.dotGit, g.paths, g.common = old.dotGit, old.paths, old.common
	for i, d := range g.dirs {
		o := old.dirs[i]
		d.ident, d.files, d.hooks, d.modules, d.worktrees, d.locks = o.ident, o.files, o.hooks, o.modules, o.worktrees, o.locks
		d.replaces, d.replacesLoose = o.replaces, o.replacesLoose
	}
}
