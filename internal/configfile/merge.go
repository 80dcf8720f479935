package configfile

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// How a workspace's agents/harvey.yaml is merged over the user's own
// config: one rule per top-level setting, and the list of settings that
// wait for the user's confirmation is computed from those rules, never kept
// by hand (TestEveryConfigKeyHasARule fails for a new field without one).
//
//   - plain settings (model, num_ctx, ...) are the workspace's to choose;
//   - settings that send data somewhere or start programs (ollama_url,
//     routes, mcp) wait for the confirmation whenever they add anything;
//   - limits (safe_mode, allowed_commands, permissions, run_timeout, tools,
//     models) merge field by field with the stricter value winning, so a
//     workspace can always tighten; whatever it would loosen waits for the
//     confirmation, and the question names it;
//   - sandbox, keep_recordings, rag and delegate are read from the user's
//     config only.
type configRule struct {
	key  string
	kind ruleKind
	// take sets out's field to ws's (after confirmation: the workspace's
	// value as written).
	take func(out, ws *config.Config)
	// strict sets out's field to the stricter of base and ws, field by
	// field (limits only).
	strict func(out, base, ws *config.Config)
	// adds says what ws adds or loosens over base, one phrase each; none:
	// nothing to confirm (limits and senders only).
	adds func(base, ws *config.Config) []string
}

type ruleKind int

const (
	rulePlain    ruleKind = iota // the workspace's to choose
	ruleSends                    // sends data or starts programs: confirmed first
	ruleLimit                    // the stricter wins; looser parts confirmed first
	ruleUserOnly                 // never from a workspace
)

var configRules = []configRule{
	{key: "model", take: func(o, w *config.Config) { o.Model = w.Model }},
	{key: "num_ctx", take: func(o, w *config.Config) { o.NumCtx = w.NumCtx }},
	{key: "keep_alive", take: func(o, w *config.Config) { o.KeepAlive = w.KeepAlive }},
	{key: "ollama_timeout", take: func(o, w *config.Config) { o.OllamaTimeout = w.OllamaTimeout }},
	{key: "auto_record", take: func(o, w *config.Config) { o.AutoRecord = w.AutoRecord }},
	{key: "retry", take: func(o, w *config.Config) { o.Retry = w.Retry }},
	{key: "ollama_url", kind: ruleSends, take: func(o, w *config.Config) { o.OllamaURL = w.OllamaURL },
		adds: func(b, w *config.Config) []string {
			if w.OllamaURL != "" && w.OllamaURL != b.OllamaURL {
				return []string{"sends your prompts and code to " + w.OllamaURL}
			}
			return nil
		}},
	{key: "routes", kind: ruleSends, take: func(o, w *config.Config) { o.Routes = w.Routes }, adds: routesAdded},
	{key: "mcp", kind: ruleSends, take: takeMCP, adds: mcpAdded},
	{key: "hooks", kind: ruleSends, take: takeHooks,
		adds: func(b, w *config.Config) []string {
			var out []string
			for _, h := range w.Hooks {
				out = append(out, "runs a hook: "+HookShown(h)+" ("+h.Powers()+")")
			}
			return out
		}},
	{key: "safe_mode", kind: ruleLimit, take: func(o, w *config.Config) { o.SafeMode = w.SafeMode },
		strict: func(o, b, w *config.Config) { o.SafeMode = b.SafeMode || w.SafeMode },
		adds: func(b, w *config.Config) []string {
			if b.SafeMode && !w.SafeMode {
				return []string{"turns safe mode off"}
			}
			return nil
		}},
	{key: "allowed_commands", kind: ruleLimit, take: func(o, w *config.Config) { o.AllowedCommands = w.AllowedCommands },
		strict: func(o, b, w *config.Config) { o.AllowedCommands = intersect(b.AllowedCommands, w.AllowedCommands) },
		adds: func(b, w *config.Config) []string {
			if extra := missingFrom(b.AllowedCommands, w.AllowedCommands); len(extra) > 0 {
				return []string{"allows the commands " + strings.Join(extra, ", ")}
			}
			return nil
		}},
	{key: "permissions", kind: ruleLimit, take: func(o, w *config.Config) { o.Permissions = w.Permissions },
		strict: func(o, b, w *config.Config) { o.Permissions = intersectPermissions(b.Permissions, w.Permissions) },
		adds:   permissionsAdded},
	{key: "run_timeout", kind: ruleLimit, take: func(o, w *config.Config) { o.RunTimeout = w.RunTimeout },
		strict: func(o, b, w *config.Config) {
			o.RunTimeout = config.Duration(minLimit(int64(b.RunTimeout), int64(w.RunTimeout), int64(config.DefaultRunTimeout)))
		},
		adds: func(b, w *config.Config) []string {
			if effective(int64(w.RunTimeout), int64(config.DefaultRunTimeout)) > effective(int64(b.RunTimeout), int64(config.DefaultRunTimeout)) {
				return []string{"raises run_timeout to " + time.Duration(w.RunTimeout).String()}
			}
			return nil
		}},
	{key: "tools", kind: ruleLimit, take: func(o, w *config.Config) { o.Tools = w.Tools }, strict: strictTools, adds: toolsAdded},
	{key: "models", kind: ruleLimit, take: func(o, w *config.Config) { o.Models = w.Models }, strict: strictModels, adds: modelsAdded},
	{key: "sandbox", kind: ruleUserOnly},
	{key: "keep_recordings", kind: ruleUserOnly},
	{key: "rag", kind: ruleUserOnly},
	{key: "delegate", kind: ruleUserOnly},
	{key: "lsp", kind: ruleUserOnly},
}

func findRule(key string) *configRule {
	for i := range configRules {
		if configRules[i].key == key {
			return &configRules[i]
		}
	}
	return nil
}

// userOnlyKeys are settings only the user's own config may make.
var userOnlyKeys = func() []string {
	var out []string
	for _, r := range configRules {
		if r.kind == ruleUserOnly {
			out = append(out, r.key)
		}
	}
	return out
}()

// mergeConfig returns base with the given top-level keys taken from over
// as written (user-only keys never are).
func mergeConfig(base, over *config.Config, keys []string) *config.Config {
	out := *base
	for _, k := range keys {
		if r := findRule(k); r != nil && r.take != nil {
			r.take(&out, over)
		}
	}
	return &out
}

// mergeWorkspace merges a workspace config the user has not confirmed:
// plain settings as written, limits the stricter way, senders not at all.
func mergeWorkspace(base, ws *config.Config, keys []string) *config.Config {
	out := *base
	for _, k := range keys {
		r := findRule(k)
		switch {
		case r == nil:
		case r.kind == rulePlain:
			r.take(&out, ws)
		case r.kind == ruleLimit:
			r.strict(&out, base, ws)
		case r.kind == ruleSends && len(r.adds(base, ws)) == 0:
			r.take(&out, ws) // adds nothing that runs or sends (a disabled server)
		}
	}
	return &out
}

// gatedKeys lists the settings of a workspace config that add a sender or
// loosen a limit of base, with what they would do.
func gatedKeys(base, ws *config.Config, keys []string) []Gated {
	var out []Gated
	for _, k := range keys {
		if r := findRule(k); r != nil && r.adds != nil {
			if what := r.adds(base, ws); len(what) > 0 {
				out = append(out, Gated{Key: k, Shown: strings.Join(what, "; ")})
			}
		}
	}
	return out
}

// GatedSummary says in one line what the gated settings would do:
// "sets tools (allows the tools write_file), ollama_url (sends ...)".
func GatedSummary(g []Gated) string {
	parts := make([]string, len(g))
	for i, s := range g {
		parts[i] = s.Key + " (" + s.Shown + ")"
	}
	return "sets " + strings.Join(parts, ", ")
}

// noTool is an allowed_tools entry no tool has: two lists with nothing in
// common allow no tool (an empty list would allow every one).
const noTool = "(none)"

// effective reads a limit whose zero means the default.
func effective[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// minLimit is the stricter of two limits whose zero means the default.
func minLimit[T int | int64](a, b, def T) T {
	if effective(b, def) < effective(a, def) {
		return b
	}
	return a
}

// intersect keeps the entries of a that b also lists.
func intersect(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// missingFrom lists the entries of b that a does not.
func missingFrom(a, b []string) []string {
	var out []string
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}

// intersectPermissions grants exactly what both blocks grant, for every
// path: the union of their prefixes, each with the permissions both give
// it (a path's longest matching prefix in the union is, in each block,
// matched by the same prefix of that block as the union's prefix is).
func intersectPermissions(a, b map[string][]string) map[string][]string {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := map[string][]string{}
	for _, m := range []map[string][]string{a, b} {
		for prefix := range m {
			var both []string
			for _, p := range wspath.ValidPerms {
				if wspath.Permits(a, prefix, p) && wspath.Permits(b, prefix, p) {
					both = append(both, p)
				}
			}
			out[prefix] = both
		}
	}
	return out
}

// permissionsAdded lists what ws grants that base does not, at every prefix
// of either (so a narrower rule of base is not lost under a wider one of ws).
func permissionsAdded(base, ws *config.Config) []string {
	if len(ws.Permissions) == 0 {
		if len(base.Permissions) == 0 {
			return nil
		}
		return []string{"grants every permission everywhere"}
	}
	var wider []string
	for _, m := range []map[string][]string{base.Permissions, ws.Permissions} {
		for prefix := range m {
			for _, p := range wspath.ValidPerms {
				if wspath.Permits(ws.Permissions, prefix, p) && !wspath.Permits(base.Permissions, prefix, p) && !slices.Contains(wider, prefix+":"+p) {
					wider = append(wider, prefix+":"+p)
				}
			}
		}
	}
	if len(wider) == 0 {
		return nil
	}
	slices.Sort(wider)
	return []string{"grants " + strings.Join(wider, ", ")}
}

func routesAdded(base, ws *config.Config) []string {
	var names []string
	for _, r := range ws.Routes {
		if !slices.ContainsFunc(base.Routes, func(b config.Route) bool { return b == r }) {
			names = append(names, fmt.Sprintf("@%s → %s %s", r.Name, r.Provider, r.URL))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []string{"adds routes " + strings.Join(names, ", ")}
}

// takeMCP adds the workspace's servers that are on; it cannot replace
// yours. What it takes is what mcpAdded shows: a server shadowed by yours
// or switched off is not taken, and should it become one that is (you
// remove yours), the confirmation no longer covers it (ConfigSum).
func takeMCP(out, ws *config.Config) {
	servers := map[string]config.MCPServer{}
	for n, s := range out.MCP.Servers {
		servers[n] = s
	}
	for n, s := range ws.MCP.Servers {
		if _, mine := out.MCP.Servers[n]; !mine && s.IsEnabled() {
			servers[n] = s
		}
	}
	out.MCP.Servers = servers
}

func mcpAdded(base, ws *config.Config) []string {
	added := map[string]config.MCPServer{}
	for n, s := range ws.MCP.Servers {
		if _, mine := base.MCP.Servers[n]; !mine && s.IsEnabled() {
			added[n] = s
		}
	}
	if len(added) == 0 {
		return nil
	}
	return []string{DescribeServers(added)}
}

// boolOn reads an optional switch whose absence means on.
func boolOn(b *bool) bool { return b == nil || *b }

func strictTools(out, base, ws *config.Config) {
	b, w := base.Tools, ws.Tools
	t := b
	if !boolOn(w.Enabled) {
		t.Enabled = w.Enabled
	}
	if w.FallbackToNaturalLanguage != nil {
		t.FallbackToNaturalLanguage = w.FallbackToNaturalLanguage
	}
	t.MaxToolCallsPerTurn = minLimit(b.MaxToolCallsPerTurn, w.MaxToolCallsPerTurn, config.DefaultMaxToolCalls)
	t.MaxOutputBytes = minLimit(b.MaxOutputBytes, w.MaxOutputBytes, config.DefaultMaxOutputBytes)
	switch {
	case len(b.AllowedTools) == 0: // every tool
		t.AllowedTools = w.AllowedTools
	case len(w.AllowedTools) > 0:
		if t.AllowedTools = intersect(b.AllowedTools, w.AllowedTools); len(t.AllowedTools) == 0 {
			t.AllowedTools = []string{noTool}
		}
	}
	out.Tools = t
}

func toolsAdded(base, ws *config.Config) []string {
	b, w := base.Tools, ws.Tools
	var out []string
	if !boolOn(b.Enabled) && boolOn(w.Enabled) {
		out = append(out, "turns tools on")
	}
	if effective(w.MaxToolCallsPerTurn, config.DefaultMaxToolCalls) > effective(b.MaxToolCallsPerTurn, config.DefaultMaxToolCalls) {
		out = append(out, fmt.Sprintf("raises tools.max_tool_calls_per_turn to %d", effective(w.MaxToolCallsPerTurn, config.DefaultMaxToolCalls)))
	}
	if effective(w.MaxOutputBytes, config.DefaultMaxOutputBytes) > effective(b.MaxOutputBytes, config.DefaultMaxOutputBytes) {
		out = append(out, fmt.Sprintf("raises tools.max_output_bytes to %d", effective(w.MaxOutputBytes, config.DefaultMaxOutputBytes)))
	}
	if len(b.AllowedTools) > 0 {
		if len(w.AllowedTools) == 0 {
			out = append(out, "allows every tool")
		} else if extra := slices.DeleteFunc(missingFrom(b.AllowedTools, w.AllowedTools), func(x string) bool { return x == noTool }); len(extra) > 0 {
			out = append(out, "allows the tools "+strings.Join(extra, ", "))
		}
	}
	return out
}

// modelNames is every model either block names, sorted.
func modelNames(base, ws *config.Config) []string {
	var names []string
	for _, m := range []map[string]config.ModelConfig{base.Models, ws.Models} {
		for n := range m {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

func strictModels(out, base, ws *config.Config) {
	models := map[string]config.ModelConfig{}
	for _, n := range modelNames(base, ws) {
		b, w := base.ModelFor(n), ws.ModelFor(n)
		m := b
		if !boolOn(w.ToolsEnabled) {
			m.ToolsEnabled = w.ToolsEnabled
		}
		if w.NumCtx > 0 {
			m.NumCtx = w.NumCtx // a window size, not a limit
		}
		m.MaxToolCallsPerTurn = minLimit(b.MaxToolCallsPerTurn, w.MaxToolCallsPerTurn, config.DefaultMaxToolCalls)
		m.MaxTools = minLimit(b.MaxTools, w.MaxTools, config.DefaultMaxTools)
		models[n] = m
	}
	out.Models = models
}

// modelsAdded compares each named model's effective limits with base and
// with ws's block taken as written.
func modelsAdded(base, ws *config.Config) []string {
	taken := *base
	taken.Models = ws.Models
	var out []string
	for _, n := range modelNames(base, ws) {
		if !base.ToolsEnabled(n) && taken.ToolsEnabled(n) {
			out = append(out, "turns tools on for "+n)
		}
		if t := taken.MaxToolCalls(n); t > base.MaxToolCalls(n) {
			out = append(out, fmt.Sprintf("raises %s's max_tool_calls_per_turn to %d", n, t))
		}
		if t := effective(taken.ModelFor(n).MaxTools, config.DefaultMaxTools); t > effective(base.ModelFor(n).MaxTools, config.DefaultMaxTools) {
			out = append(out, fmt.Sprintf("raises %s's max_tools to %d", n, t))
		}
	}
	return out
}

// takeHooks adds a workspace's hooks after yours, each marked as the
// workspace's: it runs in the sandbox with what a command gets.
func takeHooks(o, w *config.Config) {
	o.Hooks = slices.Clone(o.Hooks)
	for _, h := range w.Hooks {
		h.FromWorkspace = true
		o.Hooks = append(o.Hooks, h)
	}
}
