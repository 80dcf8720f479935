package harvey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
)

func TestUndo(t *testing.T) {
	env := newTestEnv(t, nil, "")
	a := env.a
	p := filepath.Join(env.dir, "main.go")
	e2e.WriteFile(t, env.dir, "main.go", "package main\n\nfunc main() {}\n")
	if _, err := dispatch(t, a, "/undo"); err == nil || !strings.Contains(err.Error(), "nothing to undo") {
		t.Fatalf("empty: %v", err)
	}
	// Three changes: an edit, a whole write, a new file.
	if _, err := invokeTool(a, "edit_file", t.Context(), editArgs("main.go", "func main() {}", "func main() { run() }")); err != nil {
		t.Fatal(err)
	}
	if _, err := invokeTool(a, "write_file", t.Context(), map[string]any{"path": "main.go", "content": "package main\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := invokeTool(a, "write_file", t.Context(), map[string]any{"path": "pkg/new.go", "content": "package pkg\n"}); err != nil {
		t.Fatal(err)
	}
	out, _ := dispatch(t, a, "/undo list")
	if !strings.Contains(out, "write_file created pkg/new.go") || !strings.Contains(out, "edit_file  changed main.go") {
		t.Fatalf("list = %q", out)
	}
	// Newest first: the created file goes away, then each version returns.
	if out, err := dispatch(t, a, "/undo"); err != nil || !strings.Contains(out, "removed pkg/new.go") || !strings.Contains(out, "empty pkg/ it made") {
		t.Fatalf("undo create: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(env.dir, "pkg")); err == nil {
		t.Fatal("the directory the write made is still there")
	}
	// A directory that holds something else by then stays.
	invokeTool(a, "write_file", t.Context(), map[string]any{"path": "d1/d2/new.go", "content": "package d2\n"})
	e2e.WriteFile(t, env.dir, "d1/user.txt", "mine\n")
	if out, err := dispatch(t, a, "/undo"); err != nil || !strings.Contains(out, "empty d1/d2/ it made") || strings.Contains(out, "d1/,") {
		t.Fatalf("undo create in made dirs: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(env.dir, "d1", "user.txt")); err != nil {
		t.Fatal("the user's file went with the directory")
	}
	if out, err := dispatch(t, a, "/undo"); err != nil || !strings.Contains(out, "undid write_file on main.go") {
		t.Fatalf("undo write: %q %v", out, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "package main\n\nfunc main() { run() }\n" {
		t.Fatalf("after one undo: %q", b)
	}
	// A file changed since Harvey wrote it is left alone.
	invokeTool(a, "write_file", t.Context(), map[string]any{"path": "main.go", "content": "v2\n"})
	os.WriteFile(p, []byte("edited by the user\n"), 0o644)
	if _, err := dispatch(t, a, "/undo"); err == nil || !strings.Contains(err.Error(), "changed since write_file wrote it") {
		t.Fatalf("changed since: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "edited by the user\n" {
		t.Fatalf("user's edit lost: %q", b)
	}
	// /apply and /write are undoable too.
	os.WriteFile(p, []byte("package main\n\nfunc main() { run() }\n"), 0o644)
	a.AddMessage("assistant", "```go main.go\npackage main // applied\n```")
	dispatch(t, a, "/apply")
	if out, err := dispatch(t, a, "/undo"); err != nil || !strings.Contains(out, "undid /apply on main.go") {
		t.Fatalf("undo apply: %q %v", out, err)
	}
	if out, err := dispatch(t, a, "/undo"); err != nil || !strings.Contains(out, "undid edit_file on main.go") {
		t.Fatalf("undo edit: %q %v", out, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "package main\n\nfunc main() {}\n" {
		t.Fatalf("original not restored: %q", b)
	}
}
