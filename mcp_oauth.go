package harvey

import (
	"context"
	"fmt"
	"io"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/mcpauth"
	"github.com/harvey-agent/harvey/internal/mcpclient"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// OAuth for HTTP MCP servers is internal/mcpauth's; what stays here is
// harvey mcp login and logout, and how a login speaks at the terminal.

// termUI is a login's (and a form's) voice at the terminal: its lines on stderr, in the
// session's colours, and its questions through the one line reader.
type termUI struct{ tm *Terminal }

func (u termUI) Say(tone termtext.Tone, line string) {
	switch tone {
	case termtext.Done:
		u.tm.logf("%s", u.tm.colorize("32", line))
	case termtext.Warn:
		u.tm.logf("%s", u.tm.colorize("33", line))
	case termtext.Prompt:
		u.tm.logf("%s", u.tm.colorize("36", line))
	case termtext.Note:
		u.tm.logf("%s", u.tm.dim(line))
	default:
		u.tm.logf("%s", line)
	}
}

func (u termUI) Ask(q string) (string, error) { return u.tm.In.Ask(q) }

// mcpLogin is harvey mcp login NAME and harvey mcp logout NAME, for an
// HTTP server of your own config.
func mcpLogin(ctx context.Context, verb string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintf(stderr, "usage: harvey mcp %s NAME\n", verb)
		return 2
	}
	name := args[0]
	cfg, _, err := configfile.LoadUser()
	if err != nil {
		fmt.Fprintf(stderr, "harvey: %v\n", err)
		return 1
	}
	s, ok := cfg.MCP.Servers[name]
	if !ok || s.URL == "" {
		fmt.Fprintf(stderr, "harvey: no HTTP MCP server %q in your config (harvey mcp add %s --url URL)\n", name, name)
		return 1
	}
	if verb == "logout" {
		gone, err := mcpauth.Forget(name, s.URL)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "harvey: %v\n", err)
			return 1
		case gone:
			fmt.Fprintf(stdout, "forgot the token of MCP server %s\n", name)
		default:
			fmt.Fprintf(stdout, "no token kept for MCP server %s\n", name)
		}
		return 0
	}
	tm := &Terminal{In: newLineReader(stdin), Out: &termtext.Writer{W: stdout}, Err: &termtext.Writer{W: stderr}, Interactive: true}
	tm.In.show = tm.Err // its questions on the screen
	loggedIn, err := mcpclient.Login(ctx, mcpHost{termUI: termUI{tm}}, Version, name, s)
	if err != nil {
		fmt.Fprintf(stderr, "harvey: MCP server %s: %s\n", name, secrets.Redact(termtext.OneLine(err.Error())))
		return 1
	}
	if !loggedIn {
		fmt.Fprintf(stdout, "MCP server %s answers without a new login (a kept token, or none needed)\n", name)
	}
	return 0
}
