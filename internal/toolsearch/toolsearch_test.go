package toolsearch

import (
	"fmt"
	"strings"
	"testing"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

func tool(name, desc string, params map[string]any, required ...string) anyllm.Tool {
	p := map[string]any{"type": "object", "properties": params}
	if len(required) > 0 {
		p["required"] = required
	}
	return anyllm.Tool{Type: "function", Function: anyllm.Function{Name: name, Description: desc, Parameters: p}}
}

// catalog120 is a large server's catalog: GitHub-like tools among 110
// others that share words.
func catalog120() []anyllm.Tool {
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	tools := []anyllm.Tool{
		tool("github__create_issue", "Create a new issue in a GitHub repository.", map[string]any{"owner": str("Repository owner"), "repo": str("Repository name"), "title": str("Issue title"), "body": str("Issue body")}, "owner", "repo", "title"),
		tool("github__list_pull_requests", "List pull requests in a repository.", map[string]any{"owner": str(""), "repo": str(""), "state": map[string]any{"type": "string", "enum": []any{"open", "closed", "all"}}}, "owner", "repo"),
		tool("github__get_file_contents", "Get the contents of a file or directory from a repository.", map[string]any{"path": str("Path to the file")}, "path"),
		tool("jira__transitionIssue", "Move a Jira issue to another status.", map[string]any{"key": str("Issue key"), "to": str("Target status")}, "key", "to"),
		tool("db__run_query", "Run a read-only SQL query against the database.", map[string]any{"sql": str("The SELECT statement"), "limit": map[string]any{"type": "integer"}}, "sql"),
		tool("fs__search_files", "Search files by glob in allowed directories.", map[string]any{"pattern": str("")}, "pattern"),
		tool("browser__take_screenshot", "Take a screenshot of the current page.", map[string]any{"fullPage": map[string]any{"type": "boolean"}}),
		tool("slack__post_message", "Post a message to a Slack channel.", map[string]any{"channel": str(""), "text": str("")}, "channel", "text"),
		tool("k8s__get_pods", "List the pods of a Kubernetes namespace.", map[string]any{"namespace": str("")}),
		tool("tags__add", "Add tags to items.", map[string]any{"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}),
	}
	for i := range 110 {
		tools = append(tools, tool(fmt.Sprintf("misc__op_%03d", i), fmt.Sprintf("Operation %d on records of the repository index.", i), map[string]any{"id": str("Record id")}, "id"))
	}
	return tools
}

// Words a model would use find the tool: its description's, its name's
// pieces, a plural, a camelCase name; the result is signature lines, the
// best first, at most MaxFound.
func TestSearchFindsByWhatAModelWouldSay(t *testing.T) {
	c := New(catalog120(), 4000)
	for query, want := range map[string]string{
		"create an issue on github":    "github__create_issue(owner: string, repo: string, title: string, body?: string): Create a new issue",
		"list open pull requests":      "github__list_pull_requests(owner: string, repo: string, state?: open|closed|all)",
		"github__get_file_contents":    "github__get_file_contents(path: string)",
		"transition issue status jira": "jira__transitionIssue(",
		"sql query":                    "db__run_query(sql: string, limit?: integer)",
		"screenshot":                   "browser__take_screenshot(fullPage?: boolean)",
		"tags":                         "tags__add(items?: string[])",
	} {
		got, n := c.Search(query)
		lines := strings.Split(strings.TrimSpace(got), "\n")
		if n < 1 || n > MaxFound || len(lines) != n+1 || !strings.HasPrefix(lines[1], want) {
			t.Errorf("%q: %d found\n%s\nwant first %q", query, n, got, want)
		}
	}
	if got, n := c.Search("kubernetes deployment rollback zzz"); n != 0 && !strings.Contains(got, "k8s__get_pods") {
		t.Errorf("a partial match: %s", got)
	}
	if got, n := c.Search("quantum entanglement"); n != 0 || !strings.Contains(got, "no tool matches") {
		t.Errorf("nothing: %s", got)
	}
	if got, _ := c.Search("  the a "); !strings.Contains(got, "query is empty") {
		t.Errorf("stop words only: %s", got)
	}
}

// What is found becomes callable (Found, the latest last) within the
// budget; one tool is found even past it; a tool called by name is found
// too; a nil or empty catalog finds nothing.
func TestFoundStaysWithinTheBudget(t *testing.T) {
	tools := catalog120()
	one := Tokens(tools[0])
	c := New(tools, one*2+one/2)
	c.Search("create issue")
	c.Search("pull requests")
	c.Search("sql query")
	var names []string
	used := 0
	for _, f := range c.Found() {
		names = append(names, f.Function.Name)
		used += Tokens(f)
	}
	if len(names) == 0 || names[len(names)-1] != "db__run_query" || used > one*2+one/2 {
		t.Errorf("found %v (%d tokens)", names, used)
	}
	small := New(tools, 1)
	if got, n := small.Search("create issue github"); n != 1 || len(small.Found()) != 1 {
		t.Errorf("past the budget, one: %d %s", n, got)
	}
	c.Use("slack__post_message")
	if f := c.Found(); f[len(f)-1].Function.Name != "slack__post_message" {
		t.Errorf("called by name: %v", f)
	}
	c.Use("not_in_the_catalog")
	if c.Has("not_in_the_catalog") || !c.Has("misc__op_007") {
		t.Error("Has")
	}
	var none *Catalog
	if none.Len() != 0 || none.Has("x") || none.Found() != nil {
		t.Error("a nil catalog")
	}
	if got, _ := New(nil, 100).Search("x"); !strings.Contains(got, "no tools are left out") {
		t.Error(got)
	}
}

// The schema says how many tools are searched, in few tokens.
func TestSchemaIsSmall(t *testing.T) {
	s := Schema(117)
	if !strings.Contains(s.Function.Description, "117 more tools") || Tokens(s) > 110 {
		t.Errorf("%d tokens: %s", Tokens(s), s.Function.Description)
	}
}

func BenchmarkSearch120(b *testing.B) {
	c := New(catalog120(), 4000)
	for b.Loop() {
		c.Search("create an issue on github")
	}
}
