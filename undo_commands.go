package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/diff"
	"github.com/harvey-agent/harvey/internal/termtext"
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
			fmt.Fprintf(out, "%s  %-10s %s %s\n", e.at.Format("15:04:05"), e.by, what, termtext.Sanitize(e.path))
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
	removed, err := undoChange(a.Workspace, e)
	if errors.Is(err, errUndoStale) {
		return fmt.Errorf("%s changed since %s wrote it; not undone (the change is dropped from /undo)", e.path, e.by)
	}
	if err != nil {
		return err
	}
	if !e.existed {
		a.Audit.Record("undo", e.path, audit.Success, 0)
		also := ""
		if len(removed) > 0 {
			also = " and the empty " + strings.Join(removed, "/, ") + "/ it made"
		}
		fmt.Fprintf(out, "undid %s: removed %s, which it had created%s\n", e.by, e.path, also)
		return nil
	}
	a.Audit.Record("undo", e.path, audit.Success, 0)
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
