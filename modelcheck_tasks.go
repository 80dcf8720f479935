package harvey

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

// checkTask is one task of the battery.
type checkTask struct {
	id, title string
	files     map[string]string // written into the workspace before the task
	prompt    string
	kind      taskKind
	// check judges the task by the workspace and the turn's trace.
	check func(ws string, tr *turnTrace) (bool, string)
	// expects is the one effect the task asks for (nil: none): the only
	// call needing approval that the check lets run.
	expects func(ws string, r approvalRequest) bool
}

// expectsChange accepts a change of the file rel (edit_file or
// write_file) and nothing else.
func expectsChange(rel string) func(string, approvalRequest) bool {
	return func(ws string, r approvalRequest) bool {
		if r.change == nil || r.who == byUser || (r.tool != "edit_file" && r.tool != "write_file") {
			return false
		}
		target := r.change.target
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
func expectsCommand(line string) func(string, approvalRequest) bool {
	return func(_ string, r approvalRequest) bool {
		return r.tool == "run_command" && r.change == nil && strings.TrimSpace(strings.TrimPrefix(r.action, "run: ")) == line
	}
}

type taskKind int

const (
	kindAnswer taskKind = iota // no tool should run
	kindRead                   // reading: read, search, list
	kindAct                    // changes and commands: edit, run, several calls
)

// checkBattery is the tasks, with a fresh token so no answer can be
// remembered from an earlier run.
func checkBattery(token string) []checkTask {
	return []checkTask{
		{id: "answer", title: "answer without tools", kind: kindAnswer,
			prompt: "What is the capital of France? Answer in one word. Do not use any tool.",
			check:  checkNoTools},
		{id: "read", title: "read a named file", kind: kindRead,
			files:  map[string]string{"notes.txt": "The launch code is " + token + ".\n"},
			prompt: "Read the file notes.txt and tell me the launch code written in it.",
			check:  resultHas("read_file", token)},
		{id: "search", title: "find a definition (search)", kind: kindRead,
			files: map[string]string{
				"src/billing/invoice.go": "package billing\n\n// computeTotal adds the items up.\nfunc computeTotal(items []int) int {\n\tt := 0\n\tfor _, i := range items {\n\t\tt += i\n\t}\n\treturn t\n}\n",
				"src/main.go":            "package main\n\nfunc main() {}\n",
				"README.md":              "# shop\n",
			},
			prompt: "In which file is the function computeTotal defined? Search the project for it.",
			check:  resultHas("search_files", "invoice.go")},
		{id: "list", title: "list a directory", kind: kindRead,
			files:  map[string]string{"docs/alpha.md": "a\n", "docs/beta.md": "b\n", "docs/gamma.md": "c\n"},
			prompt: "List the files in the docs directory.",
			check:  resultHas("list_files", "alpha.md", "beta.md", "gamma.md")},
		{id: "edit", title: "edit one line", kind: kindAct,
			files:  map[string]string{"config.ini": "name = demo\nport = 8080\ndebug = false\n"},
			prompt: "In the file config.ini, change the port from 8080 to 9090. Change nothing else.",
			check:  checkEditedPort, expects: expectsChange("config.ini")},
		{id: "run", title: "run a command", kind: kindAct,
			prompt: "Run the shell command `echo check-" + token + "` and tell me what it printed.",
			check:  resultHas("run_command", "check-"+token), expects: expectsCommand("echo check-" + token)},
		{id: "two", title: "two calls in one reply", kind: kindAct,
			files:  map[string]string{"a.txt": "alpha " + token + "\n", "b.txt": "beta " + token + "\n"},
			prompt: "Read both files a.txt and b.txt at once (two read_file calls in one reply) and tell me what each contains.",
			check:  checkBothRead(token)},
		{id: "syntax", title: "only asked about syntax", kind: kindAnswer,
			files:  map[string]string{"main.go": "package main\n"},
			prompt: "Do not use any tools and do not read anything. Just explain in one or two sentences what a call to the read_file tool for main.go would look like.",
			check:  checkOnlyDescribed},
		{id: "types", title: "numeric arguments (offset, limit)", kind: kindRead,
			files:  map[string]string{"data.txt": numberedLines(12)},
			prompt: "Read only lines 4 to 6 of data.txt, using read_file's offset and limit arguments.",
			check:  checkLines4to6},
	}
}

// checkBothRead passes when one reply read both files (their lines hold
// token).
func checkBothRead(token string) func(string, *turnTrace) (bool, string) {
	return func(_ string, tr *turnTrace) (bool, string) {
		for _, r := range tr.rounds {
			got := map[string]bool{}
			for _, c := range r.calls {
				for _, w := range []string{"alpha", "beta"} {
					if c.name == "read_file" && !c.failed && strings.Contains(c.result, w+" "+token) {
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
func checkOnlyDescribed(_ string, tr *turnTrace) (bool, string) {
	if n := len(tr.allCalls()); n > 0 {
		return false, "ran a call it was only asked to describe"
	}
	for _, r := range tr.rounds {
		if len(r.unread) > 0 {
			return false, "wrote a call it was only asked to describe"
		}
	}
	return true, ""
}

// checkLines4to6 passes when read_file read exactly lines 4 to 6.
func checkLines4to6(_ string, tr *turnTrace) (bool, string) {
	calls := tr.allCalls()
	for i, c := range calls {
		if c.name == "read_file" && !c.failed && strings.Contains(c.result, "row 4 ") && strings.Contains(c.result, "row 6 ") && !strings.Contains(c.result, "row 9 ") {
			if i > 0 && calls[i-1].failed {
				return true, "after an error result"
			}
			return true, ""
		}
	}
	return false, "no read of exactly those lines" + failedCalls(tr)
}

// checkNoTools passes when no tool ran.
func checkNoTools(_ string, tr *turnTrace) (bool, string) {
	if n := len(tr.allCalls()); n > 0 {
		return false, fmt.Sprintf("called %s for a plain question", termtext.Plural(n, "tool"))
	}
	return true, ""
}

// checkEditedPort passes when config.ini holds the new port and nothing else changed.
func checkEditedPort(ws string, tr *turnTrace) (bool, string) {
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
func resultHas(tool string, want ...string) func(string, *turnTrace) (bool, string) {
	return func(_ string, tr *turnTrace) (bool, string) {
		for _, c := range tr.allCalls() {
			if c.name != tool || c.failed {
				continue
			}
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(c.result, w)
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

func succeeded(tr *turnTrace, tool string) bool {
	for _, c := range tr.allCalls() {
		if c.name == tool && !c.failed {
			return true
		}
	}
	return false
}

func countCalls(tr *turnTrace, tool string) int {
	n := 0
	for _, c := range tr.allCalls() {
		if c.name == tool {
			n++
		}
	}
	return n
}

// failedCalls names the first failed call's error, for the table's note.
func failedCalls(tr *turnTrace) string {
	for _, r := range tr.rounds {
		if len(r.unread) > 0 {
			return "; a printed call could not be read"
		}
		for _, c := range r.calls {
			if c.failed {
				return "; " + c.name + ": " + truncateRunes(termtext.FirstLine(strings.TrimPrefix(c.result, "error: ")), 60)
			}
		}
	}
	return ""
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
