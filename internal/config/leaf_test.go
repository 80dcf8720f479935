package config

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The schema every part of Harvey reads imports no other package of
// Harvey's (issue 64): what renders a hook or a server for people is
// internal/configfile's, so nothing that reads a setting pulls in the
// redaction, the terminal's text or anything above them.
func TestConfigIsALeaf(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(p, "github.com/harvey-agent/harvey/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
