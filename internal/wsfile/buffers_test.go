package wsfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editorBuffers is an editor's open files, as ACP's fs methods give them.
type editorBuffers struct {
	open  map[string]string
	wrote map[string]string
	reads []string
}

func (e *editorBuffers) ReadText(_ context.Context, abs string) (string, error) {
	e.reads = append(e.reads, abs)
	if t, ok := e.open[abs]; ok {
		return t, nil
	}
	b, err := os.ReadFile(abs)
	return string(b), err
}

func (e *editorBuffers) WriteText(_ context.Context, abs, content string) error {
	e.wrote[abs] = content
	return nil
}

// Through an editor's buffers, the gate still decides what is touched
// (agents/, a path outside, a link out refused before the editor is
// asked); what is read and edited is the unsaved buffer, redacted; the
// editor writes, the disk is left to it; the change is journaled for
// /undo.
func TestThroughAnEditorsBuffers(t *testing.T) {
	ws, dir, outside := hostileWorkspace(t)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "out.txt")); err != nil {
		t.Fatal(err)
	}
	okAbs := filepath.Join(dir, "ok.txt")
	ed := &editorBuffers{open: map[string]string{okAbs: "unsaved line\nkey AKIAIOSFODNN7EXAMPLE\n"}, wrote: map[string]string{}}
	rr, err := ReadIn(t.Context(), ws, ed, "ok.txt", 0, 0, 4096)
	if err != nil || !strings.Contains(rr.Text, "unsaved line") || strings.Contains(rr.Text, "AKIAIOSFODNN7EXAMPLE") {
		t.Fatalf("read through the editor: %+v %v", rr, err)
	}
	for _, p := range []string{"agents/harvey.yaml", "../outside/secret.txt", "out.txt"} {
		if _, err := ReadIn(t.Context(), ws, ed, p, 0, 0, 4096); err == nil {
			t.Errorf("%s was read through the editor", p)
		}
		if _, err := ChangeFileIn(t.Context(), ws, ed, p, "x", nil, approverFunc(func() error { return nil }), &Journal{}, "model"); err == nil {
			t.Errorf("%s was written through the editor", p)
		}
	}
	if len(ed.reads) != 1 || len(ed.wrote) != 0 {
		t.Errorf("the editor was asked about a refused path: reads %q, writes %q", ed.reads, ed.wrote)
	}
	j := &Journal{}
	edit := func(old string, _ bool) (string, string, error) {
		return strings.Replace(old, "unsaved line", "edited line", 1), "", nil
	}
	if _, err := ChangeFileIn(t.Context(), ws, ed, "ok.txt", "", edit, approverFunc(func() error { return nil }), j, "model"); err != nil {
		t.Fatal(err)
	}
	if got := ed.wrote[okAbs]; got != "edited line\nkey AKIAIOSFODNN7EXAMPLE\n" {
		t.Errorf("the editor wrote %q", got)
	}
	if b, _ := os.ReadFile(okAbs); string(b) != "fine\n" {
		t.Errorf("the disk was written: %q", b)
	}
	if e, ok := j.Pop(); !ok || e.Old != "unsaved line\nkey AKIAIOSFODNN7EXAMPLE\n" {
		t.Errorf("journal %+v", e)
	}
	// A new file in a new directory: the directory is made by the gate, the file by the editor.
	if _, err := ChangeFileIn(t.Context(), ws, ed, "src/new.go", "package src\n", nil, approverFunc(func() error { return nil }), j, "model"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "src")); err != nil || !fi.IsDir() || ed.wrote[filepath.Join(dir, "src", "new.go")] != "package src\n" {
		t.Errorf("new file: %v %q", err, ed.wrote)
	}
	// A refusal of the approval writes nothing.
	no := errors.New("no")
	if _, err := ChangeFileIn(t.Context(), ws, ed, "ok.txt", "other\n", nil, approverFunc(func() error { return no }), j, "model"); !errors.Is(err, no) || len(ed.wrote) != 2 {
		t.Errorf("refused: %v %q", err, ed.wrote)
	}
}
