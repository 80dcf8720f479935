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
	"github.com/harvey-agent/harvey/internal/wsfile"
)

// /undo: the file changes of the session, undone newest first.

func cmdUndo(_ context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "list" {
		entries := a.gate.undo.List()
		if len(entries) == 0 {
			fmt.Fprintln(out, "nothing to undo")
		}
		for i := len(entries) - 1; i >= 0; i-- {
			e := entries[i]
			what := "changed"
			if !e.Existed {
				what = "created"
			}
			fmt.Fprintf(out, "%s  %-10s %s %s\n", e.At.Format("15:04:05"), e.By, what, termtext.Sanitize(e.Path))
		}
		return nil
	}
	if len(args) > 0 {
		return a.commands.usageError("undo")
	}
	e, ok := a.gate.undo.Pop()
	if !ok {
		return errors.New("nothing to undo")
	}
	removed, err := wsfile.Undo(a.Workspace.Tree, e)
	if errors.Is(err, wsfile.ErrUndoStale) {
		return fmt.Errorf("%s changed since %s wrote it; not undone (the change is dropped from /undo)", e.Path, e.By)
	}
	if err != nil {
		return err
	}
	if !e.Existed {
		a.Audit.Record("undo", e.Path, audit.Success, 0)
		also := ""
		if len(removed) > 0 {
			also = " and the empty " + strings.Join(removed, "/, ") + "/ it made"
		}
		fmt.Fprintf(out, "undid %s: removed %s, which it had created%s\n", e.By, e.Path, also)
		return nil
	}
	a.Audit.Record("undo", e.Path, audit.Success, 0)
	diff := diff.Unified(e.Path, e.Wrote, e.Old, true)
	fmt.Fprintf(out, "undid %s on %s (%s)\n", e.By, e.Path, diffStat(diff))
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
