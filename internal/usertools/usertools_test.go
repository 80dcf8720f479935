package usertools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// builtinName stands for the session's built-in tools (the root's
// builtinToolName): a tool file may not take one's name, in any case.
func builtinName(name string) bool {
	for _, b := range []string{"read_file", "write_file", "run_command"} {
		if strings.EqualFold(b, name) {
			return true
		}
	}
	return false
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readDoc(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseToolFileProblems(t *testing.T) {
	cases := []struct {
		name, file, text string
		want             []string // "line: message part"
	}{
		{"no front matter", "t.md", "Just a description.\n", []string{"1: the file must start with a --- line"}},
		{"unclosed", "t.md", "---\ncommand: [ls]\n", []string{"1: the file must start with a --- line"}},
		{"bad yaml", "t.md", "---\ncommand: [ls\neffect: read\n---\nx\n", []string{"2: invalid YAML"}},
		{"not a mapping", "t.md", "---\n- a\n---\nx\n", []string{"2: the front matter must be a YAML mapping"}},
		{"no command", "t.md", "---\neffect: read\n---\nx\n", []string{"2: no command"}},
		{"empty command", "t.md", "---\ncommand: []\n---\nx\n", []string{"2: command must be a non-empty list"}},
		{"command string", "t.md", "---\ncommand: go test ./...\n---\nx\n", []string{"2: command must be a non-empty list"}},
		{"unknown key", "t.md", "---\ncommand: [ls]\nefect: read\n---\nx\n", []string{`3: unknown key "efect"`}},
		{"unknown type", "t.md", "---\nparameters:\n  p:\n    type: strng\ncommand: [ls, \"{{p}}\"]\n---\nx\n", []string{`4: parameter "p": unknown type "strng"`}},
		{"no type", "t.md", "---\nparameters:\n  p:\n    description: d\ncommand: [ls, \"{{p}}\"]\n---\nx\n", []string{`3: parameter "p" has no type`}},
		{"unknown field", "t.md", "---\nparameters:\n  p:\n    type: string\n    requird: true\ncommand: [ls, \"{{p}}\"]\n---\nx\n", []string{`5: parameter "p": unknown field "requird"`}},
		{"undeclared", "t.md", "---\ncommand:\n  - ls\n  - \"{{path}}\"\n---\nx\n", []string{"4: command uses {{path}}, which is not a declared parameter"}},
		{"program param", "t.md", "---\nparameters:\n  p: {type: string}\ncommand: [\"{{p}}\", x]\n---\nx\n", []string{"4: the program (first command element) cannot be a parameter"}},
		{"array in element", "t.md", "---\nparameters:\n  f: {type: array}\ncommand: [ls, \"--files={{f}}\"]\n---\nx\n", []string{`4: array parameter "f" must be a whole command element`}},
		{"shell -c", "t.md", "---\nparameters:\n  p: {type: string}\ncommand: [bash, -c, \"go test {{p}}\"]\n---\nx\n", []string{"4: a parameter in the inline code"}},
		{"read tool running a workspace script", "t.md", "---\ncommand: [./scripts/lint.sh]\neffect: read\n---\nx\n", []string{"2: a read tool cannot run a program from the workspace (./scripts/lint.sh)"}},
		{"bad effect", "t.md", "---\ncommand: [ls]\neffect: delete\n---\nx\n", []string{`3: effect "delete"`}},
		{"bad timeout", "t.md", "---\ncommand: [ls]\ntimeout: soon\n---\nx\n", []string{"3: timeout: use a number of seconds"}},
		{"long timeout", "t.md", "---\ncommand: [ls]\ntimeout: 2h\n---\nx\n", []string{"3: timeout is over 1h"}},
		{"bad required", "t.md", "---\nparameters:\n  p: {type: string, required: maybe}\ncommand: [ls]\n---\nx\n", []string{`3: parameter "p": required must be true or false`}},
		{"clash with built-in", "agents/tools/read_file.md", "---\ncommand: [cat]\n---\nx\n", []string{`0: tool name "read_file" clashes with a built-in tool`}},
		{"clash in another case", "agents/tools/Read_File.md", "---\ncommand: [cat]\n---\nx\n", []string{`0: tool name "Read_File" clashes with a built-in tool`}},
		{"bad name", "agents/tools/my tool.md", "---\ncommand: [ls]\n---\nx\n", []string{`0: tool name "my tool"`}},
		{"several at once", "t.md", "---\nparameters:\n  x:\n    type: strng\ncommand: [sh, -c, \"echo {{x}} {{y}}\"]\nefect: read\n---\nBroken.\n",
			[]string{`4: parameter "x": unknown type`, "5: command uses {{y}}", "5: a parameter in the inline code", `6: unknown key "efect"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool, probs := Parse(c.file, []byte(c.text), builtinName)
			if tool != nil {
				t.Fatalf("loaded a broken file: %+v", tool)
			}
			var got []string
			for _, p := range probs {
				got = append(got, strings.TrimPrefix(p.Error(), c.file+":"))
			}
			joined := strings.Join(got, "\n")
			for _, w := range c.want {
				line, msg, _ := strings.Cut(w, ": ")
				want := line + ": " + msg
				if line == "0" {
					want = " " + msg
				}
				if !strings.Contains("\n"+joined, "\n"+want) {
					t.Fatalf("problems:\n%s\nwant %q", joined, want)
				}
			}
		})
	}
}

func TestParseToolFileValid(t *testing.T) {
	text := "\ufeff---\r\nparameters:\r\n  package:\r\n    type: string\r\n    description: pkg\r\n    required: true\r\n  level:\r\n    type: string\r\n    enum: [short, long]\r\n  files: {type: array}\r\n  n: {type: integer}\r\ncommand: [go, test, \"-run={{ level }}\", \"--\", \"{{package}}\", \"{{files}}\"]\r\ntimeout: 90\r\neffect: read\r\n---\r\nRun the tests.\r\n"
	tool, probs := Parse("agents/tools/go_test.md", []byte(text), builtinName)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if tool.Name != "go_test" || tool.Description != "Run the tests." || tool.Effect != Read || tool.Timeout.Seconds() != 90 || len(tool.Params) != 4 {
		t.Fatalf("tool = %+v", tool)
	}
	s := mustJSON(t, tool.Schema())
	for _, want := range []string{`"required":["package"]`, `"enum":["short","long"]`, `"files":{"items":{"type":"string"},"type":"array"}`} {
		if !strings.Contains(s, want) {
			t.Fatalf("schema %s lacks %s", s, want)
		}
	}
}

// The examples shipped in docs/ load cleanly (a user copies them).
func TestShippedToolExamplesAreValid(t *testing.T) {
	files, _ := filepath.Glob("../../docs/examples/tools/*.md")
	if len(files) < 2 {
		t.Fatalf("examples = %v", files)
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if tool, probs := Parse("agents/tools/"+filepath.Base(f), data, builtinName); tool == nil || len(probs) > 0 {
			t.Fatalf("%s: %v", f, probs)
		}
	}
}

// Go templates in a command are text, not placeholders.
func TestGoTemplateIsNotAPlaceholder(t *testing.T) {
	tool, probs := Parse("agents/tools/pkgs.md", []byte("---\nparameters:\n  pattern: {type: string, required: true}\ncommand: [go, list, -f, \"{{.ImportPath}} {{len .GoFiles}}\", --, \"{{ pattern }}\"]\neffect: read\n---\nList packages.\n"), nil)
	if tool == nil {
		t.Fatal(probs)
	}
	argv, err := tool.BuildArgv(map[string]any{"pattern": "./..."})
	if err != nil || strings.Join(argv, "|") != "go|list|-f|{{.ImportPath}} {{len .GoFiles}}|--|./..." {
		t.Fatalf("argv = %q %v", argv, err)
	}
}

func TestBuildArgvHostileValues(t *testing.T) {
	tool, probs := Parse("agents/tools/t.md", []byte("---\nparameters:\n  q: {type: string, required: true}\n  opt: {type: string}\n  files: {type: array}\n  n: {type: number}\ncommand: [prog, \"{{q}}\", \"--opt={{opt}}\", \"-n\", \"{{n}}\", \"--\", \"{{files}}\"]\n---\nx\n"), nil)
	if tool == nil {
		t.Fatal(probs)
	}
	cases := []struct {
		args map[string]any
		want []string
		err  string
	}{
		{map[string]any{"q": "; rm -rf ~"}, []string{"prog", "; rm -rf ~", "-n", "--"}, ""},
		{map[string]any{"q": "$(id)", "opt": "`id`"}, []string{"prog", "$(id)", "--opt=`id`", "-n", "--"}, ""},
		{map[string]any{"q": "a\nb"}, []string{"prog", "a\nb", "-n", "--"}, ""},
		{map[string]any{"q": "x", "opt": "-rf", "n": -3.5}, []string{"prog", "x", "--opt=-rf", "-n", "-3.5", "--"}, ""},
		{map[string]any{"q": "x", "files": []any{"-rf", "a b", "c"}}, []string{"prog", "x", "-n", "--", "-rf", "a b", "c"}, ""},
		{map[string]any{"q": "--output=/etc/passwd"}, nil, `argument "q" may not start with "-"`},
		{map[string]any{"q": "-"}, nil, `may not start with "-"`},
		{map[string]any{"q": "a\x00b"}, nil, "NUL byte"},
		{map[string]any{"q": strings.Repeat("x", 9000)}, nil, "too long"},
		{map[string]any{}, nil, `missing required argument "q"`},
		{map[string]any{"q": "x", "files": []any{map[string]any{"a": 1}}}, nil, "expected a plain value"},
	}
	for _, c := range cases {
		argv, err := tool.BuildArgv(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("%v: err = %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(argv, "\x1f") != strings.Join(c.want, "\x1f") {
			t.Fatalf("%v: argv = %q err = %v, want %q", c.args, argv, err, c.want)
		}
	}
}

// Issue 17's user-tool holes: a value that turns a composite element into
// an option, inline-code flags in any spelling, duplicate keys.
func TestUserToolHardening(t *testing.T) {
	tool, probs := Parse("agents/tools/lg.md", []byte("---\nparameters:\n  rev: {type: string, required: true}\ncommand: [git, log, \"{{rev}}..HEAD\"]\neffect: read\n---\nlog\n"), nil)
	if tool == nil {
		t.Fatal(probs)
	}
	if _, err := tool.BuildArgv(map[string]any{"rev": "--output=/tmp/x"}); err == nil {
		t.Fatal("a composite element became an option")
	}
	if argv, err := tool.BuildArgv(map[string]any{"rev": "v1.0"}); err != nil || argv[2] != "v1.0..HEAD" {
		t.Fatalf("%v %v", argv, err)
	}
	for _, cmd := range []string{`[bash, -lc, "echo {{x}}"]`, `[sh, -ec, "echo {{x}}"]`, `[env, FOO=1, sh, -c, "echo {{x}}"]`, `[python3, -c, "print('{{x}}')"]`, `[node, -e, "{{x}}"]`, `[perl, -e, "{{x}}"]`, `[/bin/bash, --norc, -c, "{{x}}"]`} {
		_, probs := Parse("agents/tools/t.md", []byte("---\nparameters:\n  x: {type: string}\ncommand: "+cmd+"\n---\nt\n"), nil)
		if len(probs) == 0 {
			t.Errorf("%s accepted", cmd)
		}
	}
	// Past the code (and a shell's $0), a whole argument is data: the
	// docs' pattern is accepted (issue 62); $0 and a part of an argument
	// are not.
	for cmd, ok := range map[string]bool{
		`[sh, -c, 'go vet "$1" && go test "$1"', sh, "{{x}}"]`:     true,
		`[bash, -lc, 'echo "$1"', bash, "{{x}}"]`:                  true,
		`[python3, -c, "import sys; print(sys.argv[1])", "{{x}}"]`: true,
		`[node, -e, "console.log(process.argv[1])", "{{x}}"]`:      true,
		`[env, A=1, sh, -c, 'echo "$1"', sh, "{{x}}"]`:             true,
		`[sh, -c, 'echo "$0"', "{{x}}"]`:                           false,
		`[sh, -c, 'echo "$1"', sh, "pkg-{{x}}"]`:                   false,
		`[perl, -e, "print 1", -e, "{{x}}"]`:                       false,
		`[sh, -c, "{{x}}", sh]`:                                    false,
	} {
		_, probs := Parse("agents/tools/t.md", []byte("---\nparameters:\n  x: {type: string}\ncommand: "+cmd+"\n---\nt\n"), nil)
		if (len(probs) == 0) != ok {
			t.Errorf("%s: accepted %v, want %v: %v", cmd, len(probs) == 0, ok, probs)
		}
	}
	_, probs = Parse("agents/tools/d.md", []byte("---\ncommand: [ls]\ncommand: [ls, -la]\n---\nd\n"), nil)
	if len(probs) == 0 || !strings.Contains(probs[0].Error(), "duplicate key") || probs[0].Line == 0 {
		t.Fatalf("duplicate key: %v", probs)
	}
}

// The docs' own shell pattern (docs/user-tools.md) passes the loader it
// documents (issue 62: harvey tools validate refused it).
func TestUserToolDocsShellPattern(t *testing.T) {
	doc := readDoc(t, "../../docs/user-tools.md")
	m := regexp.MustCompile("`(command: \\[sh, -c, [^`]*\\])`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/user-tools.md shows no shell pattern")
	}
	_, probs := Parse("agents/tools/vt.md", []byte("---\nparameters:\n  package: {type: string, required: true}\n"+m[1]+"\neffect: read\n---\nVet and test.\n"), nil)
	if len(probs) != 0 {
		t.Errorf("%s: %v", m[1], probs)
	}
}
