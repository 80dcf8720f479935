// Package acp is Harvey as an Agent Client Protocol agent on stdio
// (`harvey acp`; protocol version 1, github.com/coder/acp-go-sdk): an
// editor (Zed, JetBrains, Neovim's CodeCompanion) starts it and drives
// sessions. Serve answers initialize, session/new (its cwd is the
// workspace), session/load (the workspace's last conversation, as
// --continue resumes it, replayed as session/update), session/prompt
// (ended with end_turn, or cancelled after session/cancel) and
// session/cancel.
//
// The contract with the session (Host, Session, Editor): the host opens one
// of Harvey's sessions for a directory, exactly as the REPL's, and gives it
// the Editor: every event the session reports (internal/events' stream,
// already redacted) becomes a session/update — the reply's text as
// agent_message_chunk, each tool call as tool_call (kind, title,
// locations, its arguments) and its end as tool_call_update (completed or
// failed, what the model was told, the diff of a file change) — and every
// approval the REPL would ask becomes session/request_permission (allow
// once, allow always for that tool this session, reject). Where the
// client offers fs/read_text_file and fs/write_text_file, the session's
// reads and file changes go through them (the editor's unsaved buffers),
// after the same path gate. The editor's stdio MCP servers (Open.Servers)
// are the host's to start once the user allows each in the editor.
// Nothing else changes: the sandbox, hooks, audit and secrets hold as in
// the REPL; a repository's configuration is not confirmed here (it is left
// out, as headless, and said: Session.Notices).
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// Host opens Harvey's sessions.
type Host interface {
	Open(ctx context.Context, o Open) (Session, error)
}

// Open is what a session is opened with.
type Open struct {
	Dir    string // the workspace (the client's cwd)
	Resume bool   // continue its last conversation (session/load)
	Editor Editor // what the session reports to and asks of the editor
	// Servers are the MCP servers the editor asked the session to use.
	Servers []Server
}

// Server is an MCP server the editor names in session/new (stdio).
type Server struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
}

// Session is one of Harvey's sessions.
type Session interface {
	// Prompt runs one turn (or a slash command); ctx's end stops it.
	Prompt(ctx context.Context, text string) error
	// History is the conversation so far, for session/load.
	History() []Message
	// Notices are what its start said that the user should read
	// (a repository's configuration left out, a lesser sandbox).
	Notices() []string
	Close()
}

// Message is one message of a conversation as the editor replays it.
type Message struct {
	Role string // "user" or "assistant"
	Text string
}

// Editor is the editor's side of one session.
type Editor interface {
	// Event is one of the session's events, as internal/events' Sink.Listen
	// hears it; a "file_change" event (path, old, new) gives the diff of
	// the tool call being run.
	Event(ev map[string]any)
	// Ask is an approval: allowed, allowed always, or not.
	Ask(ctx context.Context, q Question) (Answer, error)
	// Buffers: the client reads and writes text files for the session
	// (ReadText, WriteText take an absolute path the gate resolved).
	Buffers() bool
	ReadText(ctx context.Context, abs string) (string, error)
	WriteText(ctx context.Context, abs, content string) error
}

// Question is an approval the session asks.
type Question struct {
	Tool   string
	Action string // "write a.go", "run: make test"
	Diff   *Diff  // a file change, when it is one
	Always bool   // "allow always" may be offered
}

// Diff is a file change.
type Diff struct {
	Path     string // absolute
	Old, New string
	Existed  bool
}

// Answer is the user's.
type Answer struct{ Yes, Always bool }

// Serve runs the agent on r and w until the client closes its side or ctx
// ends; log gets the lines a person would read (the editor's log).
func Serve(ctx context.Context, h Host, r io.Reader, w io.Writer, log io.Writer) int {
	a := &agent{host: h, sessions: map[string]*session{}, log: log}
	conn := sdk.NewAgentSideConnection(a, w, r)
	a.conn = conn
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	a.closeAll()
	return 0
}

// agent is the protocol's side: sessions by id.
type agent struct {
	host     Host
	conn     *sdk.AgentSideConnection
	log      io.Writer
	mu       sync.Mutex
	sessions map[string]*session
	fs       sdk.FileSystemCapabilities
	n        int
}

// session is one session and its turn.
type session struct {
	id      sdk.SessionId
	dir     string
	a       *agent
	s       Session
	mu      sync.Mutex
	cancel  context.CancelFunc
	current string           // the tool call being run (what an approval is about)
	diffs   map[string]*Diff // a tool call's file change
	asked   int
	told    bool // its notices were said
}

var _ sdk.Agent = (*agent)(nil)
var _ sdk.AgentLoader = (*agent)(nil)

func (a *agent) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.mu.Lock()
	a.fs = p.ClientCapabilities.Fs
	a.mu.Unlock()
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{LoadSession: true,
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true}},
		AgentInfo:   &sdk.Implementation{Name: "harvey", Title: sdk.Ptr("Harvey"), Version: "1"},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

func (a *agent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	s, err := a.open(ctx, p.Cwd, false, p.McpServers, "")
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: s.id}, nil
}

func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	s, err := a.open(ctx, p.Cwd, true, p.McpServers, p.SessionId)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	for _, m := range s.s.History() {
		u := sdk.UpdateAgentMessageText(m.Text)
		if m.Role == "user" {
			u = sdk.UpdateUserMessageText(m.Text)
		}
		a.update(ctx, s.id, u)
	}
	return sdk.LoadSessionResponse{}, nil
}

// open opens a session in dir (absolute, as the protocol requires).
func (a *agent) open(ctx context.Context, dir string, resume bool, servers []sdk.McpServer, id sdk.SessionId) (*session, error) {
	if !filepath.IsAbs(dir) {
		return nil, sdk.NewInvalidParams(map[string]any{"cwd": "must be an absolute path"})
	}
	a.mu.Lock()
	a.n++
	if id == "" {
		id = sdk.SessionId(fmt.Sprintf("harvey-%d-%s", a.n, filepath.Base(dir)))
	}
	old := a.sessions[string(id)]
	a.mu.Unlock()
	if old != nil {
		old.close()
	}
	s := &session{id: id, dir: dir, a: a, diffs: map[string]*Diff{}}
	sess, err := a.host.Open(ctx, Open{Dir: dir, Resume: resume, Editor: s, Servers: stdioServers(servers)})
	if err != nil {
		return nil, err
	}
	s.s = sess
	a.mu.Lock()
	a.sessions[string(id)] = s
	a.mu.Unlock()
	return s, nil
}

// stdioServers are the editor's stdio MCP servers.
func stdioServers(in []sdk.McpServer) []Server {
	var out []Server
	for _, m := range in {
		if m.Stdio == nil {
			continue
		}
		env := map[string]string{}
		for _, e := range m.Stdio.Env {
			env[e.Name] = e.Value
		}
		out = append(out, Server{Name: m.Stdio.Name, Command: m.Stdio.Command, Args: m.Stdio.Args, Env: env})
	}
	return out
}

func (a *agent) get(id sdk.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[string(id)]; s != nil {
		return s, nil
	}
	return nil, sdk.NewInvalidParams(map[string]any{"sessionId": "no such session: " + string(id)})
}

func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.get(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	turn, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	if s.cancel != nil {
		s.mu.Unlock()
		cancel()
		return sdk.PromptResponse{}, sdk.NewInvalidRequest(map[string]any{"sessionId": "a prompt of this session is still running"})
	}
	s.cancel = cancel
	told := s.told
	s.told = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel, s.current = nil, ""
		s.mu.Unlock()
		cancel()
	}()
	if !told {
		for _, n := range s.s.Notices() {
			a.update(turn, s.id, sdk.UpdateAgentMessageText("⚠ "+n+"\n\n"))
		}
	}
	err = s.s.Prompt(turn, promptText(p.Prompt, s.dir))
	if turn.Err() != nil {
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	if err != nil {
		a.update(ctx, s.id, sdk.UpdateAgentMessageText("\nharvey: "+err.Error()+"\n"))
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// promptText is the prompt as Harvey reads one: the text blocks, a
// linked file named by its path, an embedded one with its text.
func promptText(blocks []sdk.ContentBlock, dir string) string {
	var b strings.Builder
	for _, c := range blocks {
		switch {
		case c.Text != nil:
			b.WriteString(c.Text.Text)
		case c.ResourceLink != nil:
			fmt.Fprintf(&b, " %s ", pathOf(c.ResourceLink.Uri, dir))
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			fmt.Fprintf(&b, "\n\n%s:\n```\n%s\n```\n", pathOf(r.Uri, dir), strings.TrimRight(r.Text, "\n"))
		}
	}
	return strings.TrimSpace(b.String())
}

// pathOf is a file URI as the model names files: relative to the
// workspace when inside it.
func pathOf(uri, dir string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return uri
	}
	if rel, err := filepath.Rel(dir, u.Path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return u.Path
}

func (a *agent) Cancel(_ context.Context, p sdk.CancelNotification) error {
	if s, err := a.get(p.SessionId); err == nil {
		s.mu.Lock()
		if s.cancel != nil {
			s.cancel()
		}
		s.mu.Unlock()
	}
	return nil
}

func (a *agent) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	if s != nil {
		s.close()
	}
	return sdk.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
}

func (a *agent) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

func (a *agent) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}

// update sends one session/update; a failure is the log's.
func (a *agent) update(ctx context.Context, id sdk.SessionId, u sdk.SessionUpdate) {
	if err := a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: id, Update: u}); err != nil {
		fmt.Fprintf(a.log, "harvey acp: session/update: %v\n", err)
	}
}

// closeAll ends every session (the client went away).
func (a *agent) closeAll() {
	a.mu.Lock()
	all := a.sessions
	a.sessions = map[string]*session{}
	a.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}

func (s *session) close() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	if s.s != nil {
		s.s.Close()
	}
}

// Event turns one of the session's events into a session/update.
func (s *session) Event(ev map[string]any) {
	ctx := context.Background()
	str := func(k string) string { v, _ := ev[k].(string); return v }
	switch str("type") {
	case "assistant_text", "command_output":
		s.a.update(ctx, s.id, sdk.UpdateAgentMessageText(str("text")))
	case "error":
		s.a.update(ctx, s.id, sdk.UpdateAgentMessageText("\nharvey: "+str("message")+"\n"))
	case "tool_call":
		id, name := str("id"), str("name")
		args := argsOf(ev["arguments"])
		s.mu.Lock()
		s.current = id
		s.mu.Unlock()
		opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(kindOf(name)), sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartRawInput(args)}
		if loc := s.locations(args); loc != nil {
			opts = append(opts, sdk.WithStartLocations(loc))
		}
		s.a.update(ctx, s.id, sdk.StartToolCall(sdk.ToolCallId(id), titleOf(name, args), opts...))
	case "file_change":
		s.mu.Lock()
		if s.current != "" {
			s.diffs[s.current] = &Diff{Path: str("path"), Old: str("old"), New: str("new")}
		}
		s.mu.Unlock()
	case "tool_result":
		s.result(ctx, ev, str)
	}
}

// result is a tool call's end: its status, what the model was told, and
// the diff of the file it changed.
func (s *session) result(ctx context.Context, ev map[string]any, str func(string) string) {
	id := str("id")
	status := sdk.ToolCallStatusCompleted
	if str("status") != "ok" {
		status = sdk.ToolCallStatusFailed
	}
	content := []sdk.ToolCallContent{}
	s.mu.Lock()
	d := s.diffs[id]
	delete(s.diffs, id)
	if s.current == id {
		s.current = "" // an approval after this is not about it
	}
	s.mu.Unlock()
	if d != nil && status == sdk.ToolCallStatusCompleted {
		content = append(content, sdk.ToolDiffContent(d.Path, d.New, d.Old))
	}
	if out := str("output"); out != "" {
		content = append(content, sdk.ToolContent(sdk.TextBlock(out)))
	}
	s.a.update(ctx, s.id, sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(status), sdk.WithUpdateContent(content),
		sdk.WithUpdateRawOutput(map[string]any{"summary": str("summary"), "class": str("class")})))
}

// argsOf is a call's arguments as an object.
func argsOf(v any) map[string]any {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		raw, _ = json.Marshal(x)
	}
	m := map[string]any{}
	if json.Unmarshal(raw, &m) != nil {
		return map[string]any{"arguments": string(raw)}
	}
	return m
}

// kindOf is the protocol's kind of one of Harvey's tools.
func kindOf(name string) sdk.ToolKind {
	switch name {
	case "read_file", "list_files", "read_output", "job_output", "skill", "task_status", "task_wait":
		return sdk.ToolKindRead
	case "write_file", "edit_file":
		return sdk.ToolKindEdit
	case "run_command", "git_command", "job_kill":
		return sdk.ToolKindExecute
	case "search_files", "find_code", "tool_search":
		return sdk.ToolKindSearch
	case "delegate":
		return sdk.ToolKindThink
	}
	return sdk.ToolKindOther
}

// titleOf is a call as one line: the tool and what it acts on.
func titleOf(name string, args map[string]any) string {
	for _, k := range []string{"command", "path", "pattern", "question", "query", "name", "id", "task"} {
		if v, ok := args[k]; ok {
			s := strings.Join(strings.Fields(fmt.Sprint(v)), " ")
			if r := []rune(s); len(r) > 80 {
				s = string(r[:79]) + "…"
			}
			return name + " " + s
		}
	}
	return name
}

// locations are the files a call names.
func (s *session) locations(args map[string]any) []sdk.ToolCallLocation {
	p, ok := args["path"].(string)
	if !ok || p == "" {
		return nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.dir, p)
	}
	return []sdk.ToolCallLocation{{Path: p}}
}

// Ask is session/request_permission for one approval.
func (s *session) Ask(ctx context.Context, q Question) (Answer, error) {
	s.mu.Lock()
	id, own := s.current, s.current == ""
	if own {
		s.asked++
		id = fmt.Sprintf("approval-%d", s.asked)
	}
	s.mu.Unlock()
	if own {
		s.a.update(ctx, s.id, sdk.StartToolCall(sdk.ToolCallId(id), q.Action, sdk.WithStartKind(kindOf(q.Tool)), sdk.WithStartStatus(sdk.ToolCallStatusPending)))
	}
	tc := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(id), Title: sdk.Ptr(q.Action), Kind: sdk.Ptr(kindOf(q.Tool)), Status: sdk.Ptr(sdk.ToolCallStatusPending)}
	if q.Diff != nil {
		tc.Content = []sdk.ToolCallContent{sdk.ToolDiffContent(q.Diff.Path, q.Diff.New, q.Diff.Old)}
		tc.Locations = []sdk.ToolCallLocation{{Path: q.Diff.Path}}
	}
	opts := []sdk.PermissionOption{{Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "allow"}}
	if q.Always {
		opts = append(opts, sdk.PermissionOption{Kind: sdk.PermissionOptionKindAllowAlways, Name: "Always allow " + q.Tool + " this session", OptionId: "always"})
	}
	opts = append(opts, sdk.PermissionOption{Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "reject"})
	resp, err := s.a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: s.id, ToolCall: tc, Options: opts})
	switch {
	case err != nil:
		return Answer{}, err
	case resp.Outcome.Cancelled != nil || resp.Outcome.Selected == nil:
		return Answer{}, errors.New("the editor cancelled the question")
	}
	switch resp.Outcome.Selected.OptionId {
	case "allow":
		return Answer{Yes: true}, nil
	case "always":
		return Answer{Yes: true, Always: q.Always}, nil
	}
	return Answer{}, nil
}

// Buffers: the client offered both fs methods.
func (s *session) Buffers() bool {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.a.fs.ReadTextFile && s.a.fs.WriteTextFile
}

func (s *session) ReadText(ctx context.Context, abs string) (string, error) {
	resp, err := s.a.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: s.id, Path: abs})
	return resp.Content, err
}

func (s *session) WriteText(ctx context.Context, abs, content string) error {
	_, err := s.a.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: s.id, Path: abs, Content: content})
	return err
}
