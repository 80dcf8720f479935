// Package toolsearch is the catalog of the tools a turn could not offer a
// model in full (its window's tool budget was spent): tool_search finds
// them by name, description and parameters, and what it finds becomes
// callable from the next request of the turn.
//
// Contract:
//   - Nothing is unreachable because the window is small: every tool left
//     out by the budget is in the catalog, found by words a model would use
//     ("github issue", "create_issue", "list pull requests"), and callable
//     by its exact name (a cut result names read_output).
//   - What a search returns fits its budget: each tool as one compact
//     signature line (name(param: type, ...): description) in the result,
//     never the whole catalog; at most MaxFound tools a search.
//   - Ranking is BM25 over the words of each tool (names split at _ - . and
//     case changes), in memory: a catalog is hundreds of tools, searched in
//     microseconds, with nothing on disk (SQLite FTS5 would add a database
//     per session for the same ranking).
//   - A Catalog is safe for concurrent use.
package toolsearch

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

// Name is the tool's name; MaxFound the most tools one search returns.
const (
	Name     = "tool_search"
	MaxFound = 5
)

// Schema is tool_search's schema: n tools are in the catalog.
func Schema(n int) anyllm.Tool {
	return anyllm.Tool{Type: "function", Function: anyllm.Function{
		Name: Name,
		Description: fmt.Sprintf("%d more tools are not listed here (the window is small). Search them by what you need; "+
			"the ones found can be called next.", n),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"query": map[string]any{"type": "string", "description": "What the tool should do, or its name"},
		}, "required": []string{"query"}},
	}}
}

// Catalog is the tools a turn left out, and those found so far.
type Catalog struct {
	mu     sync.Mutex
	tools  []anyllm.Tool
	words  [][]string // each tool's words, for ranking
	avg    float64
	df     map[string]int
	found  []string // names found, in order
	budget int      // tokens the found tools' schemas may take in a request
}

// New is the catalog of tools; what searches find may take budget tokens
// of a request (at least one tool is always found).
func New(tools []anyllm.Tool, budget int) *Catalog {
	c := &Catalog{tools: tools, df: map[string]int{}, budget: budget}
	total := 0
	for _, t := range tools {
		w := wordsOf(t)
		c.words = append(c.words, w)
		total += len(w)
		seen := map[string]bool{}
		for _, x := range w {
			if !seen[x] {
				seen[x] = true
				c.df[x]++
			}
		}
	}
	if len(tools) > 0 {
		c.avg = float64(total) / float64(len(tools))
	}
	return c
}

// Len is how many tools the catalog holds (0 for nil).
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.tools)
}

// Has reports whether name is a tool of the catalog (callable by name).
func (c *Catalog) Has(name string) bool {
	_, ok := c.lookup(name)
	return ok
}

func (c *Catalog) lookup(name string) (anyllm.Tool, bool) {
	if c == nil {
		return anyllm.Tool{}, false
	}
	for _, t := range c.tools {
		if t.Function.Name == name {
			return t, true
		}
	}
	return anyllm.Tool{}, false
}

// Found is the schemas of the tools found so far (or called by name),
// the latest last, within the budget: the tools field of the next request
// adds them.
func (c *Catalog) Found() []anyllm.Tool {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []anyllm.Tool
	used := 0
	for i := len(c.found) - 1; i >= 0; i-- {
		t, _ := c.lookup(c.found[i])
		cost := Tokens(t)
		if len(out) > 0 && used+cost > c.budget {
			break
		}
		out = append([]anyllm.Tool{t}, out...)
		used += cost
	}
	return out
}

// Use marks name found (a model that called it by its name).
func (c *Catalog) Use(name string) {
	if !c.Has(name) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.found {
		if f == name {
			c.found = append(c.found[:i], c.found[i+1:]...)
			break
		}
	}
	c.found = append(c.found, name)
}

// Search is tool_search's answer to query: the best tools as signature
// lines, each now callable, and how many.
func (c *Catalog) Search(query string) (string, int) {
	if c.Len() == 0 {
		return "no tools are left out: every tool is listed already", 0
	}
	q := splitWords(query)
	if len(q) == 0 {
		return "query is empty: say what the tool should do (\"create an issue\") or its name", 0
	}
	type hit struct {
		i     int
		score float64
	}
	var hits []hit
	for i := range c.tools {
		if s := c.score(i, q); s > 0 {
			hits = append(hits, hit{i, s})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	if len(hits) == 0 {
		return fmt.Sprintf("no tool matches %q; try other words (%d tools are searched)", query, len(c.tools)), 0
	}
	var b strings.Builder
	used, found := 0, 0
	for n, h := range hits {
		t := c.tools[h.i]
		cost := Tokens(t)
		if n >= MaxFound || n > 0 && used+cost > c.budget {
			break
		}
		used += cost
		c.Use(t.Function.Name)
		b.WriteString(Signature(t) + "\n")
		found++
	}
	return "found (call them as listed):\n" + b.String(), found
}

// score is BM25 of tool i for the query words (a word of the name counts
// twice, as it is listed twice in the tool's words).
func (c *Catalog) score(i int, q []string) float64 {
	const k1, bb = 1.2, 0.75
	w := c.words[i]
	tf := map[string]int{}
	for _, x := range w {
		tf[x]++
	}
	n := float64(len(c.tools))
	s := 0.0
	for _, x := range q {
		f := float64(tf[x])
		if f == 0 {
			continue
		}
		df := float64(c.df[x])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		s += idf * f * (k1 + 1) / (f + k1*(1-bb+bb*float64(len(w))/max(c.avg, 1)))
	}
	return s
}

// wordsOf is a tool's words: its name's twice (they say most), its
// description's, its parameters' names and descriptions.
func wordsOf(t anyllm.Tool) []string {
	name := splitWords(t.Function.Name)
	w := append(append([]string{}, name...), name...)
	w = append(w, splitWords(t.Function.Description)...)
	props, _ := t.Function.Parameters["properties"].(map[string]any)
	for p, v := range props {
		w = append(w, splitWords(p)...)
		if m, ok := v.(map[string]any); ok {
			d, _ := m["description"].(string)
			w = append(w, splitWords(d)...)
		}
	}
	return w
}

// stop are words that say nothing of what a tool does.
var stop = map[string]bool{"a": true, "an": true, "the": true, "to": true, "of": true, "in": true, "for": true,
	"and": true, "or": true, "is": true, "on": true, "with": true, "by": true, "it": true, "this": true, "from": true, "tool": true}

// splitWords lowercases s and splits it at every non-letter, non-digit
// and at case changes (createIssue, create_issue, github__create-issue);
// a plural's s is dropped, so "issues" finds "issue".
func splitWords(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			w := strings.ToLower(string(cur))
			if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
				w = w[:len(w)-1]
			}
			if !stop[w] {
				out = append(out, w)
			}
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}

// Signature is a tool as one line: name(param: type, param?: type):
// description — enough to call it (? marks what is optional).
func Signature(t anyllm.Tool) string {
	props, _ := t.Function.Parameters["properties"].(map[string]any)
	required := map[string]bool{}
	switch r := t.Function.Parameters["required"].(type) {
	case []string:
		for _, x := range r {
			required[x] = true
		}
	case []any:
		for _, x := range r {
			if s, ok := x.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for p := range props {
		names = append(names, p)
	}
	sort.Slice(names, func(i, j int) bool {
		if required[names[i]] != required[names[j]] {
			return required[names[i]]
		}
		return names[i] < names[j]
	})
	var ps []string
	for _, p := range names {
		typ := "any"
		if m, ok := props[p].(map[string]any); ok {
			typ = typeOf(m)
		}
		opt := "?"
		if required[p] {
			opt = ""
		}
		ps = append(ps, p+opt+": "+typ)
	}
	desc := strings.Join(strings.Fields(t.Function.Description), " ")
	if len(desc) > 200 {
		desc = strings.ToValidUTF8(desc[:200], "") + "..."
	}
	return fmt.Sprintf("%s(%s): %s", t.Function.Name, strings.Join(ps, ", "), desc)
}

// typeOf is a parameter's JSON type in a word (an enum lists its values).
func typeOf(m map[string]any) string {
	if e, ok := m["enum"].([]any); ok && len(e) > 0 && len(e) <= 6 {
		var vs []string
		for _, v := range e {
			vs = append(vs, fmt.Sprint(v))
		}
		return strings.Join(vs, "|")
	}
	switch t := m["type"].(type) {
	case string:
		if t == "array" {
			if it, ok := m["items"].(map[string]any); ok {
				return typeOf(it) + "[]"
			}
		}
		return t
	case []any:
		var vs []string
		for _, v := range t {
			vs = append(vs, fmt.Sprint(v))
		}
		return strings.Join(vs, "|")
	case []string:
		return strings.Join(t, "|")
	}
	return "any"
}

// Tokens estimates what a tool's schema takes of a request (4 bytes a
// token, as the rest of Harvey estimates).
func Tokens(t anyllm.Tool) int {
	b, _ := json.Marshal(t)
	return len(b)/4 + 1
}
