// Feature: user tools — their files (usertools.go) and their runs
// (usertools_run.go), through the registry and the gate.
package harvey

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/configfile"
)

var builtinName = builtinToolName

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
			tool, probs := parseToolFile(c.file, []byte(c.text), builtinName)
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
	tool, probs := parseToolFile("agents/tools/go_test.md", []byte(text), builtinName)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if tool.Name != "go_test" || tool.Description != "Run the tests." || tool.Effect != EffectRead || tool.Timeout.Seconds() != 90 || len(tool.Params) != 4 {
		t.Fatalf("tool = %+v", tool)
	}
	s := mustJSON(tool.schema())
	for _, want := range []string{`"required":["package"]`, `"enum":["short","long"]`, `"files":{"items":{"type":"string"},"type":"array"}`} {
		if !strings.Contains(s, want) {
			t.Fatalf("schema %s lacks %s", s, want)
		}
	}
}

// The examples shipped in docs/ load cleanly (a user copies them).
func TestShippedToolExamplesAreValid(t *testing.T) {
	files, _ := filepath.Glob("docs/examples/tools/*.md")
	if len(files) < 2 {
		t.Fatalf("examples = %v", files)
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if tool, probs := parseToolFile("agents/tools/"+filepath.Base(f), data, builtinName); tool == nil || len(probs) > 0 {
			t.Fatalf("%s: %v", f, probs)
		}
	}
}

// Go templates in a command are text, not placeholders.
func TestGoTemplateIsNotAPlaceholder(t *testing.T) {
	tool, probs := parseToolFile("agents/tools/pkgs.md", []byte("---\nparameters:\n  pattern: {type: string, required: true}\ncommand: [go, list, -f, \"{{.ImportPath}} {{len .GoFiles}}\", --, \"{{ pattern }}\"]\neffect: read\n---\nList packages.\n"), nil)
	if tool == nil {
		t.Fatal(probs)
	}
	argv, err := tool.buildArgv(map[string]any{"pattern": "./..."})
	if err != nil || strings.Join(argv, "|") != "go|list|-f|{{.ImportPath}} {{len .GoFiles}}|--|./..." {
		t.Fatalf("argv = %q %v", argv, err)
	}
}

func TestBuildArgvHostileValues(t *testing.T) {
	tool, probs := parseToolFile("agents/tools/t.md", []byte("---\nparameters:\n  q: {type: string, required: true}\n  opt: {type: string}\n  files: {type: array}\n  n: {type: number}\ncommand: [prog, \"{{q}}\", \"--opt={{opt}}\", \"-n\", \"{{n}}\", \"--\", \"{{files}}\"]\n---\nx\n"), nil)
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
		argv, err := tool.buildArgv(c.args)
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

// writeTool puts a tool file into the test workspace and reloads.
func writeTool(t *testing.T, env *testEnv, name, text string) {
	t.Helper()
	os.MkdirAll(filepath.Join(env.dir, "agents", "tools"), 0o755)
	if err := os.WriteFile(filepath.Join(env.dir, "agents", "tools", name+".md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if probs := env.a.reloadUserTools(env.a.Workspace, env.a.gate); len(probs) > 0 {
		t.Fatal(probs)
	}
}

func callTool(t *testing.T, env *testEnv, name string, args map[string]any) (string, error) {
	t.Helper()
	if _, _, ok := env.a.Tools.GetTool(name); !ok {
		t.Fatalf("tool %s not registered", name)
	}
	return invokeTool(env.a, name, t.Context(), args)
}

func TestUserToolRuns(t *testing.T) {
	env := newTestEnv(t, nil, "")
	writeTool(t, env, "echo_args", "---\nparameters:\n  text: {type: string, required: true}\ncommand: [printf, \"[%s]\\n\", \"{{text}}\"]\neffect: read\n---\nEcho.\n")
	out, err := callTool(t, env, "echo_args", map[string]any{"text": "; rm -rf ~ $(id) `id` | cat"})
	if err != nil || out != "[; rm -rf ~ $(id) `id` | cat]\n[exit 0]" {
		t.Fatalf("out = %q err = %v", out, err)
	}
	// Runs in the workspace with the filtered environment.
	t.Setenv("OPENAI_API_KEY", "sk-test-secret-value-123456")
	writeTool(t, env, "where", "---\ncommand: [sh, -c, 'pwd; echo key=${OPENAI_API_KEY:-none}']\neffect: read\n---\nWhere.\n")
	out, _ = callTool(t, env, "where", nil)
	real, _ := filepath.EvalSymlinks(env.dir)
	if !strings.Contains(out, real) || !strings.Contains(out, "key=none") {
		t.Fatalf("out = %q", out)
	}
	// The cap and the timeout.
	writeTool(t, env, "many", "---\ncommand: [seq, \"1\", \"200000\"]\neffect: read\n---\nMany lines.\n")
	out, _ = callTool(t, env, "many", nil)
	// Past the cap the head and the tail are kept, the cut said where it is.
	if len(out) > DefaultMaxOutputBytes+200 || !strings.HasPrefix(out, "1\n2\n") || !strings.Contains(out, "bytes of the middle") || !strings.HasSuffix(out, "200000\n[exit 0]") {
		t.Fatalf("cap: %d bytes, tail %q", len(out), out[max(0, len(out)-80):])
	}
	writeTool(t, env, "slow", "---\ncommand: [sh, -c, 'sleep 30 & sleep 30']\ntimeout: 1\neffect: read\n---\nSlow.\n")
	out, _ = callTool(t, env, "slow", nil)
	if !strings.Contains(out, "[timed out after 1s; process group killed]") {
		t.Fatalf("timeout: %q", out)
	}
	// Audit shows each run.
	var audit strings.Builder
	env.a.Audit.Print(&audit, 10)
	if !strings.Contains(audit.String(), "echo_args") {
		t.Fatalf("audit = %s", audit.String())
	}
}

func TestUserToolApprovalsByEffect(t *testing.T) {
	env := newTestEnv(t, nil, "")
	env.a.approvals.auto = false
	for _, eff := range []string{"read", "write", "exec"} {
		writeTool(t, env, "t_"+eff, "---\ncommand: [echo, ran]\neffect: "+eff+"\n---\nT.\n")
	}
	// Headless: read runs, write and exec are refused without --yes.
	if out, err := callTool(t, env, "t_read", nil); err != nil || !strings.Contains(out, "ran") {
		t.Fatalf("read: %q %v", out, err)
	}
	for _, n := range []string{"t_write", "t_exec"} {
		if _, err := callTool(t, env, n, nil); err == nil || !strings.Contains(err.Error(), "needs approval") {
			t.Fatalf("%s: %v", n, err)
		}
	}
	// Interactive: the user sees the exact argv and answers.
	env.a.Interactive = true
	env.a.In = newLineReader(strings.NewReader("n\ny\n"))
	if _, err := callTool(t, env, "t_exec", nil); err == nil || !strings.Contains(err.Error(), "declined") {
		t.Fatalf("declined: %v", err)
	}
	if out, err := callTool(t, env, "t_exec", nil); err != nil || !strings.Contains(out, "ran") {
		t.Fatalf("approved: %q %v", out, err)
	}
	if !strings.Contains(env.errOut.String(), "run t_exec (exec): echo ran") {
		t.Fatalf("prompt = %q", env.errOut.String())
	}
	// Safe mode: only allowlisted programs.
	env.a.Config.SafeMode = true
	env.a.Config.AllowedCommands = []string{"ls"}
	if _, err := callTool(t, env, "t_read", nil); err == nil || !strings.Contains(err.Error(), "safe mode") {
		t.Fatalf("safe mode: %v", err)
	}
}

// A broken file is skipped; the others load; /tools shows the source file;
// reload picks up changes and drops deleted tools.
func TestUserToolsLoadAndReload(t *testing.T) {
	env := newTestEnv(t, nil, "")
	dir := filepath.Join(env.dir, "agents", "tools")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "good.md"), []byte("---\ncommand: [echo, ok]\neffect: read\n---\nGood.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "write_file.md"), []byte("---\ncommand: [echo]\n---\nClash.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.md"), []byte("---\ncommand: [echo\n---\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o644)
	os.Symlink("good.md", filepath.Join(dir, "alias.md"))
	configfile.Trust(env.ws.Root, configfile.TrustTools, configfile.UserToolsSum(env.ws.Tree)) // as the REPL does on a yes
	var out strings.Builder
	err := env.a.Dispatch(t.Context(), "/tools reload", &out)
	if err == nil || !strings.Contains(err.Error(), "3 problems in tool files") {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"agents/tools/alias.md: not a regular file", "agents/tools/broken.md:2: invalid YAML", `agents/tools/write_file.md: tool name "write_file" clashes`, "1 user tools loaded"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	env.a.Dispatch(t.Context(), "/tools", &out)
	if !strings.Contains(out.String(), "good           read   agents/tools/good.md — Good.") {
		t.Fatalf("/tools = %s", out.String())
	}
	if _, h, _ := env.a.Tools.GetTool("write_file"); h == nil {
		t.Fatal("built-in write_file replaced")
	}
	os.Remove(filepath.Join(dir, "good.md"))
	os.Remove(filepath.Join(dir, "write_file.md"))
	os.Remove(filepath.Join(dir, "broken.md"))
	os.Remove(filepath.Join(dir, "alias.md"))
	out.Reset()
	if err := env.a.Dispatch(t.Context(), "/tools check", &out); err != nil || !strings.Contains(out.String(), "0 user tools loaded") {
		t.Fatalf("after delete: %v %s", err, out.String())
	}
	if _, _, ok := env.a.Tools.GetTool("good"); ok {
		t.Fatal("deleted tool still registered")
	}
}

// A scripted model calls a user tool through the real loop; the schema
// reaches the model, and hostile arguments stay one argv element.
func TestUserToolThroughLoop(t *testing.T) {
	f := newFakeOllama(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	writeTool(t, env, "shout", "---\nparameters:\n  word:\n    type: string\n    description: The word\n    required: true\n  times: {type: integer}\ncommand: [printf, \"<%s>\", \"{{word}}\", \"{{times}}\"]\neffect: read\n---\nShout a word.\n")
	f.script(
		toolReply("llama3.2", fakeCall{id: "s1", name: "shout", args: map[string]any{"word": "$(touch pwned)", "times": "2"}}),
		textReply("llama3.2", "Shouted."),
	)
	if err := env.a.RunPrompt(t.Context(), "shout"); err != nil {
		t.Fatal(err)
	}
	reqs := f.chatRequests()
	if !strings.Contains(mustJSON(reqs[0]["tools"]), `"description":"Shout a word."`) {
		t.Fatalf("schema not sent: %s", mustJSON(reqs[0]["tools"]))
	}
	// The parameters reach the model in the file's order (word, then
	// times), not alphabetically.
	f.mu.Lock()
	body := string(f.bodies[0])
	f.mu.Unlock()
	if w, n := strings.Index(body, `"word":{`), strings.Index(body, `"times":{`); w < 0 || n < 0 || w > n {
		t.Errorf("parameters not in the file's order: word at %d, times at %d", w, n)
	}
	m := messagesOf(reqs[1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "<$(touch pwned)><2>\n[exit 0]") {
		t.Fatalf("result = %q", c)
	}
	if _, err := os.Stat(filepath.Join(env.dir, "pwned")); err == nil {
		t.Fatal("argument ran as shell syntax")
	}
	if !strings.Contains(env.errOut.String(), "⚙ shout") {
		t.Fatalf("stderr = %q", env.errOut.String())
	}
}

// Issue 17's user-tool holes: a value that turns a composite element into
// an option, inline-code flags in any spelling, duplicate keys.
func TestUserToolHardening(t *testing.T) {
	tool, probs := parseToolFile("agents/tools/lg.md", []byte("---\nparameters:\n  rev: {type: string, required: true}\ncommand: [git, log, \"{{rev}}..HEAD\"]\neffect: read\n---\nlog\n"), nil)
	if tool == nil {
		t.Fatal(probs)
	}
	if _, err := tool.buildArgv(map[string]any{"rev": "--output=/tmp/x"}); err == nil {
		t.Fatal("a composite element became an option")
	}
	if argv, err := tool.buildArgv(map[string]any{"rev": "v1.0"}); err != nil || argv[2] != "v1.0..HEAD" {
		t.Fatalf("%v %v", argv, err)
	}
	for _, cmd := range []string{`[bash, -lc, "echo {{x}}"]`, `[sh, -ec, "echo {{x}}"]`, `[env, FOO=1, sh, -c, "echo {{x}}"]`, `[python3, -c, "print('{{x}}')"]`, `[node, -e, "{{x}}"]`, `[perl, -e, "{{x}}"]`, `[/bin/bash, --norc, -c, "{{x}}"]`} {
		_, probs := parseToolFile("agents/tools/t.md", []byte("---\nparameters:\n  x: {type: string}\ncommand: "+cmd+"\n---\nt\n"), nil)
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
		_, probs := parseToolFile("agents/tools/t.md", []byte("---\nparameters:\n  x: {type: string}\ncommand: "+cmd+"\n---\nt\n"), nil)
		if (len(probs) == 0) != ok {
			t.Errorf("%s: accepted %v, want %v: %v", cmd, len(probs) == 0, ok, probs)
		}
	}
	_, probs = parseToolFile("agents/tools/d.md", []byte("---\ncommand: [ls]\ncommand: [ls, -la]\n---\nd\n"), nil)
	if len(probs) == 0 || !strings.Contains(probs[0].Error(), "duplicate key") || probs[0].Line == 0 {
		t.Fatalf("duplicate key: %v", probs)
	}
}

// A parameter declared as a path goes through read_file's policy, and the
// program gets the resolved workspace path, never the model's spelling.
func TestUserToolPathParameters(t *testing.T) {
	env := newTestEnv(t, nil, "")
	writeFile(t, env.dir, "src/a.go", "package a\n")
	writeFile(t, env.dir, "private/k.txt", "KEEP-OUT\n")
	writeFile(t, env.dir, ".env", "X=1\n")
	writeFile(t, env.dir, "-n", "dash\n")
	os.Symlink("private", filepath.Join(env.dir, "link"))
	os.Symlink("..", filepath.Join(env.dir, "up"))
	env.a.Config.Permissions = map[string][]string{".": {"read", "write", "exec"}, "private": {}}
	writeTool(t, env, "show", "---\nparameters:\n  file: {type: path, required: true}\ncommand: [cat, \"{{file}}\"]\neffect: read\n---\nShow a file.\n")
	tool, _, _ := env.a.Tools.GetTool("show")
	if s, _ := json.Marshal(tool.Function.Parameters); !strings.Contains(string(s), `"file":{"description":"(a path relative to the workspace)","type":"string"}`) {
		t.Fatalf("schema = %s", s)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "agents/tools/show.md", ".env", "private/k.txt", "link/k.txt", "up/x", "missing.txt"} {
		out, err := callTool(t, env, "show", map[string]any{"file": bad})
		if err == nil || strings.Contains(out, "KEEP-OUT") {
			t.Errorf("%s: not refused: %q %v", bad, out, err)
		}
	}
	out, err := callTool(t, env, "show", map[string]any{"file": "src/../src/a.go"})
	if err != nil || !strings.HasPrefix(out, "package a") {
		t.Fatalf("good path: %q %v", out, err)
	}
	// A file named like an option is passed as ./-n, not read as -n.
	if out, err := callTool(t, env, "show", map[string]any{"file": "-n"}); err != nil || !strings.HasPrefix(out, "dash") {
		t.Fatalf("-n: %q %v", out, err)
	}
	// A tool that writes may name a file that does not exist yet.
	writeTool(t, env, "mk", "---\nparameters:\n  file: {type: path, required: true}\ncommand: [touch, \"{{file}}\"]\neffect: write\n---\nCreate a file.\n")
	env.a.approvals.auto = true
	if _, err := callTool(t, env, "mk", map[string]any{"file": "src/new.txt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(env.dir, "src", "new.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := callTool(t, env, "mk", map[string]any{"file": "private/new.txt"}); err == nil {
		t.Fatal("a write into a denied directory passed")
	}
}

// invokeTool runs a registered tool as the executor would (its coercion
// and typed decoding included), without the loop around it.
func invokeTool(a *Agent, name string, ctx context.Context, args map[string]any) (string, error) {
	_, h, ok := a.Tools.GetTool(name)
	if !ok {
		return "", fmt.Errorf("tool %s not registered", name)
	}
	return h(ctx, args)
}

// The docs' own shell pattern (docs/user-tools.md) passes the loader it
// documents (issue 62: harvey tools validate refused it).
func TestUserToolDocsShellPattern(t *testing.T) {
	doc := readFileT(t, "docs/user-tools.md")
	m := regexp.MustCompile("`(command: \\[sh, -c, [^`]*\\])`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/user-tools.md shows no shell pattern")
	}
	_, probs := parseToolFile("agents/tools/vt.md", []byte("---\nparameters:\n  package: {type: string, required: true}\n"+m[1]+"\neffect: read\n---\nVet and test.\n"), nil)
	if len(probs) != 0 {
		t.Errorf("%s: %v", m[1], probs)
	}
}

// Your own tools (~/.config/harvey/tools/) load in every workspace without
// a question, beside a repository's confirmed ones; a repository's tool of
// the same name is skipped and said; the model calls yours (issue 62).
func TestOwnToolsEveryWorkspace(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	own := filepath.Join(cfg, "harvey", "tools")
	os.MkdirAll(own, 0o755)
	os.WriteFile(filepath.Join(own, "greet.md"), []byte("---\nparameters:\n  who: {type: string, required: true}\ncommand: [printf, \"hello %s\", \"{{who}}\"]\neffect: read\n---\nGreet someone.\n"), 0o644)
	f := newFakeOllama(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	os.MkdirAll(filepath.Join(env.dir, "agents", "tools"), 0o755)
	os.WriteFile(filepath.Join(env.dir, "agents", "tools", "greet.md"), []byte("---\ncommand: [echo, the repository's]\neffect: read\n---\nNot yours.\n"), 0o644)
	var out strings.Builder
	err := env.a.Dispatch(t.Context(), "/tools reload", &out)
	if err == nil || !strings.Contains(out.String(), `agents/tools/greet.md: tool name "greet" is one of your own tools`) || !strings.Contains(out.String(), "1 of yours from ~/.config/harvey/tools/") {
		t.Fatalf("/tools reload: %v\n%s", err, out.String())
	}
	env.a.confirmUserTools(&env.a.Terminal, env.ws) // headless: a repository's unconfirmed tools drop; yours stay
	f.script(toolReply("llama3.2", fakeCall{id: "g", name: "greet", args: map[string]any{"who": "Ada"}}), textReply("llama3.2", "Greeted."))
	if err := env.a.RunPrompt(t.Context(), "greet Ada"); err != nil {
		t.Fatal(err)
	}
	m := messagesOf(f.chatRequests()[1])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, "hello Ada") {
		t.Fatalf("your tool's result: %q", c)
	}
}
