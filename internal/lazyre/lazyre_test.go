package lazyre

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	re := New(`^a+$`)
	if !re().MatchString("aaa") || re().MatchString("b") || re() != re() {
		t.Error("not one compiled expression")
	}
}

// No package of Harvey's compiles a regular expression when the program
// starts: a package-level regexp.MustCompile (or Compile) outside a
// function runs at every start of the binary, the sandbox launcher's
// included. Tests' files too: a package's test binary is the launcher of
// its tests and of the benchmarks that time a command. (The benchmarks'
// own program is left out: it is not Harvey.)
func TestNoRegexpCompiledAtStart(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "bench" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			ast.Inspect(g, func(n ast.Node) bool {
				if _, ok := n.(*ast.FuncLit); ok {
					return false // runs when called
				}
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "regexp" && strings.HasPrefix(sel.Sel.Name, "MustCompile") || ok && x.Name == "regexp" && sel.Sel.Name == "Compile" {
							t.Errorf("%s: regexp.%s at start-up: use lazyre.New", fset.Position(call.Pos()), sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
