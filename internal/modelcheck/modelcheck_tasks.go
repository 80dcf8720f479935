// Package modelcheck is harvey model check's battery and report: nine
// short tasks (Battery), each judged by what happened in the throw-away
// workspace and the turn's Trace — how the calls came, what they returned —
// never by the words of the answer; the report per model (Report: its
// rows, the server's rates, Judge's grade and verdict), the table and the
// recommendation (WriteReport, Recommend), and the saved results /model
// and the menu show (Save, Last, Failed). Running the tasks is the
// session's (the root's modelcheck.go); a task's expected effect is read
// from the approval it asks for (Effect).
package modelcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harvey-agent/harvey/internal/termtext"
)

// The model check's battery: nine short tasks, each judged by what
// happened in the throw-away workspace and the turn's trace, never by the
// words of the answer.

// Task is one task of the battery.
type Task struct {
	ID, Title string
	Files     map[string]string // written into the workspace before the task
	Prompt    string
	Kind      Kind
	// check judges the task by the workspace and the turn's trace.
	Check func(ws string, tr *Trace) (bool, string)
	// expects is the one effect the task asks for (nil: none): the only
	// call needing approval that the check lets run.
	Expects func(ws string, r Effect) bool
}

// Effect is what a call asked approval for, as a task's expectation reads
// it: the tool, the action in words, and for a file change its target.
type Effect struct {
	Tool, Action string
	Change       bool   // a file change (edit_file, write_file)
	Target       string // its target, absolute or relative to the workspace
	ByUser       bool   // the user's own command, not the model's
}

// expectsChange accepts a change of the file rel (edit_file or
// write_file) and nothing else.
func expectsChange(rel string) func(string, Effect) bool {
	return func(ws string, r Effect) bool {
		if !r.Change || r.ByUser || (r.Tool != "edit_file" && r.Tool != "write_file") {
			return false
		}
		target := r.Target
		if filepath.IsAbs(target) {
			t, err := filepath.Rel(ws, target)
			if err != nil {
				return false
			}
			target = t
		}
		return filepath.ToSlash(filepath.Clean(target)) == rel
	}
}

// expectsCommand accepts run_command with exactly line.
func expectsCommand(line string) func(string, Effect) bool {
	return func(_ string, r Effect) bool {
		return r.Tool == "run_command" && !r.Change && strings.TrimSpace(strings.TrimPrefix(r.Action, "run: ")) == line
	}
}

type Kind int

const (
	KindAnswer Kind = iota // no tool should run
	KindRead               // reading: read, search, list
	KindAct                // changes and commands: edit, run, several calls
)

// Battery is the tasks, with a fresh token so no answer can be
// remembered from an earlier run.
func Battery(token string) []Task {
	return []Task{
		{ID: "answer", Title: "answer without tools", Kind: KindAnswer,
			Prompt: "What is the capital of France? Answer in one word. Do not use any tool.",
			Check:  checkNoTools},
		{ID: "read", Title: "read a named file", Kind: KindRead,
			Files:  map[string]string{"notes.txt": "The launch code is " + token + ".\n"},
			Prompt: "Read the file notes.txt and tell me the launch code written in it.",
			Check:  resultHas("read_file", token)},
		{ID: "search", Title: "find a definition (search)", Kind: KindRead,
			Files: map[string]string{
				"src/billing/invoice.go": "package billing\n\n// computeTotal adds the items up.\nfunc computeTotal(items []int) int {\n\tt := 0\n\tfor _, i := range items {\n\t\tt += i\n\t}\n\treturn t\n}\n",
				"src/main.go":            "package main\n\nfunc main() {}\n",
				"README.md":              "# shop\n",
			},
			Prompt: "In which file is the function computeTotal defined? Search the project for it.",
			Check:  resultHas("search_files", "invoice.go")},
		{ID: "list", Title: "list a directory", Kind: KindRead,
			Files:  map[string]string{"docs/alpha.md": "a\n", "docs/beta.md": "b\n", "docs/gamma.md": "c\n"},
			Prompt: "List the files in the docs directory.",
			Check:  resultHas("list_files", "alpha.md", "beta.md", "gamma.md")},
		{ID: "edit", Title: "edit one line", Kind: KindAct,
			Files:  map[string]string{"config.ini": "name = demo\nport = 8080\ndebug = false\n"},
			Prompt: "In the file config.ini, change the port from 8080 to 9090. Change nothing else.",
			Check:  checkEditedPort, Expects: expectsChange("config.ini")},
		{ID: "run", Title: "run a command", Kind: KindAct,
			Prompt: "Run the shell command `echo check-" + token + "` and tell me what it printed.",
			Check:  resultHas("run_command", "check-"+token), Expects: expectsCommand("echo check-" + token)},
		{ID: "two", Title: "two calls in one reply", Kind: KindAct,
			Files:  map[string]string{"a.txt": "alpha " + token + "\n", "b.txt": "beta " + token + "\n"},
			Prompt: "Read both files a.txt and b.txt at once (two read_file calls in one reply) and tell me what each contains.",
			Check:  checkBothRead(token)},
		{ID: "syntax", Title: "only asked about syntax", Kind: KindAnswer,
			Files:  map[string]string{"main.go": "package main\n"},
			Prompt: "Do not use any tools and do not read anything. Just explain in one or two sentences what a call to the read_file tool for main.go would look like.",
			Check:  checkOnlyDescribed},
		{ID: "types", Title: "numeric arguments (offset, limit)", Kind: KindRead,
			Files:  map[string]string{"data.txt": numberedLines(12)},
			Prompt: "Read only lines 4 to 6 of data.txt, using read_file's offset and limit arguments.",
			Check:  checkLines4to6},
	}
}

// checkBothRead passes when one reply read both files (their lines hold
// token).
func checkBothRead(token string) func(string, *Trace) (bool, string) {
	return func(_ string, tr *Trace) (bool, string) {
		for _, r := range tr.Rounds {
			got := map[string]bool{}
			for _, c := range r.Calls {
				for _, w := range []string{"alpha", "beta"} {
					if c.Name == "read_file" && !c.Failed && strings.Contains(c.Result, w+" "+token) {
						got[w] = true
					}
				}
			}
			if got["alpha"] && got["beta"] {
				return true, ""
			}
		}
		if reads := countCalls(tr, "read_file"); reads >= 2 {
			return false, "one call per reply"
		}
		return false, "did not read both files" + failedCalls(tr)
	}
}

// checkOnlyDescribed passes when no call ran or was written as text.
func checkOnlyDescribed(_ string, tr *Trace) (bool, string) {
	if n := len(tr.Calls()); n > 0 {
		return false, "ran a call it was only asked to describe"
	}
	for _, r := range tr.Rounds {
		if len(r.Unread) > 0 {
			return false, "wrote a call it was only asked to describe"
		}
	}
	return true, ""
}

// checkLines4to6 passes when read_file read exactly lines 4 to 6.
func checkLines4to6(_ string, tr *Trace) (bool, string) {
	calls := tr.Calls()
	for i, c := range calls {
		if c.Name == "read_file" && !c.Failed && strings.Contains(c.Result, "row 4 ") && strings.Contains(c.Result, "row 6 ") && !strings.Contains(c.Result, "row 9 ") {
			if i > 0 && calls[i-1].Failed {
				return true, "after an error result"
			}
			return true, ""
		}
	}
	return false, "no read of exactly those lines" + failedCalls(tr)
}

// checkNoTools passes when no tool ran.
func checkNoTools(_ string, tr *Trace) (bool, string) {
	if n := len(tr.Calls()); n > 0 {
		return false, fmt.Sprintf("called %s for a plain question", termtext.Plural(n, "tool"))
	}
	return true, ""
}

// checkEditedPort passes when config.ini holds the new port and nothing else changed.
func checkEditedPort(ws string, tr *Trace) (bool, string) {
	b, err := os.ReadFile(filepath.Join(ws, "config.ini"))
	if err != nil || string(b) != "name = demo\nport = 9090\ndebug = false\n" {
		return false, "config.ini is not as asked" + failedCalls(tr)
	}
	if !succeeded(tr, "edit_file") {
		return true, "rewrote the file instead of edit_file"
	}
	return true, ""
}

func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "row %d of the data\n", i)
	}
	return b.String()
}

// resultHas passes when a call to tool succeeded with every want in its
// result.
func resultHas(tool string, want ...string) func(string, *Trace) (bool, string) {
	return func(_ string, tr *Trace) (bool, string) {
		for _, c := range tr.Calls() {
			if c.Name != tool || c.Failed {
				continue
			}
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(c.Result, w)
			}
			if ok {
				return true, ""
			}
		}
		if countCalls(tr, tool) == 0 {
			return false, "no " + tool + " call" + failedCalls(tr)
		}
		return false, tool + " did not return what was asked" + failedCalls(tr)
	}
}

func succeeded(tr *Trace, tool string) bool {
	for _, c := range tr.Calls() {
		if c.Name == tool && !c.Failed {
			return true
		}
	}
	return false
}

func countCalls(tr *Trace, tool string) int {
	n := 0
	for _, c := range tr.Calls() {
		if c.Name == tool {
			n++
		}
	}
	return n
}

// failedCalls names the first failed call's error, for the table's note.
func failedCalls(tr *Trace) string {
	for _, r := range tr.Rounds {
		if len(r.Unread) > 0 {
			return "; a printed call could not be read"
		}
		for _, c := range r.Calls {
			if c.Failed {
				return "; " + c.Name + ": " + TruncateRunes(termtext.FirstLine(strings.TrimPrefix(c.Result, "error: ")), 60)
			}
		}
	}
	return ""
}

func TruncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
