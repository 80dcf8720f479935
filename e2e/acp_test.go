package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/secrets"
)

// editorClient is a scripted ACP client, as an editor is one: it allows
// file changes and rejects commands, holds one unsaved buffer, and keeps
// what it was sent.
type editorClient struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	asked   []string
	wrote   map[string]string
	buffers map[string]string
	reads   []string
	sawText chan struct{}
	once    sync.Once
}

func (c *editorClient) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, p.Path)
	if t, ok := c.buffers[p.Path]; ok {
		return sdk.ReadTextFileResponse{Content: t}, nil
	}
	b, err := os.ReadFile(p.Path)
	return sdk.ReadTextFileResponse{Content: string(b)}, err
}

func (c *editorClient) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wrote[p.Path] = p.Content
	return sdk.WriteTextFileResponse{}, nil
}

func (c *editorClient) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	c.asked = append(c.asked, title)
	choice := "reject"
	if strings.HasPrefix(title, "start the editor's MCP server t: ") {
		choice = "allow"
	}
	if strings.HasPrefix(title, "write ") {
		choice = "allow"
		if len(p.ToolCall.Content) == 0 || p.ToolCall.Content[0].Diff == nil || p.ToolCall.Content[0].Diff.NewText != "hello from the model\n" {
			choice = "reject" // the question must show the change
		}
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: sdk.PermissionOptionId(choice)}}}, nil
}

func (c *editorClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n.Update)
	if n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil && strings.Contains(n.Update.AgentMessageChunk.Content.Text.Text, "Think") {
		c.once.Do(func() { close(c.sawText) })
	}
	return nil
}

func (c *editorClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (c *editorClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, nil
}
func (c *editorClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, nil
}
func (c *editorClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, nil
}
func (c *editorClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, nil
}

// TestEndToEndACPSession: an editor drives harvey acp on stdio against a
// scripted model. The model reads a file (the editor's unsaved buffer,
// redacted), writes one (the editor's question shows the diff; allowed;
// written by the editor's fs/write_text_file, not on disk) and runs a
// command (rejected: nothing ran); the text and each tool call arrive as
// session/updates and the turn ends with end_turn. A second prompt,
// cancelled while the model answers, ends with cancelled.
func TestEndToEndACPSession(t *testing.T) {
	t.Parallel()
	RequireSandbox(t)
	bin := Build(t)
	dir := t.TempDir()
	WriteFile(t, dir, "notes.txt", "what is on disk\n")
	f := fakeollama.New(t, "llama3.2:latest")
	stall := fakeollama.TextReply("llama3.2", "Thinking about it")
	stall.Stall = time.Minute
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r", Name: "read_file", Args: map[string]any{"path": "notes.txt"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "hello.txt", "content": "hello from the model\n"}}),
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "c", Name: "run_command", Args: map[string]any{"command": "touch ran.txt"}}),
		fakeollama.TextReply("llama3.2", "Done."),
		stall)
	cmd := exec.Command(bin, "acp", "--model", "llama3.2", "--ollama", f.URL())
	cmd.Dir = dir
	cfg := t.TempDir()
	WriteFile(t, cfg, "harvey/harvey.yaml", "sandbox:\n  readable: ["+strconv.Quote(filepath.Dir(os.Args[0]))+"]\n")
	cmd.Env = append(secrets.Environ(os.Environ()), "NO_COLOR=1", "OLLAMA_HOST=", "XDG_CONFIG_HOME="+cfg)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	notesAbs := filepath.Join(dir, "notes.txt")
	client := &editorClient{wrote: map[string]string{}, sawText: make(chan struct{}),
		buffers: map[string]string{notesAbs: "UNSAVED-BUFFER key AKIAIOSFODNN7EXAMPLE\n"}}
	conn := sdk.NewClientSideConnection(client, in, out)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}}); err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	// The editor's MCP server: started at the first prompt once allowed, its env as given.
	sess, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{{Stdio: &sdk.McpServerStdio{
		Name: "t", Command: os.Args[0], Args: []string{}, Env: []sdk.EnvVariable{{Name: "HARVEY_TEST_HELPER", Value: "mcp-server"}}}}}})
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, stderr.String())
	}
	resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("read the notes, write hello.txt, touch ran.txt")}})
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v\n%s", resp, err, stderr.String())
	}
	reqs := f.ChatRequests()
	if names := fakeollama.ToolNamesOf(reqs[0]); !slices.Contains(names, "t__echo") {
		t.Errorf("the editor's MCP server's tools are not offered: %v", names)
	}
	if r := fakeollama.ToolResults(reqs)["r"]; !strings.Contains(r, "UNSAVED-BUFFER") || strings.Contains(r, "AKIAIOSFODNN7EXAMPLE") {
		t.Errorf("read_file did not read the editor's buffer, redacted: %s", r)
	}
	helloAbs := filepath.Join(dir, "hello.txt")
	client.mu.Lock()
	if client.wrote[helloAbs] != "hello from the model\n" {
		t.Errorf("the write did not go through fs/write_text_file: %q", client.wrote)
	}
	if len(client.asked) != 3 || !strings.HasPrefix(client.asked[1], "write hello.txt") || !strings.Contains(client.asked[2], "touch ran.txt") {
		t.Errorf("questions: %q", client.asked)
	}
	kinds, text := map[string]string{}, ""
	statuses := map[string]sdk.ToolCallStatus{}
	var diff *sdk.ToolCallContentDiff
	for _, u := range client.updates {
		switch {
		case u.ToolCall != nil:
			kinds[string(u.ToolCall.ToolCallId)] = string(u.ToolCall.Kind)
		case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil:
			statuses[string(u.ToolCallUpdate.ToolCallId)] = *u.ToolCallUpdate.Status
			for _, c := range u.ToolCallUpdate.Content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			text += u.AgentMessageChunk.Content.Text.Text
		}
	}
	client.mu.Unlock()
	if kinds["r"] != "read" || kinds["w"] != "edit" || kinds["c"] != "execute" {
		t.Errorf("tool call kinds: %v", kinds)
	}
	if statuses["r"] != sdk.ToolCallStatusCompleted || statuses["w"] != sdk.ToolCallStatusCompleted || statuses["c"] != sdk.ToolCallStatusFailed {
		t.Errorf("tool call ends: %v", statuses)
	}
	if diff == nil || diff.Path != helloAbs || diff.NewText != "hello from the model\n" {
		t.Errorf("the write's update carries no diff: %+v", diff)
	}
	if !strings.Contains(text, "Done.") {
		t.Errorf("the reply's text: %q", text)
	}
	for _, p := range []string{"hello.txt", "ran.txt"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s is on disk: the editor wrote the file, and the rejected command must not run", p)
		}
	}
	// A prompt cancelled while the model answers.
	done := make(chan sdk.PromptResponse, 1)
	go func() {
		r, _ := conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("think long")}})
		done <- r
	}()
	select {
	case <-client.sawText:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model's first words never arrived\n%s", stderr.String())
	}
	start := time.Now()
	if err := conn.Cancel(ctx, sdk.CancelNotification{SessionId: sess.SessionId}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.StopReason != sdk.StopReasonCancelled {
			t.Errorf("a cancelled prompt ended with %q", r.StopReason)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the cancel took %v", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the cancelled prompt did not end\n%s", stderr.String())
	}
	// session/load: the workspace's last conversation, replayed.
	client.mu.Lock()
	client.updates = nil
	client.mu.Unlock()
	if _, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: "earlier", Cwd: dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v\n%s", err, stderr.String())
	}
	client.mu.Lock()
	var replay []string
	for _, u := range client.updates {
		if u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil {
			replay = append(replay, "user: "+u.UserMessageChunk.Content.Text.Text)
		}
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			replay = append(replay, "agent: "+u.AgentMessageChunk.Content.Text.Text)
		}
	}
	client.mu.Unlock()
	if r := strings.Join(replay, "\n"); !strings.Contains(r, "user: read the notes, write hello.txt, touch ran.txt") || !strings.Contains(r, "agent: Done.") {
		t.Errorf("session/load replayed:\n%s", r)
	}
	if b, _ := json.Marshal(client.updates); strings.Contains(string(b), "AKIAIOSFODNN7EXAMPLE") {
		t.Error("a secret reached the editor's updates")
	}
}
