// Package mcpclient is Harvey's client of Model Context Protocol servers,
// on the official Go SDK: each server a stdio program started through the
// sandbox launcher like every program Harvey starts (the network only when
// its config allows it), checked over its whole life by internal/guard, or
// a streamable HTTP endpoint with its headers and OAuth (internal/mcpauth);
// the workspace as the client's root; tools/list, tool calls within
// run_timeout with one restart after a crash, progress, prompts and
// elicitation (internal/mcpform). Its tools reach the model through the
// session's registry and gate (Host.Register), named SERVER__tool, so every
// call is approved, audited, capped and redacted like any tool's. A
// session's stdio servers start in the background (begin.go): nothing is
// said or registered from there until Await, and Close ends a start under
// way at once, its server's process tree ended before its check.
package mcpclient

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/mcpauth"
	"github.com/harvey-agent/harvey/internal/mcpform"
	"github.com/harvey-agent/harvey/internal/netfence"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/toolclass"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Timeout bounds initialize and tools/list.
const Timeout = 20 * time.Second

// Server is one running (or failed) server.
type Server struct {
	name     string
	cfg      config.MCPServer
	mu       sync.Mutex
	session  *mcp.ClientSession
	tools    []*mcp.Tool
	state    string // "running", "failed: ...", "stopped"
	restarts int
	changed  atomic.Bool   // the server said its tool list changed
	spec     *sandbox.Spec // the sandbox it runs in (stdio), to explain a failure
	prompts  []*mcp.Prompt // the server's prompts: /SERVER:PROMPT in the REPL
	life     *guard.Guard  // a stdio server's check, from before it starts to after it stops
	npx      string        // its npx packages' store, shared by every workspace (npx.go); "-": none this session
	fromKept bool          // its tools are those kept from its last start; it starts at its first use (cache.go)
	pause    bool          // it failed to start a short while ago and is left alone (cache.go)
	offered  []*mcp.Tool   // the kept tools the session offered before it started, when its list differs
	// background: it is starting in the background (begin.go), where a
	// question it asks is declined and said later
	background atomic.Bool
}

// Manager holds the session's servers.
type Manager struct {
	calls   atomic.Int64 // numbers the calls' progress tokens
	host    Host         // the session: its terminal, gate and registry
	opts    Options      // the session's values: Harvey's version, your sandbox policy, run_timeout
	root    string       // the workspace: the servers' root and working directory
	servers map[string]*Server
	timeout time.Duration   // for initialize and tools/list
	login   bool            // harvey mcp login: log in without asking
	orders  mcpform.Orders  // the field order of the forms servers send (internal/mcpform)
	life    context.Context // the session's: Close ends it, and with it every start still under way
	end     context.CancelFunc
	bgMu    sync.Mutex
	begun   []*begun // the starts under way in the background, until Await (begin.go)
}

// Connect starts (or restarts) a server and lists its tools.
func (m *Manager) Connect(ctx context.Context, s *Server) error {
	// A start under way ends with the session: Close does not wait for a
	// server that is slow to start (issue 75).
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if m.life != nil {
		defer context.AfterFunc(m.life, stop)()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.life != nil && m.life.Err() != nil {
		s.state = "stopped" // the session ended before this start began
		return errors.New("the session ended before it started")
	}
	if s.session != nil {
		s.session.Close()
		s.session = nil
	}
	if s.cfg.URL == "" && s.life == nil {
		s.life = guard.Life(m.root, "MCP server "+s.name) // what it does at start is checked like a call
	}
	defer m.checkLife(s, "at start")
	refusedBefore := sandboxpolicy.ProxyRefusals()
	before := s.tools
	t, spec, err := m.transport(s.name, s.cfg, m.shareNpx(ctx, s))
	s.spec = spec
	if err != nil {
		s.state = "failed: " + err.Error()
		m.failedToStart(s, err)
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "harvey", Version: m.opts.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.changed.Store(true) },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			m.progress(s.name, req.Params)
		},
		ElicitationHandler: m.elicit(s), // internal/mcpform
	})
	// The workspace is the client's root: a server that asks where to work
	// (a filesystem or git server) is told.
	//lint:ignore SA1019 roots stay in the 2026-07-28 protocol for twelve months, and the servers people configure today ask for them (issue 26)
	client.AddRoots(&mcp.Root{URI: "file://" + m.root, Name: filepath.Base(m.root)})
	ct := t
	var abort func()
	if c, ok := t.(*mcp.CommandTransport); ok {
		st := &stoppable{Transport: mcpform.OrderedTransport{Transport: t, Orders: &m.orders}, cmd: c.Command, sp: spec}
		ct, abort = st, st.Stop
	}
	session, err := connect(cctx, client, ct, abort)
	if sa := mcpauth.Of(t); err != nil && sa != nil && sa.TakeLogin() {
		// A login took the time initialize had: once more, with the token.
		cctx2, cancel2 := context.WithTimeout(ctx, m.timeout)
		defer cancel2()
		cctx = cctx2
		session, err = connect(cctx, client, t, nil)
	}
	if err != nil {
		err = m.whyNoStart(s.name, err, cctx.Err() != nil, t, spec, refusedBefore)
		s.state = "failed: " + err.Error()
		m.failedToStart(s, err)
		return err
	}
	tools, err := listTools(cctx, session, s.cfg)
	if err != nil {
		session.Close()
		s.state = "failed: " + err.Error()
		m.failedToStart(s, err)
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
	m.started(s, before)
	return nil
}

// whyNoStart says why a server did not start, in one line: a login it
// needs, initialize's time, what a stdio server wrote to stderr, and the
// sandbox rule or the registry that refused it.
func (m *Manager) whyNoStart(name string, err error, timedOut bool, t mcp.Transport, spec *sandbox.Spec, refusedBefore int) error {
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
		err = fmt.Errorf("%v: %s", err, runner.LastWords(b))
	}
	if hosts := sandboxpolicy.ProxyRefusalsSince(refusedBefore); len(hosts) > 0 && spec != nil && spec.Proxy != "" {
		return fmt.Errorf("%v %s", err, sandboxpolicy.ProxyRefusal(strings.Join(hosts, ", ")))
	}
	if rule, note := sandboxpolicy.Blocked(string(b), 1, spec); rule != sandboxpolicy.RuleNone {
		return fmt.Errorf("%v %s", err, note)
	}
	return err
}

// transport builds a stdio transport through the sandbox launcher, or a
// streamable HTTP one.
func (m *Manager) transport(name string, cfg config.MCPServer, npxStore string) (mcp.Transport, *sandbox.Spec, error) {
	if cfg.URL != "" {
		// One careful client (internal/netfence): the server's URL is the
		// user's, so it may be local; what the server names is not.
		fence := netfence.New(cfg.URL)
		// The standalone stream stays on: it is how a server's requests
		// (elicitation) reach Harvey between its answers. A 401 is
		// answered with the server's OAuth (internal/mcpauth), whose
		// DPoP-bound tokens its resource transport presents.
		sa := mcpauth.New(name, cfg, m.host, m.askLogin(name), fence)
		sa.Standalone = m.login
		hc := fence.Client(func(next http.RoundTripper) http.RoundTripper {
			return mcpform.OrderedBodies{Next: headerTransport{headers: cfg.Expanded(cfg.Headers), origin: cfg.URL, next: sa.ResourceTransport(next)}, Orders: &m.orders}
		})
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
	if _, err := sandboxpolicy.LookPath(argv[0]); err != nil {
		return nil, nil, err
	}
	if err := sandboxpolicy.NoSandboxRefusal(m.opts.Policy); err != nil {
		return nil, nil, err
	}
	dir := serverDir(cfg)
	if dir != "" {
		argv = inWorkspace(argv, m.root)
	}
	var sp *sandbox.Spec // none where there is no sandbox (and your config runs servers without one)
	if sandbox.Available().Enforced() {
		spec := *m.host.Sandbox("mcp-" + datadir.Key(strings.Join(cfg.Command, "\x00")))
		spec.Network = spec.Network || cfg.Network
		spec.RO = append(spec.RO, sandboxpolicy.InstallTree(argv[0])...) // a server installed in a node_modules or a bin of its own
		spec.Overlays = below(spec.Overlays, npxStore)
		if dir != "" {
			spec.RW = append(spec.RW, dir)
		}
		sp = &spec
	}
	cmd, used, err := runner.Command(runner.Proc{Dir: cmp.Or(dir, m.root), Argv: argv, Env: env, Sandbox: sp})
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = runner.NewCapWriter(4096) // its last words, if it fails
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 300 * time.Millisecond}, used, nil
}

// serverDir is the working directory of a stdio server of your own config
// that a package runner starts by its package's name — npx, npm exec,
// pnpm dlx, yarn dlx, bunx, uvx, uv tool run, pipx run, python -m (issue
// 75): one of its own in Harvey's data directory, never the workspace,
// where the runner would look first for what to run (a repository's
// node_modules/PACKAGE and its .npmrc, its Python package of the same
// name, its uv.toml), and a repository decides what is there. The
// workspace reaches the server as its MCP root and its sandbox's writable
// tree, as before. "" (the workspace) for any other server — a program
// named by its path, which the workspace does not choose — and for a
// workspace's server (the repository's code anyway, confirmed as such);
// the session's private TMPDIR where there is no data directory.
func serverDir(cfg config.MCPServer) string {
	if cfg.FromWorkspace || !runsPackage(cfg.Command) {
		return ""
	}
	base := datadir.Path()
	if base == "" {
		return sandbox.Available().Tmp
	}
	d := filepath.Join(base, "mcp", "run", datadir.Key(strings.Join(cfg.Command, "\x00")))
	if os.MkdirAll(d, 0o700) != nil {
		return sandbox.Available().Tmp
	}
	return d
}

// runsPackage reports whether argv runs a package by its name, which its
// runner resolves from the working directory first.
func runsPackage(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	prog := filepath.Base(argv[0])
	sub := ""
	if len(argv) > 1 {
		sub = argv[1]
	}
	switch {
	case slices.Contains([]string{"npx", "pnpx", "bunx", "uvx", "pipx"}, prog):
		return true
	case slices.Contains([]string{"npm", "pnpm", "yarn", "bun"}, prog):
		return slices.Contains([]string{"exec", "x", "dlx"}, sub)
	case prog == "uv":
		return sub == "tool" || sub == "tx"
	case strings.HasPrefix(prog, "python"):
		return slices.Contains(argv[1:], "-m")
	}
	return false
}

// inWorkspace is a server's argv with "." made the workspace and "./X" the
// workspace's X: what they named when the server started in the workspace
// (the filesystem server on "."), now that yours starts in a directory of
// its own (serverDir).
func inWorkspace(argv []string, root string) []string {
	out := slices.Clone(argv)
	for i, a := range out[1:] {
		if a == "." || strings.HasPrefix(a, "./") {
			out[i+1] = filepath.Join(root, a)
		}
	}
	return out
}

// headerTransport adds the configured headers to every request to the
// origin of the server's URL, and to no other.
type headerTransport struct {
	headers map[string]string
	origin  string // the server's URL
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if netfence.SameOrigin(h.origin, r.URL.String()) {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// validToolNames keeps the tools whose SERVER__tool name providers accept;
// the others are refused in one line naming the server (a name with an
// escape sequence or a space would make every request fail, or reach the
// model as written).
func (m *Manager) validToolNames(server string, tools []*mcp.Tool) []*mcp.Tool {
	var ok []*mcp.Tool
	var bad []string
	for _, t := range tools {
		if config.ToolNameRE().MatchString(server + config.MCPNameSep + t.Name) {
			ok = append(ok, t)
		} else {
			bad = append(bad, strconv.Quote(t.Name))
		}
	}
	if len(bad) > 0 {
		m.host.Say(termtext.Warn, fmt.Sprintf("warning: MCP server %s: %s not added: a tool name (with the server's, %s__NAME) must be 1 to 64 letters, digits, _ or -: %s",
			termtext.Sanitize(server), termtext.Plural(len(bad), "tool"), termtext.Sanitize(server), termtext.Sanitize(strings.Join(bad, ", "))))
	}
	return ok
}

// invokeGuarded is invoke within the check a stdio server gets (it acts
// in the workspace): what it did since its last call, and what the call
// changed; the lines say what was undone and which files changed.
func (m *Manager) invokeGuarded(ctx context.Context, s *Server, tool, name string, args map[string]any) (*mcp.CallToolResult, []string, error) {
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
		check = s.life.Call(m.root, "MCP tool "+name)
	} else {
		check = guard.Command(m.root, "MCP tool "+name)
	}
	s.mu.Unlock()
	res, err := m.invoke(ctx, s, tool, args)
	undone, changed := check.Check()
	s.mu.Lock()
	s.life.Forget() // the call's check covered it; the life's goes on from here
	s.life = guard.Life(m.root, "MCP server "+s.name)
	s.mu.Unlock()
	if len(undone) > 0 {
		m.host.Record("undone", "MCP tool "+name+": "+strings.Join(undone, " "))
	}
	if changed != "" {
		undone = append(undone, changed)
	}
	return res, undone, err
}

func (m *Manager) invoke(ctx context.Context, s *Server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	session := s.session
	s.mu.Unlock()
	if session == nil {
		return nil, fmt.Errorf("not running (%s)", s.state)
	}
	limit, which := m.opts.RunTimeout, "run_timeout"
	if d := time.Duration(s.cfg.Timeout); d > 0 {
		limit, which = min(d, time.Hour), "its timeout:"
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(fmt.Sprintf("harvey-%d", m.calls.Add(1))) // the server may report progress
	defer m.host.Progress(s.name, nil)
	res, err := session.CallTool(cctx, params)
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("no answer within %s (%s): %w", which, limit, context.DeadlineExceeded)
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

// Refresh re-lists the tools of servers that announced a change. It runs
// between turns only, so the tools of a request never change mid-turn
// (and the prompt prefix stays stable within it).
func (m *Manager) Refresh(ctx context.Context) {
	if m == nil {
		return
	}
	m.StartLazy(ctx)
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
		old := slices.Concat(s.tools, s.offered)
		s.tools, s.offered = tools, nil
		s.mu.Unlock()
		gone := make([]string, 0, len(old))
		for _, t := range old {
			gone = append(gone, s.name+config.MCPNameSep+t.Name)
		}
		m.host.Register(s, gone)
	}
}

// StartLazy starts the lazy servers that have not started yet.
func (m *Manager) StartLazy(ctx context.Context) {
	if m == nil {
		return
	}
	for _, s := range m.servers {
		s.mu.Lock()
		waiting := s.cfg.Lazy && !s.fromKept && !s.pause && s.session == nil && s.restarts == 0 && strings.HasPrefix(s.state, "not started")
		s.mu.Unlock()
		if !waiting {
			continue
		}
		if err := m.Connect(ctx, s); err != nil {
			m.host.Say(termtext.Warn, fmt.Sprintf("warning: MCP server %s: %s", s.name, termtext.OneLine(err.Error())))
			continue
		}
		m.host.Register(s, nil)
	}
}

// Close stops every server (stdio servers die with their launcher).
func (m *Manager) Close() {
	if m == nil {
		return
	}
	if m.end != nil {
		m.end()
	}
	m.endBegun()
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

// Failed names the servers that are not running (a server waiting for
// its first use is not failed).
func (m *Manager) Failed() []string {
	if m == nil {
		return nil
	}
	var out []string
	for n, s := range m.servers {
		s.mu.Lock()
		if s.state != "running" && !s.fromKept {
			out = append(out, n)
		}
		s.mu.Unlock()
	}
	return out
}

// listTools reads a server's tools (tools/list, every page), keeping those
// the config's allowlist names.
func listTools(ctx context.Context, session *mcp.ClientSession, cfg config.MCPServer) ([]*mcp.Tool, error) {
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
// audit log; the check starts again from there, unless the server has
// stopped. s.mu is held, or the server is not shared yet.
func (m *Manager) checkLife(s *Server, when string) {
	if s.life == nil {
		return
	}
	undone, _ := s.life.Check()
	for _, u := range undone {
		m.say(s, termtext.Warn, fmt.Sprintf("MCP server %s, %s: %s", termtext.Sanitize(s.name), when, u))
		m.host.Record("undone", "MCP server "+s.name+" "+when+": "+u)
	}
	s.life = nil
	if s.state != "stopped" {
		s.life = guard.Life(m.root, "MCP server "+s.name)
	}
}

// askLogin is whether a login may happen for server name now: in the REPL,
// when you say yes (asked once a session; headless, never: a stored token
// or a line saying how to log in).
func (m *Manager) askLogin(name string) func() bool {
	var once sync.Once
	ok := false
	return func() bool {
		once.Do(func() {
			if m.login {
				ok = true
				return
			}
			if !m.host.Interactive() {
				return
			}
			ans, err := m.host.Ask(fmt.Sprintf("MCP server %s asks you to log in (OAuth). Log in now? [y/N] ", termtext.Sanitize(name)))
			ok = err == nil && termtext.IsYes(ans)
			if !ok {
				m.host.Say(termtext.Note, fmt.Sprintf("· not logged in: /mcp restart %s asks again, and harvey mcp login %s logs in outside a session", termtext.Sanitize(name), termtext.Sanitize(name)))
			}
		})
		return ok
	}
}

// elicit is the client's ElicitationHandler for server s (internal/mcpform
// asks).
func (m *Manager) elicit(s *Server) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if s.background.Load() { // nobody can be asked while it starts in the background (begin.go)
			m.say(s, termtext.Warn, fmt.Sprintf("MCP server %s asked for input while it started (%s); declined: /mcp restart %s lets it ask again",
				termtext.Sanitize(s.name), termtext.Sanitize(termtext.OneLine(termtext.Clip(req.Params.Message, 120))), termtext.Sanitize(s.name)))
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return mcpform.Answer(m.host, m.host.Interactive(), s.name, req, m.orders.Of(req.Params.Message, req.Params.RequestedSchema))
	}
}

// Host is what the servers need of the session while it lasts.
type Host interface {
	Say(tone termtext.Tone, line string) // a line for the person (warnings, logins, forms)
	Ask(question string) (string, error)
	Interactive() bool
	Sandbox(purpose string) *sandbox.Spec // a command's sandbox, its caches' layers kept under purpose
	Record(action, detail string)         // an audit entry of what was undone (denied)
	// Progress shows a call's progress notification; nil: the call ended
	// (a progress line left on the terminal is cleared).
	Progress(server string, p *Progress)
	// Register adds s's tools to the session's registry, after removing
	// gone (SERVER__tool names its new list no longer has).
	Register(s *Server, gone []string)
}

// Progress is a call's progress as a server reports it (notifications/
// progress): the host gets Harvey's own type, never the SDK's (issue 79).
type Progress struct {
	Message         string
	Progress, Total float64 // Total 0: unknown
}

// Options are what the servers are given once, for the session.
type Options struct {
	Version    string               // Harvey's: in initialize, and the key of the tools kept (cache.go)
	Policy     config.SandboxPolicy // the user's sandbox: block (no sandbox: its refusal; npx's store)
	RunTimeout time.Duration        // a tool call's bound
}

// New is the manager of a session's servers in the workspace root.
func New(host Host, root string, o Options) *Manager {
	if o.RunTimeout <= 0 {
		o.RunTimeout = config.DefaultRunTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{host: host, root: root, opts: o, servers: map[string]*Server{}, timeout: Timeout, life: ctx, end: cancel}
}

// Add makes the server name known (a lazy one waits for its first use).
func (m *Manager) Add(name string, cfg config.MCPServer) *Server {
	s := &Server{name: name, cfg: cfg}
	if cfg.Lazy {
		s.state = "not started yet (lazy)"
	}
	m.servers[name] = s
	return s
}

// Server is the server named name.
func (m *Manager) Server(name string) (*Server, bool) {
	if m == nil {
		return nil, false
	}
	s, ok := m.servers[name]
	return s, ok
}

// Names are the servers' names, sorted.
func (m *Manager) Names() []string {
	if m == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(m.servers))
}

// Len is how many servers the session has.
func (m *Manager) Len() int {
	if m == nil {
		return 0
	}
	return len(m.servers)
}

// Tool is one of a server's tools as the session registers it.
type Tool struct {
	Name, Description string
	Schema            map[string]any // its input schema ({"type": "object"} when it has none)
}

// Name is the server's name.
func (s *Server) Name() string { return s.name }

// Config is the server's configuration.
func (s *Server) Config() config.MCPServer { return s.cfg }

// State is "running", "failed: ...", "stopped" or "not started yet".
func (s *Server) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Tools are the server's tools whose SERVER__tool name providers accept
// (the rest said once, when the list is read).
func (s *Server) Tools() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Tool, 0, len(s.tools))
	for _, t := range s.tools {
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if sm, ok := mcpform.ToMap(t.InputSchema); ok && sm != nil {
			schema = sm
		}
		out = append(out, Tool{Name: t.Name, Description: t.Description, Schema: schema})
	}
	return out
}

// Prompt is one of a server's prompts, in a line.
type Prompt struct{ Name, Description string }

// Prompts are the server's prompts (/SERVER:PROMPT in the REPL).
func (s *Server) Prompts() []Prompt {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Prompt
	for _, p := range s.prompts {
		out = append(out, Prompt{p.Name, p.Description})
	}
	return out
}

// Restarted lets a server that was restarted by hand be restarted once
// more after a crash.
func (s *Server) Restarted() { s.restarts, s.pause = 0, false }

// Keep sets the server's tools to those whose names providers accept,
// saying the others once (before they are registered).
func (m *Manager) Keep(s *Server) {
	s.mu.Lock()
	tools := s.tools
	s.mu.Unlock()
	ok := m.validToolNames(s.name, tools)
	s.mu.Lock()
	s.tools = ok
	s.mu.Unlock()
}

// progress shows a call's progress notification.
func (m *Manager) progress(server string, p *mcp.ProgressNotificationParams) {
	if p != nil {
		m.host.Progress(server, &Progress{Message: p.Message, Progress: p.Progress, Total: p.Total})
	}
}

// Call calls a server's tool (the session coerced the arguments and asked
// for approval): within the check a stdio server gets, with one restart
// after a crash, the result as the model reads it, redacted, with what the
// check undid and the files the call changed.
func (m *Manager) Call(ctx context.Context, s *Server, tool, name string, args map[string]any) (string, error) {
	if err := m.ensureStarted(ctx, s); err != nil {
		return "", fmt.Errorf("MCP server %s did not start: %v", s.name, termtext.OneLine(err.Error()))
	}
	res, undone, err := m.invokeGuarded(ctx, s, tool, name, args)
	if len(undone) > 0 && err == nil && res != nil && !res.IsError {
		return secrets.Redact(resultText(res, s.outputSchema(tool))) + "\n" + strings.Join(undone, "\n"), nil
	}
	var answered *jsonrpc.Error // the server answered with an error: it did not crash
	if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &answered) {
		// The server died: restart it once, and tell the model.
		if s.restarts < 1 {
			s.restarts++
			if cerr := m.Connect(context.WithoutCancel(ctx), s); cerr == nil {
				return "", toolclass.Mark(toolclass.Transient, fmt.Errorf("MCP server %s failed during the call (%v); it was restarted — call again if the call is safe to repeat", s.name, termtext.OneLine(err.Error())))
			}
		}
		return "", fmt.Errorf("MCP server %s failed: %v", s.name, termtext.OneLine(err.Error()))
	}
	if err != nil {
		class := toolclass.Of(err, false, "") // its own timeout, a reset connection
		return "", toolclass.Mark(class, fmt.Errorf("MCP tool %s: %v", name, termtext.OneLine(err.Error())))
	}
	text := secrets.Redact(resultText(res, s.outputSchema(tool)))
	if res.IsError {
		return "", fmt.Errorf("%s", text)
	}
	return text, nil
}

// ListChanged reports whether the server announced a new tool list that
// Refresh has not read yet.
func (s *Server) ListChanged() bool { return s.changed.Load() }

// SetTimeout changes how long initialize and tools/list may take
// (Timeout by default).
func (m *Manager) SetTimeout(d time.Duration) { m.timeout = d }
