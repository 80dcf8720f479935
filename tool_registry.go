package harvey

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/refusal"
	"github.com/harvey-agent/harvey/internal/termtext"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// ToolRegistry holds the tools a model may call: their anyllm.Tool schemas
// and handlers. It is safe for concurrent use.
type ToolRegistry struct {
	mu      sync.RWMutex
	tools   map[string]toolEntry
	allowed map[string]bool // nil: all tools allowed
	// approver asks before a tool registered from Go code runs (the
	// session's gate, set once by newAgent); nil: such a tool is refused.
	approver approver
}

// newToolRegistry returns an empty registry.
func newToolRegistry() *ToolRegistry {
	return &ToolRegistry{tools: map[string]toolEntry{}}
}

// RegisterTool adds (or replaces) a tool from Go code embedding Harvey.
// parameters must be a JSON Schema object, e.g. {"type": "object",
// "properties": {...}, "required": [...]}. Such a tool counts as exec:
// it asks for approval like run_command, since Harvey cannot know what it does.
func (r *ToolRegistry) RegisterTool(name, description string, parameters map[string]any, handler ToolHandler) {
	gated := func(ctx context.Context, args map[string]any) (string, error) {
		// Harvey cannot know what this code does: it asks like run_command.
		if err := r.approve(ctx, name, "run "+name+" "+termtext.Flat(callSummary(name, args))); err != nil {
			return "", err
		}
		return handler(ctx, args)
	}
	r.register(name, description, parameters, gated, EffectExec, "api")
}

func (r *ToolRegistry) register(name, description string, parameters map[string]any, handler ToolHandler, effect ToolEffect, source string) {
	run := func(ctx context.Context, _ callScope, args map[string]any) (toolResult, error) {
		text, err := handler(ctx, args)
		return toolResult{Text: text}, err
	}
	r.registerFunc(name, description, parameters, run, effect, source)
}

// registerFunc adds a tool whose function returns the model's text and the
// user's summary apart.
func (r *ToolRegistry) registerFunc(name, description string, parameters map[string]any, run toolFunc, effect ToolEffect, source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools[name] = toolEntry{
		schema: anyllm.Tool{Type: "function", Function: anyllm.Function{
			Name: name, Description: description, Parameters: parameters,
		}},
		run:    run,
		effect: effect,
		source: source,
	}
}

// approve asks the registry's approver; with none, the effect is refused.
func (r *ToolRegistry) approve(ctx context.Context, tool, action string) error {
	r.mu.RLock()
	ap := r.approver
	r.mu.RUnlock()
	if ap == nil {
		return fmt.Errorf("%w: %s needs approval and there is nobody to ask", refusal.ErrDenied, tool)
	}
	return ap.confirm(ctx, tool, action)
}

// Unregister removes a tool.
func (r *ToolRegistry) Unregister(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tools, name)
}

// subset is a registry of those of r's allowed tools that keep accepts,
// with the same functions (so the same gate) and approver: a sub-agent's
// tools.
func (r *ToolRegistry) subset(keep func(name string, effect ToolEffect, source string) bool) *ToolRegistry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &ToolRegistry{tools: map[string]toolEntry{}, approver: r.approver}
	for n, e := range r.tools {
		if r.enabled(n) && keep(n, e.effect, e.source) {
			out.tools[n] = e
		}
	}
	return out
}

// SetAllowed restricts the tools offered to the model (allowed_tools); an
// empty list allows all.
func (r *ToolRegistry) SetAllowed(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(names) == 0 {
		r.allowed = nil
		return
	}
	r.allowed = map[string]bool{}
	for _, n := range names {
		r.allowed[n] = true
	}
}

func (r *ToolRegistry) enabled(name string) bool { return r.allowed == nil || r.allowed[name] }

// GetTool returns a tool's schema and handler. Tools outside allowed_tools are
// not found.
func (r *ToolRegistry) GetTool(name string) (anyllm.Tool, ToolHandler, bool) {
	e, ok := r.entry(name)
	if !ok {
		return e.schema, nil, false
	}
	return e.schema, func(ctx context.Context, args map[string]any) (string, error) {
		if args == nil {
			args = map[string]any{}
		}
		if err := coerce.Args(e.schema.Function.Parameters, args); err != nil {
			return "", err
		}
		res, err := e.run(ctx, callScope{}, args)
		return res.Text, err
	}, true
}

func (r *ToolRegistry) entry(name string) (toolEntry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok || !r.enabled(name) {
		return toolEntry{}, false
	}
	return e, true
}

// Names returns the enabled tool names in a stable (sorted) order.
func (r *ToolRegistry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		if r.enabled(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// GetToolSchemas returns the enabled tools' schemas for
// CompletionParams.Tools, sorted by name so the request prefix is
// byte-identical from turn to turn.
func (r *ToolRegistry) GetToolSchemas() []anyllm.Tool {
	names := r.Names()
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]anyllm.Tool, 0, len(names))
	for _, n := range names {
		out = append(out, r.tools[n].schema)
	}
	return out
}

// schemasWhere is GetToolSchemas restricted to the tools keep accepts
// (by name and source).
func (r *ToolRegistry) schemasWhere(keep func(name, source string) bool) []anyllm.Tool {
	names := r.Names()
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]anyllm.Tool, 0, len(names))
	for _, n := range names {
		if e := r.tools[n]; keep(n, e.source) {
			out = append(out, e.schema)
		}
	}
	return out
}

// describe lists the tools for /tools.
func (r *ToolRegistry) describe() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, n := range slices.Sorted(maps.Keys(r.tools)) {
		e := r.tools[n]
		state := ""
		if !r.enabled(n) {
			state = " (not in allowed_tools)"
		}
		out = append(out, fmt.Sprintf("%-14s %-6s %s — %s%s", n, e.effect, e.source, e.schema.Function.Description, state))
	}
	return out
}

// schemaOf returns an enabled tool's parameter schema (for recovering
// calls a model printed as text).
func (r *ToolRegistry) schemaOf(name string) (map[string]any, bool) {
	e, ok := r.entry(name)
	if !ok {
		return nil, false
	}
	return e.schema.Function.Parameters, true
}
