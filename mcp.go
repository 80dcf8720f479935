package harvey

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/gittool"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/mcpauth"
	"github.com/harvey-agent/harvey/internal/mcpform"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// toolsFor is the tool list one turn sends to model (see toolPlan).
func (ts *toolSet) toolsFor(model string, window int) []anyllm.Tool {
	tools, _ := ts.toolPlan(model, window)
	return tools
}

// mcpOffer is what one server's tools came to for one model.
type mcpOffer struct {
	server          string
	offered, total  int
	tokens          int    // the offered tools' schemas, estimated
	leftOut, reason string // why some were left out ("" when none were)
}

// toolPlan is the tool list one turn sends to model, and per MCP server
// what was offered: every built-in and user tool first, then each
// server's tools (in name order) while the model's budget lasts — at most
// max_tools tools (default 24) and, for a model with a known window, tool
// schemas of at most a quarter of it. Long MCP descriptions are cut for
// such models.
func (ts *toolSet) toolPlan(model string, window int) ([]anyllm.Tool, []mcpOffer) {
	limit := ts.cfg.ModelFor(model).MaxTools
	if limit <= 0 {
		limit = defaultMaxTools
	}
	core := ts.Tools.schemasWhere(func(_, src string) bool { return !strings.HasPrefix(src, "mcp:") })
	used := schemaTokensOf(ModeSchema, core)
	budget := window / 4
	var offers []mcpOffer
	if ts.mcp != nil {
		for _, name := range sortedKeys(ts.mcp.servers) {
			srv := ts.mcp.servers[name]
			tools := ts.Tools.schemasWhere(func(_, src string) bool { return src == "mcp:"+name })
			o := mcpOffer{server: name, total: len(tools)}
			if !srv.cfg.OfferedTo(model) {
				if len(tools) > 0 {
					o.leftOut, o.reason = termtext.Plural(len(tools), "tool"), "models: does not name "+model
				}
				offers = append(offers, o)
				continue
			}
			var left int
			for _, t := range tools {
				if window > 0 && len(t.Function.Description) > mcpDescLimit {
					t.Function.Description = strings.ToValidUTF8(t.Function.Description[:mcpDescLimit], "") + "..."
				}
				cost := schemaTokensOf(ModeSchema, []anyllm.Tool{t})
				switch {
				case len(core) >= limit:
					left++
					o.reason = fmt.Sprintf("max_tools %d reached", limit)
				case window > 0 && used+cost > budget:
					left++
					o.reason = fmt.Sprintf("the tool budget (a quarter of the %s-token window) is full", termtext.Kilo(window))
				default:
					core = append(core, t)
					used += cost
					o.offered++
					o.tokens += cost
				}
			}
			if left > 0 {
				o.leftOut = termtext.Plural(left, "tool")
			}
			offers = append(offers, o)
		}
	}
	sort.Slice(core, func(i, j int) bool { return core[i].Function.Name < core[j].Function.Name })
	return core, offers
}

// offerLines says, one line per server, what model is offered and what was
// left out and why, and what all tools take of the window.
func (ts *toolSet) offerLines(model string, window int) []string {
	tools, offers := ts.toolPlan(model, window)
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
	return out
}

// mcpTimeout bounds initialize and tools/list.
const mcpTimeout = 20 * time.Second

// mcpServer is one running (or failed) server.
type mcpServer struct {
	name     string
	cfg      MCPServer
	mu       sync.Mutex
	session  *mcp.ClientSession
	tools    []*mcp.Tool
	state    string // "running", "failed: ...", "stopped"
	restarts int
	changed  atomic.Bool   // the server said its tool list changed
	spec     *sandbox.Spec // the sandbox it runs in (stdio), to explain a failure
	prompts  []*mcp.Prompt // the server's prompts: /SERVER:PROMPT in the REPL
	life     *guard.Guard  // a stdio server's check, from before it starts to after it stops
}

// mcpManager holds the session's servers.
type mcpManager struct {
	calls   atomic.Int64  // numbers the calls' progress tokens
	term    *Terminal     // warnings and the progress line
	ws      *Workspace    // the servers' root and working directory
	tools   *ToolRegistry // where the servers' tools are registered
	cfg     *ConfigFile   // run_timeout
	gate    *Gate         // the sandbox a stdio server runs in
	servers map[string]*mcpServer
	timeout time.Duration  // for initialize and tools/list
	login   bool           // harvey mcp login: log in without asking
	orders  mcpform.Orders // the field order of the forms servers send (internal/mcpform)
}

// connect starts (or restarts) a server and lists its tools.
func (m *mcpManager) connect(ctx context.Context, s *mcpServer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		s.session.Close()
		s.session = nil
	}
	if s.cfg.URL == "" && s.life == nil {
		s.life = guard.Life(m.ws.Root) // what it does at start is checked like a call
	}
	defer m.checkLife(s, "at start")
	refusedBefore := runner.ProxyRefusals()
	t, spec, err := m.transport(s.name, s.cfg)
	s.spec = spec
	if err != nil {
		s.state = "failed: " + err.Error()
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "harvey", Version: Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.changed.Store(true) },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			m.term.mcpProgress(s.name, req.Params)
		},
		ElicitationHandler: m.elicit(s), // internal/mcpform
	})
	// The workspace is the client's root: a server that asks where to work
	// (a filesystem or git server) is told.
	//lint:ignore SA1019 roots stay in the 2026-07-28 protocol for twelve months, and the servers people configure today ask for them (issue 26)
	client.AddRoots(&mcp.Root{URI: "file://" + m.ws.Root, Name: filepath.Base(m.ws.Root)})
	ct := t
	if _, ok := t.(*mcp.CommandTransport); ok {
		ct = mcpform.OrderedTransport{Transport: t, Orders: &m.orders}
	}
	session, err := client.Connect(cctx, ct, nil)
	if sa := mcpauth.Of(t); err != nil && sa != nil && sa.TakeLogin() {
		// A login took the time initialize had: once more, with the token.
		cctx2, cancel2 := context.WithTimeout(ctx, m.timeout)
		defer cancel2()
		cctx = cctx2
		session, err = client.Connect(cctx, t, nil)
	}
	if err != nil {
		err = m.whyNoStart(s.name, err, cctx.Err() != nil, t, spec, refusedBefore)
		s.state = "failed: " + err.Error()
		return err
	}
	tools, err := listTools(cctx, session, s.cfg)
	if err != nil {
		session.Close()
		s.state = "failed: " + err.Error()
		return fmt.Errorf("tools/list: %w", err)
	}
	s.session, s.tools, s.state = session, tools, "running"
	s.prompts = nil
	if res := session.InitializeResult(); res != nil && res.Capabilities != nil && res.Capabilities.Prompts != nil {
		for p, err := range session.Prompts(cctx, nil) {
			if err != nil {
				break
			}
			s.prompts = append(s.prompts, p)
		}
	}
	return nil
}

// whyNoStart says why a server did not start, in one line: a login it
// needs, initialize's time, what a stdio server wrote to stderr, and the
// sandbox rule or the registry that refused it.
func (m *mcpManager) whyNoStart(name string, err error, timedOut bool, t mcp.Transport, spec *sandbox.Spec, refusedBefore int) error {
	var nl mcpauth.NeedsLogin
	switch {
	case errors.As(err, &nl):
		return nl
	case strings.Contains(err.Error(), "needs you to log in (OAuth)"):
		return mcpauth.NeedsLogin{Name: name} // said in its own words, not the transport's
	case timedOut:
		err = fmt.Errorf("did not answer initialize within %s", m.timeout)
	}
	ct, ok := t.(*mcp.CommandTransport)
	if !ok {
		return err
	}
	w, ok := ct.Command.Stderr.(*runner.CapWriter)
	if !ok {
		return err
	}
	b, _ := w.Bytes()
	if len(b) > 0 {
		err = fmt.Errorf("%v: %s", err, gittool.ErrLine(b))
	}
	if hosts := runner.ProxyRefusalsSince(refusedBefore); len(hosts) > 0 && spec != nil && spec.Proxy != "" {
		return fmt.Errorf("%v %s", err, runner.ProxyRefusal(strings.Join(hosts, ", ")))
	}
	if rule, note := runner.Blocked(string(b), 1, spec); rule != runner.RuleNone {
		return fmt.Errorf("%v %s", err, note)
	}
	return err
}

// transport builds a stdio transport through the sandbox launcher, or a
// streamable HTTP one.
func (m *mcpManager) transport(name string, cfg MCPServer) (mcp.Transport, *sandbox.Spec, error) {
	if cfg.URL != "" {
		hc := &http.Client{Transport: mcpform.OrderedBodies{Next: headerTransport{headers: cfg.Expanded(cfg.Headers)}, Orders: &m.orders}}
		// The standalone stream stays on: it is how a server's requests
		// (elicitation) reach Harvey between its answers. A 401 is
		// answered with the server's OAuth (internal/mcpauth).
		sa := mcpauth.New(name, cfg, termUI{m.term}, m.askLogin(name), &http.Client{})
		sa.Standalone = m.login
		return &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, OAuthHandler: sa}, nil, nil
	}
	if len(cfg.Command) == 0 {
		return nil, nil, errors.New("no command or url")
	}
	env := runner.BaseEnv()
	for k, v := range cfg.Expanded(cfg.Env) {
		env = append(env, k+"="+v)
	}
	argv := cfg.Command
	if _, err := runner.LookPath(argv[0]); err != nil {
		return nil, nil, err
	}
	if err := runner.NoSandboxRefusal(m.gate.cfg.Sandbox); err != nil {
		return nil, nil, err
	}
	var cmd *exec.Cmd
	var used *sandbox.Spec
	if sb := sandbox.Available(); sb.Enforced() {
		spec := *m.gate.commandSandboxFor("mcp-" + datadir.Key(strings.Join(cfg.Command, "\x00")))
		spec.Network = spec.Network || cfg.Network
		spec.RO = append(spec.RO, runner.InstallTree(argv[0])...) // a server installed in a node_modules or a bin of its own
		spec.Argv, spec.Dir, spec.Env = argv, m.ws.Root, runner.Env(env, &spec)
		w := sb.Wrap(&spec)
		cmd = exec.Command(w[0], w[1:]...)
		cmd.SysProcAttr = sandbox.ProcAttr(spec)
		used = &spec
	} else {
		prog, _ := runner.LookPath(argv[0])
		cmd = exec.Command(prog, argv[1:]...)
		cmd.Env = env
		runner.SetProcessGroup(cmd)
	}
	cmd.Dir = m.ws.Root
	cmd.Stderr = runner.NewCapWriter(4096) // its last words, if it fails
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 300 * time.Millisecond}, used, nil
}

// headerTransport adds the configured headers to every request.
type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// register adds a server's tools to the registry (a name taken by another
// tool is refused with a warning).
func (m *mcpManager) register(s *mcpServer) {
	s.tools = m.validToolNames(s)
	for _, t := range s.tools {
		name := s.name + mcpNameSep + t.Name
		if _, taken := m.tools.entry(name); taken {
			m.term.logf("%s", m.term.colorize("33", fmt.Sprintf("warning: MCP tool %s: the name is taken; not added", name)))
			continue
		}
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if sm, ok := mcpform.ToMap(t.InputSchema); ok && sm != nil {
			schema = sm
		}
		effect := EffectExec
		if slices.Contains(s.cfg.ReadOnly, t.Name) {
			effect = EffectRead
		}
		tool := t.Name
		m.tools.registerFunc(name, t.Description, schema, m.call(s, tool, name, schema, effect), effect, "mcp:"+s.name)
	}
}

// validToolNames keeps the tools whose SERVER__tool name providers accept;
// the others are refused in one line naming the server (a name with an
// escape sequence or a space would make every request fail, or reach the
// model as written).
func (m *mcpManager) validToolNames(s *mcpServer) []*mcp.Tool {
	var ok []*mcp.Tool
	var bad []string
	for _, t := range s.tools {
		if mcpToolNameRE.MatchString(s.name + mcpNameSep + t.Name) {
			ok = append(ok, t)
		} else {
			bad = append(bad, strconv.Quote(t.Name))
		}
	}
	if len(bad) > 0 {
		m.term.logf("%s", m.term.colorize("33", fmt.Sprintf("warning: MCP server %s: %s not added: a tool name (with the server's, %s__NAME) must be 1 to 64 letters, digits, _ or -: %s",
			termtext.Sanitize(s.name), termtext.Plural(len(bad), "tool"), termtext.Sanitize(s.name), termtext.Sanitize(strings.Join(bad, ", ")))))
	}
	return ok
}

// call is the tool function for one MCP tool: coercion, approval (unless
// the user marked it read-only), the call with run_timeout, one restart
// after a crash, and the result as text (redacted).
func (m *mcpManager) call(s *mcpServer, tool, name string, schema map[string]any, effect ToolEffect) toolFunc {
	return func(ctx context.Context, _ callScope, args map[string]any) (toolResult, error) {
		if args == nil {
			args = map[string]any{}
		}
		if err := coerce.Args(schema, args); err != nil {
			return toolResult{}, err
		}
		if effect != EffectRead {
			b, _ := json.Marshal(args)
			if err := m.tools.approve(ctx, name, "call MCP tool "+name+" "+termtext.Flat(string(b))); err != nil {
				return toolResult{}, err
			}
		}
		res, undone, err := m.invokeGuarded(ctx, s, tool, name, args)
		if len(undone) > 0 && err == nil && res != nil && !res.IsError {
			return toolResult{Text: secrets.Redact(mcpText(res)) + "\n" + strings.Join(undone, "\n")}, nil
		}
		var answered *jsonrpc.Error // the server answered with an error: it did not crash
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &answered) {
			// The server died: restart it once, and tell the model.
			if s.restarts < 1 {
				s.restarts++
				if cerr := m.connect(context.WithoutCancel(ctx), s); cerr == nil {
					return toolResult{}, fmt.Errorf("MCP server %s failed during the call (%v); it was restarted — call again if the call is safe to repeat", s.name, termtext.OneLine(err.Error()))
				}
			}
			return toolResult{}, fmt.Errorf("MCP server %s failed: %v", s.name, termtext.OneLine(err.Error()))
		}
		if err != nil {
			return toolResult{}, fmt.Errorf("MCP tool %s: %v", name, termtext.OneLine(err.Error()))
		}
		text := secrets.Redact(mcpText(res))
		if res.IsError {
			return toolResult{}, fmt.Errorf("%s", text)
		}
		return toolResult{Text: text}, nil
	}
}

// invokeGuarded is invoke within the check a stdio server gets (it acts
// in the workspace): what it did since its last call, and what the call
// changed; the lines say what was undone and which files changed.
func (m *mcpManager) invokeGuarded(ctx context.Context, s *mcpServer, tool, name string, args map[string]any) (*mcp.CallToolResult, []string, error) {
	if s.cfg.URL != "" {
		res, err := m.invoke(ctx, s, tool, args)
		return res, nil, err
	}
	s.mu.Lock()
	m.checkLife(s, "between calls")
	var check *guard.Guard
	if s.life != nil {
		// The call's check starts from the snapshot the check between
		// calls just took: .git's files and the index are read once.
		check = s.life.Call(m.ws.Root, "MCP tool "+name)
	} else {
		check = guard.Command(m.ws.Root, "MCP tool "+name)
	}
	s.mu.Unlock()
	res, err := m.invoke(ctx, s, tool, args)
	undone, changed := check.Check()
	s.mu.Lock()
	s.life = guard.Life(m.ws.Root)
	s.mu.Unlock()
	if len(undone) > 0 {
		m.gate.log.Record("undone", "MCP tool "+name+": "+strings.Join(undone, " "), AuditDenied, 0)
	}
	if changed != "" {
		undone = append(undone, changed)
	}
	return res, undone, err
}

func (m *mcpManager) invoke(ctx context.Context, s *mcpServer, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	session := s.session
	s.mu.Unlock()
	if session == nil {
		return nil, fmt.Errorf("not running (%s)", s.state)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Duration(m.cfg.RunTimeout))
	defer cancel()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(fmt.Sprintf("harvey-%d", m.calls.Add(1))) // the server may report progress
	defer m.term.mcpProgressDone()
	res, err := session.CallTool(cctx, params)
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("no answer within run_timeout (%s): %w", time.Duration(m.cfg.RunTimeout), context.DeadlineExceeded)
	}
	var answered *jsonrpc.Error
	if err != nil && !errors.As(err, &answered) { // an error the server answered leaves it running
		s.mu.Lock()
		s.state = "failed: " + termtext.OneLine(err.Error())
		s.mu.Unlock()
	}
	return res, err
}

// mcpText is a result as the model reads it: text passed on, images and
// resources in one line each.
func mcpText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch x := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, x.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", x.MIMEType, len(x.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", x.MIMEType, len(x.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource: %s %s]", x.Name, x.URI))
		case *mcp.EmbeddedResource:
			if x.Resource != nil && x.Resource.Text != "" {
				parts = append(parts, x.Resource.Text)
			} else if x.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource: %s, %d bytes]", x.Resource.URI, len(base64.StdEncoding.EncodeToString(x.Resource.Blob))))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}

// refresh re-lists the tools of servers that announced a change. It runs
// between turns only, so the tools of a request never change mid-turn
// (and the prompt prefix stays stable within it).
func (m *mcpManager) refresh(ctx context.Context) {
	if m == nil {
		return
	}
	m.startLazy(ctx)
	for _, s := range m.servers {
		if !s.changed.Swap(false) {
			continue
		}
		s.mu.Lock()
		session := s.session
		s.mu.Unlock()
		if session == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, m.timeout)
		tools, err := listTools(cctx, session, s.cfg)
		cancel()
		if err != nil {
			continue
		}
		s.mu.Lock()
		old := s.tools
		s.tools = tools
		s.mu.Unlock()
		for _, t := range old {
			m.tools.Unregister(s.name + mcpNameSep + t.Name)
		}
		m.register(s)
	}
}

// startLazy starts the lazy servers that have not started yet.
func (m *mcpManager) startLazy(ctx context.Context) {
	if m == nil {
		return
	}
	for _, s := range m.servers {
		s.mu.Lock()
		waiting := s.cfg.Lazy && s.session == nil && s.restarts == 0 && strings.HasPrefix(s.state, "not started")
		s.mu.Unlock()
		if !waiting {
			continue
		}
		if err := m.connect(ctx, s); err != nil {
			m.term.logf("%s", m.term.colorize("33", fmt.Sprintf("warning: MCP server %s: %s", s.name, termtext.OneLine(err.Error()))))
			continue
		}
		m.register(s)
	}
}

// close stops every server (stdio servers die with their launcher).
func (m *mcpManager) close() {
	if m == nil {
		return
	}
	for _, s := range m.servers {
		s.mu.Lock()
		if s.session != nil {
			s.session.Close()
			s.session = nil
		}
		s.state = "stopped"
		m.checkLife(s, "while it stopped")
		s.mu.Unlock()
	}
}

// serversFailed names the servers that are not running.
func (m *mcpManager) serversFailed() []string {
	if m == nil {
		return nil
	}
	var out []string
	for n, s := range m.servers {
		s.mu.Lock()
		if s.state != "running" {
			out = append(out, n)
		}
		s.mu.Unlock()
	}
	return out
}

// listTools reads a server's tools (tools/list, every page), keeping those
// the config's allowlist names.
func listTools(ctx context.Context, session *mcp.ClientSession, cfg MCPServer) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(cfg.Tools) == 0 || slices.Contains(cfg.Tools, tool.Name) {
			tools = append(tools, tool)
		}
	}
	return tools, nil
}

// checkLife undoes what a stdio server changed outside any call (at
// start, between calls, as it stopped) and says so to the user and in the
// audit log; the check starts again from there. s.mu is held, or the
// server is not shared yet.
func (m *mcpManager) checkLife(s *mcpServer, when string) {
	if s.life == nil {
		return
	}
	undone, _ := s.life.Check()
	for _, u := range undone {
		m.term.logf("%s", m.term.colorize("33", fmt.Sprintf("MCP server %s, %s: %s", termtext.Sanitize(s.name), when, u)))
		m.gate.log.Record("undone", "MCP server "+s.name+" "+when+": "+u, AuditDenied, 0)
	}
	s.life = guard.Life(m.ws.Root)
}

// askLogin is whether a login may happen for server name now: in the REPL,
// when you say yes (asked once a session; headless, never: a stored token
// or a line saying how to log in).
func (m *mcpManager) askLogin(name string) func() bool {
	var once sync.Once
	ok := false
	return func() bool {
		once.Do(func() {
			if m.login {
				ok = true
				return
			}
			if !m.term.isInteractive() {
				return
			}
			ans, err := m.term.In.Ask(fmt.Sprintf("MCP server %s asks you to log in (OAuth). Log in now? [y/N] ", termtext.Sanitize(name)))
			ok = err == nil && termtext.IsYes(ans)
			if !ok {
				m.term.logf("%s", m.term.dim(fmt.Sprintf("· not logged in: /mcp restart %s asks again, and harvey mcp login %s logs in outside a session", termtext.Sanitize(name), termtext.Sanitize(name))))
			}
		})
		return ok
	}
}

// elicit is the client's ElicitationHandler for server s (internal/mcpform
// asks).
func (m *mcpManager) elicit(s *mcpServer) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return mcpform.Answer(termUI{m.term}, m.term.isInteractive(), s.name, req, m.orders.Of(req.Params.Message, req.Params.RequestedSchema))
	}
}

// defaultMaxTools is how many tools a model gets at most (built-in and
// user tools first; MCP tools fill the rest).
const defaultMaxTools = config.DefaultMaxTools

// mcpNameSep joins a server's name and a tool's name.
const mcpNameSep = config.MCPNameSep

// mcpToolNameRE is what providers accept as a tool name (OpenAI's and
// Anthropic's rule; Ollama passes names to templates as they are).
var mcpToolNameRE = config.ToolNameRE
