package acp

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// fakeSession plays a session: a prompt "block" waits for its end; any
// other reports a reply, a read, a write it asks about, and its end.
type fakeSession struct {
	ed      Editor
	dir     string
	answers []Answer
	closed  bool
}

func (s *fakeSession) Prompt(ctx context.Context, text string) error {
	if text == "block" {
		<-ctx.Done()
		return ctx.Err()
	}
	s.ed.Event(map[string]any{"type": "assistant_text", "text": "On it: " + text})
	s.ed.Event(map[string]any{"type": "tool_call", "id": "1", "name": "edit_file", "arguments": json.RawMessage(`{"path":"a.go","old_text":"x","new_text":"y"}`)})
	ans, err := s.ed.Ask(ctx, Question{Tool: "edit_file", Action: "write a.go", Always: true, Diff: &Diff{Path: s.dir + "/a.go", Old: "x\n", New: "y\n", Existed: true}})
	if err != nil {
		return err
	}
	s.answers = append(s.answers, ans)
	s.ed.Event(map[string]any{"type": "file_change", "path": s.dir + "/a.go", "old": "x\n", "new": "y\n"})
	s.ed.Event(map[string]any{"type": "tool_result", "id": "1", "name": "edit_file", "status": "ok", "output": "wrote a.go"})
	_, err = s.ed.Ask(ctx, Question{Tool: "run_command", Action: "run: make"})
	return err
}

func (s *fakeSession) History() []Message {
	return []Message{{Role: "user", Text: "earlier"}, {Role: "assistant", Text: "answered"}}
}
func (s *fakeSession) Notices() []string {
	return []string{"warning: agents/harvey.yaml is not yet confirmed"}
}
func (s *fakeSession) Close() { s.closed = true }

type fakeHost struct {
	mu       sync.Mutex
	sessions []*fakeSession
	opens    []Open
}

func (h *fakeHost) Open(_ context.Context, o Open) (Session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &fakeSession{ed: o.Editor, dir: o.Dir}
	h.sessions, h.opens = append(h.sessions, s), append(h.opens, o)
	return s, nil
}

type client struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	asked   []sdk.RequestPermissionRequest
}

func (c *client) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{Content: "buffer"}, nil
}
func (c *client) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, nil
}
func (c *client) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, p)
	id := "reject"
	if len(c.asked) == 1 {
		id = "always"
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: sdk.PermissionOptionId(id)}}}, nil
}
func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n.Update)
	return nil
}
func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, nil
}
func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, nil
}
func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, nil
}
func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, nil
}
func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, nil
}

func serve(t *testing.T, h Host) (*sdk.ClientSideConnection, *client) {
	t.Helper()
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Serve(ctx, h, ar, aw, io.Discard); close(done) }()
	t.Cleanup(func() { cancel(); cw.Close(); <-done })
	c := &client{}
	return sdk.NewClientSideConnection(c, cw, cr), c
}

func TestASessionThroughTheProtocol(t *testing.T) {
	h := &fakeHost{}
	conn, c := serve(t, h)
	ctx := t.Context()
	init, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}})
	if err != nil || !init.AgentCapabilities.LoadSession || init.ProtocolVersion != sdk.ProtocolVersionNumber {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	if _, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: "relative", McpServers: []sdk.McpServer{}}); err == nil {
		t.Error("a relative cwd was accepted")
	}
	sess, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: "/work/proj", McpServers: []sdk.McpServer{{Stdio: &sdk.McpServerStdio{Name: "files", Command: "npx", Args: []string{"-y", "files"}, Env: []sdk.EnvVariable{{Name: "K", Value: "v"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if o := h.opens[0]; o.Dir != "/work/proj" || o.Resume || len(o.Servers) != 1 || o.Servers[0].Env["K"] != "v" || !o.Editor.Buffers() {
		t.Errorf("opened with %+v", o)
	}
	if text, err := h.opens[0].Editor.ReadText(ctx, "/work/proj/a.go"); err != nil || text != "buffer" {
		t.Errorf("ReadText: %q %v", text, err)
	}
	resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("fix"),
		sdk.ResourceLinkBlock("a.go", "file:///work/proj/src/a.go")}})
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", resp, err)
	}
	if a := h.sessions[0].answers; len(a) != 1 || !a[0].Yes || !a[0].Always {
		t.Errorf("answers %+v", a)
	}
	c.mu.Lock()
	b, _ := json.Marshal(c.updates)
	asked := c.asked
	c.mu.Unlock()
	got := string(b)
	for _, want := range []string{"agent_message_chunk", "warning: agents/harvey.yaml is not yet confirmed", "On it: fix src/a.go",
		`"kind":"edit"`, `"title":"edit_file a.go"`, `"path":"/work/proj/a.go"`, `"status":"completed"`, `"newText":"y\n"`, "wrote a.go", "approval-"} {
		if !strings.Contains(got, want) {
			t.Errorf("the updates lack %q:\n%s", want, got)
		}
	}
	if len(asked) != 2 || len(asked[0].Options) != 3 || len(asked[1].Options) != 2 || asked[0].ToolCall.ToolCallId != "1" || asked[0].ToolCall.Content[0].Diff == nil {
		t.Errorf("permission requests: %+v", asked)
	}
	// A second prompt, cancelled.
	done := make(chan sdk.PromptResponse, 1)
	go func() {
		r, _ := conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("block")}})
		done <- r
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("again")}}); err == nil {
		t.Error("a second prompt while one runs was accepted")
	}
	conn.Cancel(ctx, sdk.CancelNotification{SessionId: sess.SessionId})
	select {
	case r := <-done:
		if r.StopReason != sdk.StopReasonCancelled {
			t.Errorf("stop reason %q", r.StopReason)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel did not end the prompt")
	}
	// session/load replays the conversation; the old session of that id closes.
	c.mu.Lock()
	c.updates = nil
	c.mu.Unlock()
	if _, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: sess.SessionId, Cwd: "/work/proj", McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if !h.sessions[0].closed || !h.opens[1].Resume {
		t.Error("load did not resume, or left the old session open")
	}
	c.mu.Lock()
	b, _ = json.Marshal(c.updates)
	c.mu.Unlock()
	if !strings.Contains(string(b), "user_message_chunk") || !strings.Contains(string(b), "answered") {
		t.Errorf("replay: %s", b)
	}
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: "nope", Prompt: []sdk.ContentBlock{sdk.TextBlock("x")}}); err == nil {
		t.Error("a prompt of an unknown session was accepted")
	}
	if _, err := conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: sess.SessionId}); err != nil || !h.sessions[1].closed {
		t.Errorf("close: %v", err)
	}
}

func TestPromptTextAndTitles(t *testing.T) {
	got := promptText([]sdk.ContentBlock{sdk.TextBlock("look at"), sdk.ResourceLinkBlock("x", "file:///elsewhere/x.go"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///p/b.go", Text: "package b\n"}})}, "/p")
	if got != "look at /elsewhere/x.go \n\nb.go:\n```\npackage b\n```" {
		t.Errorf("%q", got)
	}
	if s := titleOf("run_command", map[string]any{"command": strings.Repeat("x ", 100)}); len([]rune(s)) > 92 {
		t.Errorf("%q", s)
	}
	for name, k := range map[string]sdk.ToolKind{"read_file": sdk.ToolKindRead, "search_files": sdk.ToolKindSearch, "delegate": sdk.ToolKindThink, "mcp__x": sdk.ToolKindOther} {
		if kindOf(name) != k {
			t.Errorf("%s: %s", name, kindOf(name))
		}
	}
	if a := argsOf("not json"); a["arguments"] == nil {
		t.Errorf("%v", a)
	}
}
