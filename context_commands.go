package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/walk"
	"github.com/harvey-agent/harvey/internal/wsindex"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// The original Harvey's planned next steps (issue 46): /context load-dir
// puts a directory's files into the conversation through the path policy,
// within the model's result cap; /template use sends a prompt kept in
// agents/templates/NAME.md. A workspace's templates are prompts, not
// commands: nothing runs, so no confirmation is asked, but a template is
// shown to you before it is sent the first time (remembered by its
// content, in your data directory).

// loadDir is /context load-dir PATH [GLOB]: every text file under PATH
// (GLOB matched against the name, or the path when it holds a /) the
// model may read, redacted, in one context message of at most the result
// cap; what did not fit or was refused is counted and said.
func loadDir(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("usage: /context load-dir PATH [GLOB]")
	}
	glob := ""
	if len(args) == 2 {
		glob = args[1]
		if _, err := path.Match(glob, ""); err != nil {
			return fmt.Errorf("/context load-dir: the pattern %q: %v", glob, err)
		}
	}
	ws := a.Workspace
	rp, err := ws.Resolve(args[0], wspath.OpRead)
	if err != nil {
		return err
	}
	defer rp.Close()
	if rp.Info == nil || !rp.Info.IsDir() {
		return fmt.Errorf("/context load-dir: %s is not a directory (/read reads a file)", termtext.QuotePath(args[0]))
	}
	budget := a.maxOut()
	var b strings.Builder
	var names, over []string
	skipped := map[string]int{}
	sink := walk.DocSink(func(d wsindex.Doc) bool {
		if !globMatches(glob, d.Path) {
			return ctx.Err() == nil
		}
		content, ok := d.Read()
		if !ok {
			return ctx.Err() == nil
		}
		piece := fmt.Sprintf("### %s\n```\n%s\n```\n\n", d.Path, strings.TrimRight(string(content), "\n"))
		if b.Len()+len(piece) > budget {
			over = append(over, d.Path)
			return ctx.Err() == nil
		}
		b.WriteString(piece)
		names = append(names, d.Path)
		return ctx.Err() == nil
	}, skipped)
	walk.Walk(ws.Tree, rp, sink)
	if len(names) == 0 {
		return fmt.Errorf("/context load-dir: no file under %s%s that the model may read", rp.Rel, map[bool]string{true: " matches " + glob, false: ""}[glob != ""])
	}
	a.addContext("/context load-dir "+strings.Join(args, " "), strings.TrimRight(b.String(), "\n"))
	fmt.Fprintf(out, "loaded %s from %s into context (%d bytes)", termtext.Plural(len(names), "file"), rp.Rel, b.Len())
	var left []string
	if len(over) > 0 {
		left = append(left, fmt.Sprintf("%s past the limit of %d bytes (the model's result cap): %s", termtext.Plural(len(over), "file"), budget, strings.Join(termtext.ClipList(over, 5), ", ")))
	}
	for _, why := range slices.Sorted(maps.Keys(skipped)) {
		left = append(left, fmt.Sprintf("%d %s", skipped[why], why))
	}
	if len(left) > 0 {
		fmt.Fprintf(out, "; left out: %s", strings.Join(left, "; "))
	}
	fmt.Fprintln(out)
	return nil
}

// globMatches matches a file's workspace path against a /context
// load-dir pattern: its name, or its whole path when the pattern has a /.
func globMatches(glob, rel string) bool {
	if glob == "" {
		return true
	}
	target := path.Base(rel)
	if strings.Contains(glob, "/") {
		target = rel
	}
	ok, _ := path.Match(glob, target)
	return ok
}

// cmdTemplate is /template list | use NAME [TEXT].
func cmdTemplate(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] == "list" {
		entries, err := a.Workspace.ListInternal(filepath.Join(AgentsDir, "templates"))
		if err != nil || len(entries) == 0 {
			fmt.Fprintln(out, "no templates (agents/templates/NAME.md: a prompt each)")
			return nil
		}
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".md"); ok && e.Type().IsRegular() {
				fmt.Fprintln(out, termtext.Sanitize(n))
			}
		}
		return nil
	}
	if args[0] != "use" || len(args) < 2 || !configfile.ValidServerName(args[1]) {
		return errors.New("usage: /template list | use NAME [TEXT] (agents/templates/NAME.md)")
	}
	b, err := a.Workspace.ReadInternal(filepath.Join(AgentsDir, "templates", args[1]+".md"))
	if err != nil {
		return fmt.Errorf("no template %s (agents/templates/%s.md): %v", args[1], args[1], wspath.ErrText(err))
	}
	text := strings.TrimSpace(string(b))
	if extra := strings.Join(args[2:], " "); extra != "" {
		text += "\n\n" + extra
	}
	if text == "" {
		return fmt.Errorf("the template %s is empty", args[1])
	}
	if firstUse(b) {
		fmt.Fprintf(out, "template %s (agents/templates/%s.md), sent as your prompt:\n%s\n", args[1], args[1], termtext.Sanitize(indent(string(b))))
	}
	return a.chatTurn(ctx, text)
}

// firstUse reports whether a template's content is sent for the first
// time, and remembers it (in your data directory, never the workspace).
func firstUse(content []byte) bool {
	data := datadir.Path()
	if data == "" {
		return true
	}
	mark := filepath.Join(data, "templates-shown", datadir.SHA256Hex(content)[:32])
	if _, err := os.Stat(mark); err == nil {
		return false
	}
	if os.MkdirAll(filepath.Dir(mark), 0o700) == nil {
		os.WriteFile(mark, nil, 0o600)
	}
	return true
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
