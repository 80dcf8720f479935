// Package usertools is the user-tool file format (seed 001, adapted): one
// Markdown file per tool, agents/tools/NAME.md in a workspace or
// ~/.config/harvey/tools/NAME.md of your own. YAML front matter declares
// the parameters, the command as an argv list, a timeout, the effect and
// whether it runs async; the body is the description the model reads; the
// file name is the tool name.
//
// The contract:
//   - Parse reads one file and returns the tool, or nil and every problem
//     with its line; Load reads a directory's files (a name used twice is
//     a problem, sorted by file and line).
//   - Arguments only ever become argv elements (BuildArgv): "{{p}}" as a
//     whole element is replaced by the value (an array by one element per
//     item), "--x={{p}}" is substituted as text inside that one element. No
//     shell ever sees them; a parameter in an interpreter's inline code
//     (sh -c SCRIPT, python -c, node -e) is refused when the file is read,
//     and a value that would read as an option is refused when it runs.
//   - Schema is what the model is offered (parameters in the file's order);
//     Confirmation is what the user confirms for a repository's tool.
//   - Where the files are read from, and how a tool runs (the gate, the
//     sandbox, the path policy for "path" parameters), is the caller's.
package usertools

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/lazyre"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
	"gopkg.in/yaml.v3"
)

// The effects a tool file may declare.
const (
	Read  = "read"
	Write = "write"
	Exec  = "exec"
)

// MaxFileBytes is the largest tool file read.
const MaxFileBytes = 64 << 10

// Tool is one loaded tool file.
type Tool struct {
	Name        string
	File        string // agents/tools/NAME.md
	Description string
	Params      []Param // in file order
	Command     []string
	Timeout     time.Duration // 0: run_timeout
	Effect      string        // Read, Write or Exec
	Async       bool          // async: true: a call returns a task id at once (internal/tasks)
	// Env are the variables its command gets besides the filtered
	// environment (env:, NAME=value, literal: never the user's own).
	Env []string
	// Hosts are what its command may reach through the registry proxy
	// besides the public registries and sandbox.hosts (network:): this
	// tool's, not every command's.
	Hosts []string
	// Examples are calls of it (examples:), each checked against its
	// parameters at load; the model sees them where the window allows.
	Examples []map[string]any
}

// Param is one declared parameter.
type Param struct {
	Name        string
	Type        string
	Description string
	Required    bool
	Enum        []string
}

// Problem is a reason a tool file was skipped, with its place.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

var (
	toolNameRE  = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`)
	paramNameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	// A placeholder is {{name}}; other {{...}} text, such as the Go
	// template in go list -f '{{.ImportPath}}', is passed as it is.
	placeholderRE = lazyre.New(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	userParamType = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "path": true, "object": true}
)

// Load parses the tool files among entries of the directory
// label names, read by read (given label/NAME.md).
func Load(entries []fs.DirEntry, label string, read func(string) ([]byte, error), reserved func(string) bool) ([]*Tool, []Problem) {
	var tools []*Tool
	var problems []Problem
	seen := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".md") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := label + "/" + e.Name()
		if !e.Type().IsRegular() {
			problems = append(problems, Problem{File: file, Msg: "not a regular file (" + fsinfo.Kind(e.Type()) + ")"})
			continue
		}
		data, err := read(file)
		if err != nil {
			problems = append(problems, Problem{File: file, Msg: wspath.ErrText(err)})
			continue
		}
		t, probs := Parse(file, data, reserved)
		if t != nil {
			if other, dup := seen[strings.ToLower(t.Name)]; dup {
				probs = append(probs, Problem{File: file, Msg: fmt.Sprintf("tool name %q is already used by %s", t.Name, other)})
				t = nil
			}
		}
		problems = append(problems, probs...)
		if t != nil {
			seen[strings.ToLower(t.Name)] = file
			tools = append(tools, t)
		}
	}
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].File != problems[j].File {
			return problems[i].File < problems[j].File
		}
		return problems[i].Line < problems[j].Line
	})
	return tools, problems
}

// Parse parses one tool file. On any problem it returns a nil tool
// and every problem found, each with its line in the file.
func Parse(file string, data []byte, reserved func(string) bool) (*Tool, []Problem) {
	var probs []Problem
	bad := func(line int, format string, args ...any) {
		probs = append(probs, Problem{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	name := strings.TrimSuffix(path.Base(file), ".md")
	if !toolNameRE().MatchString(name) {
		bad(0, "tool name %q (from the file name) may only use letters, digits, _ and -, up to 64", name)
	} else if reserved != nil && reserved(name) {
		bad(0, "tool name %q clashes with a built-in tool; rename the file", name)
	}
	front, body, offset, ok := splitFrontMatter(data)
	if !ok {
		bad(1, "the file must start with a --- line, then YAML, then a closing --- line")
		return nil, probs
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		line, msg := yamlErrorLine(err)
		if line > 0 {
			line += offset
		}
		bad(line, "invalid YAML: %s", msg)
		return nil, probs
	}
	t := &Tool{Name: name, File: file, Effect: Exec, Description: strings.TrimSpace(string(body))}
	if t.Description == "" {
		t.Description = name
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		bad(offset+1, "the front matter must be a YAML mapping (parameters, command, timeout, effect)")
		return nil, probs
	}
	cmdNode := parseToolKeys(t, doc.Content[0], offset, bad)
	if cmdNode == nil {
		bad(offset+1, "no command: add command: [PROGRAM, ARG, \"{{param}}\"]")
	} else if len(t.Command) > 0 {
		checkCommand(t, cmdNode, offset, bad)
		if prog := t.Command[0]; t.Effect == Read && strings.Contains(prog, "/") && !path.IsAbs(prog) {
			// A read tool runs without asking, and the model can change a
			// script in the workspace (with approval) and then run it.
			bad(cmdNode.Content[0].Line+offset, "a read tool cannot run a program from the workspace (%s): the model could change it first; use effect: exec", prog)
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return t, nil
}

// parseToolKeys reads the front matter's keys into t and returns the
// command node (nil when there is none).
func parseToolKeys(t *Tool, top *yaml.Node, offset int, bad func(int, string, ...any)) *yaml.Node {
	var cmdNode, examples *yaml.Node
	defer func() {
		if examples != nil { // after parameters:, wherever it is written
			t.Examples = parseExamples(t, examples, offset, bad)
		}
	}()
	seenKeys := map[string]int{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		line := k.Line + offset
		if first, dup := seenKeys[k.Value]; dup {
			bad(line, "duplicate key %q (first at line %d)", k.Value, first)
			continue
		}
		seenKeys[k.Value] = line
		switch k.Value {
		case "parameters":
			t.Params = parseParams(v, offset, bad)
		case "command":
			cmdNode = v
			t.Command = parseCommand(v, line, offset, bad)
		case "timeout":
			t.Timeout = parseToolTimeout(v, line, bad)
		case "effect":
			t.Effect = parseEffect(v, line, bad)
		case "async":
			if v.Kind != yaml.ScalarNode || (v.Value != "true" && v.Value != "false") {
				bad(line, "async: use true or false")
			}
			t.Async = v.Value == "true"
		case "env":
			t.Env = parseEnv(v, line, offset, bad)
		case "network":
			t.Hosts = parseHosts(v, line, offset, bad)
		case "examples":
			examples = v
		default:
			bad(line, "unknown key %q (known: parameters, command, timeout, effect, async, env, network, examples; the body is the description)", k.Value)
		}
	}
	return cmdNode
}

func parseCommand(v *yaml.Node, line, offset int, bad func(int, string, ...any)) []string {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		bad(line, "command must be a non-empty list of arguments, e.g. [go, test, \"{{package}}\"]")
		return nil
	}
	var argv []string
	for _, el := range v.Content {
		if el.Kind != yaml.ScalarNode {
			bad(el.Line+offset, "each command element must be a plain string")
			continue
		}
		argv = append(argv, el.Value)
	}
	return argv
}

func parseToolTimeout(v *yaml.Node, line int, bad func(int, string, ...any)) time.Duration {
	d, err := config.ParseDuration(v.Value)
	if err != nil || v.Kind != yaml.ScalarNode {
		bad(line, "timeout: use a number of seconds or a value like \"90s\" or \"5m\"")
	} else if d > time.Hour {
		bad(line, "timeout is over 1h")
	}
	return d
}

func parseEffect(v *yaml.Node, line int, bad func(int, string, ...any)) string {
	switch v.Value {
	case "read":
		return Read
	case "write":
		return Write
	case "exec":
		return Exec
	}
	bad(line, "effect %q: use read, write or exec", v.Value)
	return Exec
}

// splitFrontMatter splits "---\nYAML\n---\nBODY". offset is the number of
// file lines before the YAML (to turn YAML lines into file lines).
func splitFrontMatter(data []byte) (front, body []byte, offset int, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	s := string(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
	if !strings.HasPrefix(s, "---\n") {
		return nil, nil, 0, false
	}
	rest := s[4:]
	end := -1
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		end = 0
	} else if i := strings.Index(rest, "\n---\n"); i >= 0 {
		end = i + 1
	} else if strings.HasSuffix(rest, "\n---") {
		end = len(rest) - 3
	}
	if end < 0 {
		return nil, nil, 0, false
	}
	front = []byte(rest[:end])
	body = []byte(strings.TrimPrefix(rest[end:], "---"))
	return front, body, 1, true
}

// yamlErrorLine splits a yaml.v3 error into its line and message.
func yamlErrorLine(err error) (int, string) {
	msg := strings.ReplaceAll(err.Error(), "\n ", " ")
	if m := config.YAMLLineRE().FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, strings.TrimSpace(msg[len(m[0]):])
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

func parseParams(v *yaml.Node, offset int, bad func(int, string, ...any)) []Param {
	if v.Kind != yaml.MappingNode {
		bad(v.Line+offset, "parameters must be a mapping: NAME: {type: string, description: ..., required: true}")
		return nil
	}
	var out []Param
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, pv := v.Content[i], v.Content[i+1]
		line := k.Line + offset
		p := Param{Name: k.Value}
		if !paramNameRE().MatchString(p.Name) {
			bad(line, "parameter name %q may only use letters, digits and _", p.Name)
			continue
		}
		if pv.Kind != yaml.MappingNode {
			bad(line, "parameter %q must be a mapping with at least a type", p.Name)
			continue
		}
		for j := 0; j+1 < len(pv.Content); j += 2 {
			fk, fv := pv.Content[j], pv.Content[j+1]
			fl := fk.Line + offset
			switch fk.Value {
			case "type":
				p.Type = fv.Value
				if !userParamType[p.Type] {
					bad(fl, "parameter %q: unknown type %q (use string, path, number, integer, boolean, array or object)", p.Name, fv.Value)
				}
			case "description":
				p.Description = strings.TrimSpace(fv.Value)
			case "required":
				b, err := strconv.ParseBool(fv.Value)
				if err != nil || fv.Kind != yaml.ScalarNode {
					bad(fl, "parameter %q: required must be true or false", p.Name)
				}
				p.Required = b
			case "enum":
				if fv.Kind != yaml.SequenceNode || len(fv.Content) == 0 {
					bad(fl, "parameter %q: enum must be a non-empty list", p.Name)
					continue
				}
				for _, e := range fv.Content {
					p.Enum = append(p.Enum, e.Value)
				}
			default:
				bad(fl, "parameter %q: unknown field %q (known: type, description, required, enum)", p.Name, fk.Value)
			}
		}
		if p.Type == "" {
			bad(line, "parameter %q has no type", p.Name)
		}
		out = append(out, p)
	}
	return out
}

// checkCommand validates placeholders: each names a declared parameter,
// arrays only fill a whole element, the program is never a parameter, and
// no parameter lands in a shell's -c script (where it could inject syntax).
func checkCommand(t *Tool, n *yaml.Node, offset int, bad func(int, string, ...any)) {
	declared := map[string]Param{}
	for _, p := range t.Params {
		declared[p.Name] = p
	}
	for i, el := range t.Command {
		line := n.Content[i].Line + offset
		for _, m := range placeholderRE().FindAllStringSubmatch(el, -1) {
			p, ok := declared[m[1]]
			switch {
			case !ok:
				bad(line, "command uses {{%s}}, which is not a declared parameter", m[1])
			case i == 0:
				bad(line, "the program (first command element) cannot be a parameter")
			case p.Type == "array" && el != m[0]:
				bad(line, "array parameter %q must be a whole command element (\"{{%s}}\"), not part of %q", m[1], m[1], el)
			}
		}
		if i > 0 && placeholderRE().MatchString(el) && inlineCode(t.Command, i) {
			bad(line, "a parameter in the inline code of sh -c, bash -lc, python -c, node -e, ... could inject code; pass it as a whole argument after the code (and $0 for a shell), read as \"$1\"")
		}
	}
}

// interpreters take code on the command line after these short flags.
var interpreters = map[string]string{
	"sh": "c", "bash": "c", "dash": "c", "zsh": "c", "ksh": "c", "fish": "c", "ash": "c", "busybox": "c",
	"python": "c", "python3": "c", "python2": "c", "perl": "eE", "ruby": "e", "node": "ep", "deno": "", "php": "rB",
	"lua": "e", "awk": "", "osascript": "e", "pwsh": "c", "powershell": "c", "tclsh": "", "Rscript": "e",
}

// inlineCode reports whether a parameter in argv[i] could become code: i
// is the inline code after an interpreter's flag (sh -c SCRIPT, bash -lc,
// python -c, node -e, perl -e, --command/--eval in any spelling, the code
// inside --eval=...), a flag before it, or a shell's $0 right after its
// script. Past those, a whole argument is data — the docs' pattern, [sh,
// -c, 'go test "$1"', sh, "{{package}}"] — and one not whole is refused
// with the code.
func inlineCode(argv []string, i int) bool {
	j := 0
	if path.Base(argv[0]) == "env" {
		j = 1
		for j < len(argv) && (strings.Contains(argv[j], "=") || strings.HasPrefix(argv[j], "-")) {
			j++
		}
	}
	if j >= len(argv) || j >= i {
		return false
	}
	prog := strings.TrimRight(path.Base(argv[j]), "0123456789.")
	flags, ok := interpreters[prog]
	if !ok {
		flags, ok = interpreters[path.Base(argv[j])]
	}
	if !ok {
		return false
	}
	code := codeElement(argv, j, flags)
	if code < 0 {
		return false
	}
	dataFrom := code + 1
	if _, shell := map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true, "ash": true, "busybox": true}[prog]; shell {
		dataFrom++ // $0: the script's name in its messages
	}
	return i < dataFrom || placeholderRE().FindString(argv[i]) != argv[i]
}

// codeElement is the index of the element that holds inline code for the
// interpreter at argv[j] (whose inline-code short flags are flags), -1
// for none: the argument after its last code flag before the first
// operand, or a --eval=CODE element itself.
func codeElement(argv []string, j int, flags string) int {
	code := -1
	for k := j + 1; k < len(argv); k++ {
		a := argv[k]
		switch {
		case a == "--":
			k = len(argv)
		case a == "--command" || a == "--eval" || a == "--exec":
			code, k = k+1, k+1
		case strings.HasPrefix(a, "--eval=") || strings.HasPrefix(a, "--command="):
			code = k
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], flags):
			code, k = k+1, k+1
		case strings.HasPrefix(a, "-"):
			// another option of the program
		default:
			k = len(argv) // the first operand: a script file, or data after the code
		}
	}
	return code
}

// schema renders the tool's JSON schema for the model, its parameters in
// the file's order (coerce.Ordered).
func (t *Tool) Schema() map[string]any {
	props := coerce.Ordered{Values: map[string]any{}}
	var required []string
	for _, p := range t.Params {
		s := map[string]any{"type": p.Type}
		if p.Description != "" {
			s["description"] = p.Description
		}
		if p.Type == "path" {
			s["type"] = "string"
			s["description"] = strings.TrimSpace(p.Description + " (a path relative to the workspace)")
		}
		if p.Type == "array" {
			s["items"] = map[string]any{"type": "string"}
		}
		if len(p.Enum) > 0 {
			s["enum"] = p.Enum
		}
		props.Keys, props.Values[p.Name] = append(props.Keys, p.Name), s
		if p.Required {
			required = append(required, p.Name)
		}
	}
	m := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

// confirmation says what confirming the tool allows: what it runs, with
// which effect, and whether that asks first — not just the file's own
// description. A read tool that starts a shell or an interpreter is
// marked: its effect is the file's claim, and the program can do what
// any command can, without a question.
func (t *Tool) Confirmation() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): runs %s", t.Name, t.File, termtext.QuoteArgv(t.Command))
	switch t.Effect {
	case Read:
		b.WriteString(" — effect: read, runs without asking")
		if p := InterpreterOf(t.Command); p != "" {
			fmt.Fprintf(&b, " — BUT it starts %s, which can change anything a command can: the file's 'read' is only its claim", p)
		}
	default:
		fmt.Fprintf(&b, " — effect: %s, asks each time", t.Effect)
	}
	if t.Async {
		b.WriteString(" — async: keeps running in the background while the conversation goes on")
	}
	if len(t.Hosts) > 0 {
		b.WriteString(" — may reach " + strings.Join(t.Hosts, ", "))
	}
	if len(t.Env) > 0 {
		b.WriteString(" — sets " + strings.Join(t.Env, " "))
	}
	if d := termtext.FirstLine(t.Description); d != "" {
		b.WriteString(" — says: " + d)
	}
	return b.String()
}

// InterpreterOf is the shell or interpreter argv starts (through env or
// a version suffix: python3.12), or "".
func InterpreterOf(argv []string) string {
	j := 0
	if len(argv) > 0 && path.Base(argv[0]) == "env" {
		j = 1
		for j < len(argv) && (strings.Contains(argv[j], "=") || strings.HasPrefix(argv[j], "-")) {
			j++
		}
	}
	if j >= len(argv) {
		return ""
	}
	base := path.Base(argv[j])
	for _, name := range []string{base, strings.TrimRight(base, "0123456789.")} {
		if _, ok := interpreters[name]; ok {
			return base
		}
	}
	return ""
}
