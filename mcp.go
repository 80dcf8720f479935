package harvey

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/mcpclient"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/toolsearch"
	"github.com/harvey-agent/harvey/internal/usertools"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// MCP: tools from Model Context Protocol servers, on the official Go SDK.
// Each server's tools become registry entries named SERVER__tool and go
// through the same gate as every tool: approval (exec unless the user's
// config marks a tool read-only), audit, output cap, redaction, recording.
// Stdio servers start through the sandbox launcher like every program
// Harvey starts (network only when the server's config allows it) and are
// stopped with Harvey.

// mcpDescLimit cuts MCP tool descriptions sent to a model with a fixed
// window (a small local model); /mcp shows them whole.
const mcpDescLimit = 300

// sourceJobs is the source of the job tools (job_output, job_kill), and
// jobToolsWindow the smallest window they are offered to.
const (
	sourceJobs     = "built-in:jobs"
	sourceTasks    = "built-in:tasks" // task_status, task_wait: offered beside an async tool
	sourceDelegate = "built-in:delegate"
	sourceOutputs  = "built-in:outputs" // read_output: beside the job tools, by the same rule
	jobToolsWindow = 8192               // Harvey's default window; a Pi's 4k model spares their tokens
)

// toolsFor is the tool list one turn sends to model (see toolPlan).
func (ts *toolSet) toolsFor(model string, window int) []anyllm.Tool {
	tools, _, _ := ts.toolPlan(model, window)
	return tools
}

// mcpOffer is what one server's tools came to for one model.
type mcpOffer struct {
	server          string
	offered, total  int
	tokens          int    // the offered tools' schemas, estimated
	leftOut, reason string // why some were left out ("" when none were)
}

// toolPlan is the tool list one turn sends to model, per MCP server what
// was offered, and the catalog of what the budget left out: every
// built-in and user tool first, then each server's tools (in name order)
// while the model's budget lasts — at most max_tools tools (default 24)
// and, for a model with a known window, tool schemas of at most a quarter
// of it. Long MCP descriptions are cut for such models. When tools are
// left out, the servers' tools fill two thirds of the budget and
// tool_search (internal/toolsearch) finds the rest within the last third.
func (ts *toolSet) toolPlan(model string, window int) ([]anyllm.Tool, []mcpOffer, *toolsearch.Catalog) {
	limit := ts.cfg.ModelFor(model).MaxTools
	if limit <= 0 {
		limit = config.DefaultMaxTools // built-in and user tools first; MCP tools fill the rest
	}
	budget := window / 4
	tools, offers, left, spare := ts.fillMCP(model, window, budget, limit, 0)
	switch {
	case len(left) == 0 && len(spare) == 0:
		return tools, offers, nil
	case len(left) == 0:
		// Only the job tools and read_output were left out: callable by
		// name (a job's start and a cut result name them), no search.
		return tools, offers, toolsearch.New(spare, budget/3)
	}
	tools, offers, left, spare = ts.fillMCP(model, window, budget-budget/3, limit, 1)
	left = append(left, spare...)
	schema := toolsearch.Schema(len(left))
	found := budget/3 - toolsearch.Tokens(schema)
	if window <= 0 {
		found = math.MaxInt32 // a window nobody said: max_tools alone left them out
	}
	return append(tools, schema), offers, toolsearch.New(left, found)
}

// fillMCP is the tools that fit budget and limit (see toolPlan), in name
// order, the servers' tools the budget left out (not those models: leaves
// out), and the job tools and read_output where they were left out.
func (ts *toolSet) fillMCP(model string, window, budget, limit, reserve int) (core []anyllm.Tool, offers []mcpOffer, left, spare []anyllm.Tool) {
	core = ts.coreTools()
	for i := range core { // your tools' examples, where the window allows
		if window > 0 && window < jobToolsWindow {
			core[i].Function.Description, _, _ = strings.Cut(core[i].Function.Description, usertools.ExamplesMark)
		}
	}
	used := schemaTokensOf(ModeSchema, core)
	for _, name := range ts.mcp.Names() {
		srv, _ := ts.mcp.Server(name)
		tools := ts.Tools.schemasWhere(func(_, src string) bool { return src == "mcp:"+name })
		o := mcpOffer{server: name, total: len(tools)}
		if !srv.Config().OfferedTo(model) {
			if len(tools) > 0 {
				o.leftOut, o.reason = termtext.Plural(len(tools), "tool"), "models: does not name "+model
			}
			offers = append(offers, o)
			continue
		}
		for _, t := range tools {
			if window > 0 && len(t.Function.Description) > mcpDescLimit {
				t.Function.Description = strings.ToValidUTF8(t.Function.Description[:mcpDescLimit], "") + "..."
			}
			cost := schemaTokensOf(ModeSchema, []anyllm.Tool{t})
			switch {
			case len(core) >= limit-reserve:
				left = append(left, t)
				o.reason = fmt.Sprintf("max_tools %d reached", limit)
			case window > 0 && used+cost > budget:
				left = append(left, t)
				o.reason = fmt.Sprintf("the tool budget (a quarter of the %s-token window) is full", termtext.Kilo(window))
			default:
				core = append(core, t)
				used += cost
				o.offered++
				o.tokens += cost
			}
		}
		if n := o.total - o.offered; n > 0 {
			o.leftOut = termtext.Plural(n, "tool")
		}
		offers = append(offers, o)
	}
	// The job tools and read_output fill what is left (they matter only
	// once a job runs or a result is cut): within max_tools and the
	// budget, and only where their tokens are small beside the window (a
	// 2k-token model's prompt would not fit); else tool_search finds them.
	jobs := ts.Tools.schemasWhere(func(_, src string) bool { return src == sourceJobs || src == sourceOutputs })
	if len(core)+len(jobs) <= limit-reserve && (window <= 0 || window >= jobToolsWindow && used+schemaTokensOf(ModeSchema, jobs) <= budget) {
		core = append(core, jobs...)
	} else {
		spare = jobs
	}
	sort.Slice(core, func(i, j int) bool { return core[i].Function.Name < core[j].Function.Name })
	return core, offers, left, spare
}

// coreTools is every tool that is neither an MCP server's nor a job
// tool, with task_status and task_wait where an async tool is among them
// (such a tool is of no use without the tools that read its result).
func (ts *toolSet) coreTools() []anyllm.Tool {
	core := ts.Tools.schemasWhere(func(_, src string) bool {
		return !strings.HasPrefix(src, "mcp:") && src != sourceJobs && src != sourceTasks && src != sourceOutputs
	})
	if ts.offersAsync(core) {
		core = append(core, ts.Tools.schemasWhere(func(_, src string) bool { return src == sourceTasks })...)
	}
	return core
}

// offerLines says, one line per server, what model is offered and what was
// left out and why, and what all tools take of the window.
func (ts *toolSet) offerLines(model string, window int) []string {
	tools, offers, cat := ts.toolPlan(model, window)
	all := schemaTokensOf(ModeSchema, tools)
	var out []string
	for _, o := range offers {
		l := fmt.Sprintf("MCP %s: %d of %s offered to %s (~%d tokens)", o.server, o.offered, termtext.Plural(o.total, "tool"), model, o.tokens)
		if o.leftOut != "" {
			l += fmt.Sprintf("; %s left out: %s", o.leftOut, o.reason)
		}
		out = append(out, l)
	}
	if len(offers) > 0 {
		share := ""
		if window > 0 {
			share = fmt.Sprintf(" (%d%% of the %s-token window)", 100*all/window, termtext.Kilo(window))
		}
		out = append(out, fmt.Sprintf("tools take ~%d tokens of every request%s", all, share))
	}
	if slices.ContainsFunc(tools, func(t anyllm.Tool) bool { return t.Function.Name == toolsearch.Name }) {
		out = append(out, fmt.Sprintf("tool_search finds the %d left out by the budget (by name, description, parameters); what it finds is callable for the rest of the turn", cat.Len()))
	}
	return out
}

// mcpHost is what the MCP servers need of the session
// (internal/mcpclient's Host): the terminal, the gate's sandbox and audit
// log, the registry their tools go into.
type mcpHost struct {
	termUI
	gate  *Gate
	tools *ToolRegistry
	mcp   func() *mcpclient.Manager // the manager, once it is made
}

func (h mcpHost) Interactive() bool { return h.tm.isInteractive() }
func (h mcpHost) Sandbox(purpose string) *sandbox.Spec {
	return h.gate.commandSandboxFor(purpose)
}
func (h mcpHost) Record(action, detail string) {
	h.gate.log.Record(action, detail, audit.Denied, 0)
}
func (h mcpHost) Progress(server string, p *mcpclient.Progress) {
	if p == nil {
		h.tm.mcpProgressDone()
		return
	}
	h.tm.mcpProgress(server, p.Message, p.Progress, p.Total)
}
func (h mcpHost) Register(s *mcpclient.Server, gone []string) {
	for _, n := range gone {
		h.tools.Unregister(n)
	}
	registerMCP(h.mcp(), h.tools, h.tm, s)
}

// registerMCP adds a server's tools to the registry (a name taken by
// another tool is refused with a warning), each through the gate: its
// arguments fitted to its schema, approved unless the user's config marks
// it read-only, then called.
func registerMCP(m *mcpclient.Manager, reg *ToolRegistry, tm *Terminal, s *mcpclient.Server) {
	m.Keep(s)
	for _, t := range s.Tools() {
		name := s.Name() + config.MCPNameSep + t.Name
		if _, taken := reg.entry(name); taken {
			tm.logf("%s", tm.colorize("33", fmt.Sprintf("warning: MCP tool %s: the name is taken; not added", name)))
			continue
		}
		effect := EffectExec
		if slices.Contains(s.Config().ReadOnly, t.Name) {
			effect = EffectRead
		}
		reg.registerFunc(name, t.Description, t.Schema, mcpCall(m, reg, s, t.Name, name, t.Schema, effect), effect, "mcp:"+s.Name())
	}
}

// mcpCall is the tool function for one MCP tool.
func mcpCall(m *mcpclient.Manager, reg *ToolRegistry, s *mcpclient.Server, tool, name string, schema map[string]any, effect ToolEffect) toolFunc {
	return func(ctx context.Context, _ callScope, args map[string]any) (toolResult, error) {
		if args == nil {
			args = map[string]any{}
		}
		if err := coerce.Args(schema, args); err != nil {
			return toolResult{}, err
		}
		if effect != EffectRead {
			b, _ := json.Marshal(args)
			if err := reg.approve(ctx, name, "call MCP tool "+name+" "+termtext.Flat(string(b))); err != nil {
				return toolResult{}, err
			}
		}
		text, err := m.Call(ctx, s, tool, name, args)
		return toolResult{Text: text}, err
	}
}
