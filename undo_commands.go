package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/harvey-agent/harvey/internal/diff"
)

// /undo: the file changes of the session, undone newest first.

func cmdUndo(_ context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "list" {
		entries := a.gate.undo.list()
		if len(entries) == 0 {
			fmt.Fprintln(out, "nothing to undo")
		}
		for i := len(entries) - 1; i >= 0; i-- {
			e := entries[i]
			what := "changed"
			if !e.existed {
				what = "created"
			}
			fmt.Fprintf(out, "%s  %-10s %s %s\n", e.at.Format("15:04:05"), e.by, what, sanitizeForTerminal(e.path))
		}
		return nil
	}
	if len(args) > 0 {
		return a.commands.usageError("undo")
	}
	e, ok := a.gate.undo.pop()
	if !ok {
		return errors.New("nothing to undo")
	}
	exists, same, err := fileHolds(a.Workspace, e.path, e.wrote)
	if err != nil && exists {
		return fmt.Errorf("%s: %v; not undone", e.path, err)
	}
	if !exists || !same {
		return fmt.Errorf("%s changed since %s wrote it; not undone (the change is dropped from /undo)", e.path, e.by)
	}
	if !e.existed {
		if err := removeWorkspaceFile(a.Workspace, e.path); err != nil {
			return err
		}
		// The directories the write created go too, innermost first,
		// each only if nothing else was put in it since.
		var removed []string
		for i := len(e.dirs) - 1; i >= 0 && removeEmptyWorkspaceDir(a.Workspace, e.dirs[i]); i-- {
			removed = append(removed, e.dirs[i]+"/")
		}
		a.Audit.Record("undo", e.path, AuditSuccess, 0)
		also := ""
		if len(removed) > 0 {
			also = " and the empty " + strings.Join(removed, ", ") + " it made"
		}
		fmt.Fprintf(out, "undid %s: removed %s, which it had created%s\n", e.by, e.path, also)
		return nil
	}
	if _, _, err := writeWorkspaceFile(a.Workspace, e.path, e.old); err != nil {
		return err
	}
	a.Audit.Record("undo", e.path, AuditSuccess, 0)
	diff := diff.Unified(e.path, e.wrote, e.old, true)
	fmt.Fprintf(out, "undid %s on %s (%s)\n", e.by, e.path, diffStat(diff))
	return nil
}

// diffStat counts a unified diff's added and removed lines.
func diffStat(diff string) string {
	add, del := 0, 0
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			add++
		case strings.HasPrefix(l, "-"):
			del++
		}
	}
	return fmt.Sprintf("+%d -%d lines", add, del)
}
