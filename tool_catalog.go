package harvey

import (
	"context"
	"slices"

	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/toolsearch"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// A turn's catalog (internal/toolsearch): the tools its window's budget
// left out (toolPlan), which tool_search finds and a model may call by
// name; what was found goes into the next request's tools field.

// searchEntry is tool_search as a turn runs it (on its catalog); a tool
// of the catalog the model called by name is marked found.
func (t *turn) searchEntry(name string, entry toolEntry, ok bool) (toolEntry, bool) {
	if name != toolsearch.Name {
		t.catalog.Use(name)
		return entry, ok
	}
	return toolEntry{schema: toolsearch.Schema(t.catalog.Len()), effect: EffectRead, source: "built-in:search",
		run: func(_ context.Context, _ callScope, args map[string]any) (toolResult, error) {
			q, _ := args["query"].(string)
			text, n := t.catalog.Search(q)
			return toolResult{Text: text, Summary: termtext.Plural(n, "tool") + " found"}, nil
		}}, true
}

// withFound is the turn's tools and what tool_search found (or the model
// called by name) of those left out, within the catalog's budget.
func (t *turn) withFound() []anyllm.Tool {
	found := t.catalog.Found()
	if len(found) == 0 {
		return t.tools
	}
	return append(slices.Clip(t.tools), found...)
}
