package harvey

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/acp"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/events"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// harvey acp: Harvey as an Agent Client Protocol agent on stdio for an
// editor (internal/acp speaks the protocol). Each editor session is one of
// Harvey's sessions, opened as headless ones are (a repository's
// unconfirmed configuration left out, and said), whose events become the
// editor's updates, whose approvals are the editor's questions, and whose
// file reads and changes go through the editor's buffers where it offers
// them.

// acpCommand runs harvey acp [--model M] [--ollama URL].
func acpCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harvey acp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var h acpHost
	fs.StringVar(&h.model, "model", "", "")
	fs.StringVar(&h.ollama, "ollama", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: harvey acp [--model MODEL] [--ollama URL]  (an editor starts it; docs/editors.md)")
		return 2
	}
	h.log = stderr
	return acp.Serve(ctx, h, stdin, stdout, stderr)
}

type acpHost struct {
	model, ollama string
	log           io.Writer
}

// Open starts a session in o.Dir for the editor.
func (h acpHost) Open(ctx context.Context, o acp.Open) (acp.Session, error) {
	sink := events.New(io.Discard, events.ModeJSON)
	sink.Listen = o.Editor.Event
	var start bytes.Buffer
	a, err := Start(ctx, Options{Dir: o.Dir, Model: h.model, OllamaURL: h.ollama, Continue: o.Resume, Stdin: strings.NewReader(""),
		Stdout: events.Writer{S: sink}, Stderr: io.MultiWriter(h.log, &start), WaitForServer: true})
	if err != nil {
		return nil, err
	}
	a.Err = h.log
	a.events = sink
	a.approvals.interactive = func() bool { return true }
	a.approvals.ui = acpAsker{o.Editor, a.Workspace.Root}
	a.approvals.observe = func(r approvalRequest, approved bool, by string) {
		sink.Approval(r.tool, r.action, approved, by)
		if approved && r.change != nil {
			o.Editor.Event(map[string]any{"type": "file_change", "path": filepath.Join(a.Workspace.Root, r.change.Target),
				"old": secrets.Redact(r.change.Old), "new": secrets.Redact(r.change.Content)})
		}
	}
	if o.Editor.Buffers() {
		a.gate.buffers = o.Editor
	}
	s := &acpSession{a: a}
	for _, l := range strings.Split(start.String(), "\n") {
		if strings.HasPrefix(l, "warning:") || strings.HasPrefix(l, "harvey:") {
			s.notices = append(s.notices, termtext.Sanitize(l))
		}
	}
	s.servers, s.ed = o.Servers, o.Editor
	return s, nil
}

// acpSession is one of Harvey's sessions driven by an editor.
type acpSession struct {
	a       *Agent
	notices []string
	ed      acp.Editor
	servers []acp.Server // the editor's MCP servers, started at the first prompt once allowed
}

func (s *acpSession) Prompt(ctx context.Context, text string) error {
	s.startServers(ctx)
	s.a.events.TurnStart(text)
	err := s.a.RunPrompt(ctx, text)
	s.a.flushLater()
	if err == ErrExit {
		return nil
	}
	return err
}

// startServers starts the MCP servers the editor named, each once the
// user allows exactly its command line in the editor: sandboxed as a
// repository's are, its env values sent as written (never from Harvey's
// environment); a server of your own config's name stays yours.
func (s *acpSession) startServers(ctx context.Context) {
	servers := s.servers
	s.servers = nil
	for _, sv := range servers {
		argv := append([]string{sv.Command}, sv.Args...)
		action := "start the editor's MCP server " + sv.Name + ": " + termtext.QuoteArgv(argv)
		if len(sv.Env) > 0 {
			action += " (env: " + strings.Join(slices.Sorted(maps.Keys(sv.Env)), ", ") + ")"
		}
		if _, mine := s.a.Config.MCP.Servers[sv.Name]; mine {
			s.a.logf("harvey acp: the editor's MCP server %s is not started: your config has a server of that name", sv.Name)
			continue
		}
		if ans, err := s.ed.Ask(ctx, acp.Question{Tool: "mcp", Action: action}); err != nil || !ans.Yes {
			continue
		}
		if s.a.mcp == nil {
			s.a.mcp = newMCPManager(s.a)
		}
		srv := s.a.mcp.Add(sv.Name, config.MCPServer{Command: argv, Env: sv.Env, FromWorkspace: true})
		if err := s.a.mcp.Connect(ctx, srv); err != nil {
			s.ed.Event(map[string]any{"type": "error", "message": fmt.Sprintf("MCP server %s: %s", sv.Name, termtext.OneLine(err.Error()))})
			continue
		}
		registerMCP(s.a.mcp, s.a.Tools, &s.a.Terminal, srv)
	}
}

func (s *acpSession) History() []acp.Message {
	var out []acp.Message
	for _, m := range s.a.History {
		if (m.Role == llm.RoleUser || m.Role == llm.RoleAssistant) && strings.TrimSpace(m.Content) != "" {
			out = append(out, acp.Message{Role: string(m.Role), Text: secrets.Redact(m.Content)})
		}
	}
	return out
}

func (s *acpSession) Notices() []string { return s.notices }

func (s *acpSession) Close() {
	s.a.Close()
	s.a.Workspace.Close()
}

// acpAsker asks the editor what the terminal would ask.
type acpAsker struct {
	ed   acp.Editor
	root string
}

func (k acpAsker) ask(ctx context.Context, r approvalRequest, d decision) (answer, error) {
	q := acp.Question{Tool: r.tool, Action: r.action, Always: d == askYNA}
	if r.change != nil {
		q.Diff = &acp.Diff{Path: filepath.Join(k.root, r.change.Target), Old: secrets.Redact(r.change.Old), New: secrets.Redact(r.change.Content), Existed: r.change.Existed}
	}
	ans, err := k.ed.Ask(ctx, q)
	if err != nil {
		return answer{}, err
	}
	return answer{yes: ans.Yes, always: ans.Always}, nil
}
