package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/alive"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/knowledge"
	"github.com/harvey-agent/harvey/internal/lazyre"
	"github.com/harvey-agent/harvey/internal/llm"
	"github.com/harvey-agent/harvey/internal/rag"
	"github.com/harvey-agent/harvey/internal/recorder"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wsfile"
)

// Command is a slash command.
type Command struct {
	Name    string
	Usage   string
	Summary string
	Help    string // longer text for /help CMD
	Handler func(ctx context.Context, a *Agent, args []string, out io.Writer) error
	Aliases []string
	Raw     bool // the handler gets the rest of the line as one argument
}

// ErrExit ends the session.
var ErrExit = errors.New("exit")

func (a *Agent) registerCommands() {
	a.commands = map[string]*Command{}
	add := func(c *Command) {
		a.commands[c.Name] = c
		for _, al := range c.Aliases {
			a.commands[al] = c
		}
	}
	add(&Command{Name: "help", Usage: "/help [all | CMD]", Summary: "the commands to start with (all: every one), or explain one", Handler: cmdHelp})
	add(&Command{Name: "ports", Usage: "/ports [PORT | close PORT]", Summary: "publish a port of the session's network (a dev server's) on your machine's 127.0.0.1, or list them", Handler: cmdPorts})
	add(&Command{Name: "jobs", Usage: "/jobs [ID | log ID | kill ID | restart ID]", Summary: "background jobs (!cmd & or the model's): list them, show one's new output or all it kept, stop or restart one", Handler: cmdJobs})
	add(&Command{Name: "delegate", Usage: "/delegate TASK", Summary: "a sub-agent does TASK in its own context (reads by default) and answers in a few lines; your next message starts with its answer", Handler: cmdDelegate})
	add(&Command{Name: "tasks", Usage: "/tasks [ID | kill ID]", Summary: "async calls of your tools (async: true): list them, show one's result, or stop one", Handler: cmdTasks})
	add(&Command{Name: "status", Usage: "/status", Summary: "backend, model (and whether Ollama has it loaded), tool mode, context in use against the window, instructions loaded, recording", Handler: cmdStatus})
	add(&Command{Name: "clear", Usage: "/clear", Summary: "forget the conversation (keeps the system prompt and pinned context; your session_start hooks run again)", Handler: cmdClear})
	add(&Command{Name: "rag", Usage: "/rag query|create|ingest|list|use|on|off|status|remove ...", Summary: "retrieval: the workspace index (no setup) and RAG stores of embedded chunks",
		Handler: func(ctx context.Context, a *Agent, args []string, out io.Writer) error {
			err := rag.Do(ctx, ragEnv(a), args, out)
			a.gate.embedFor = rag.WorkspaceEmbedder(a.Config.RAG, a.OllamaURL, newEmbedder) // rag workspace may have named a model
			return err
		},
		Help: rag.Usage + "\nWith RAG on, the top 5 chunks above 0.3 of the active store go into your message before each turn. The workspace index is lexical; harvey rag ingest --store workspace embeds this workspace's index too, and find_code then fuses both rankings (docs/retrieval.md)."})
	add(&Command{Name: "retry", Usage: "/retry", Summary: "send the conversation again when the model's answer failed (the tools that ran are not run again)",
		Handler: func(ctx context.Context, a *Agent, _ []string, _ io.Writer) error { return a.retryTurn(ctx) },
		Help:    "After a model call failed for good (the server was down past the retries), the tool results of the turn are kept; /retry asks the model again from there. harvey -c restores such a conversation, and /retry (or harvey -c -p /retry) goes on."})
	add(&Command{Name: "exit", Usage: "/exit", Summary: "leave Harvey (also /quit, /bye, Ctrl-D)", Aliases: []string{"quit", "bye"},
		Handler: func(context.Context, *Agent, []string, io.Writer) error { return ErrExit }})
	add(&Command{Name: "read", Usage: "/read FILE [FILE...]", Summary: "put workspace files into the conversation", Handler: cmdRead,
		Help: "Reads each file through the same checks as the read_file tool (workspace boundary, agents/, secret files, size cap) and adds it to the conversation as context."})
	add(&Command{Name: "write", Usage: "/write PATH", Summary: "save the last reply's first code block (or the whole reply) to a file", Handler: cmdWrite})
	add(&Command{Name: "run", Usage: "/run COMMAND [ARGS...]", Summary: "run a command in the workspace; output goes into the conversation (also !COMMAND)", Handler: cmdRun, Raw: true,
		Help: "Runs in the workspace inside the sandbox (Linux: a root of its own — the system, the workspace, TMPDIR, your toolchains and caches; writes only in the workspace, TMPDIR and a private layer over the caches; agents/ empty, .git/'s config and hooks read-only; package registries through Harvey's proxy, nothing else on the network; every process killed with it), with a filtered environment (no API keys), stdin from /dev/null, run_timeout, and output capped while it streams; you see the output as it arrives (redacted), then the exit status. In safe mode only allowlisted programs run, without a shell. If the sandbox blocks it, the line says which rule, and you may run it once more with that rule lifted by typing yes. /security shows what the sandbox covers here."})
	add(&Command{Name: "search", Usage: "/search PATTERN [PATH]", Summary: "regexp search of workspace files (quote a pattern with spaces)", Handler: cmdSearch})
	add(&Command{Name: "files", Usage: "/files [PATH]", Summary: "list a workspace directory", Handler: cmdFiles})
	add(&Command{Name: "git", Usage: "/git status|diff|log|show|blame [ARGS...]", Summary: "read-only git; output goes into the conversation", Handler: cmdGit})
	add(&Command{Name: "undo", Usage: "/undo [list]", Summary: "put back the file Harvey changed last (write_file, edit_file, /write, /apply)", Handler: cmdUndo,
		Help: "Each change keeps the version it replaced, for this session. /undo restores the latest one (or removes a file Harvey created, with the directories that write made if they are empty) only if the file is still exactly what Harvey wrote."})
	add(&Command{Name: "apply", Usage: "/apply", Summary: "write the code blocks of the last reply whose fence names a file", Handler: cmdApply,
		Help: "Finds fences like ```go path/to/file.go or ```path/to/file in the last reply, shows the diffs, and writes them after one confirmation (y, n, or a: always for /apply this session; headless only with --yes)."})
	add(&Command{Name: "hooks", Usage: "/hooks", Summary: "your hooks around tool calls and the conversation, in the order they run, and how often they fired",
		Handler: func(_ context.Context, a *Agent, _ []string, out io.Writer) error {
			fmt.Fprintln(out, a.gate.hooks.Describe())
			return nil
		},
		Help: "Hooks come from hooks: in your own config, where they run in a sandbox made for hooks (the workspace; of your home, the script a hook's command names and the file it redirects to, plus its readable: and writable: lists, never a credential or another agent's settings; your environment less its secrets; a refused write is said with the setting to add; unsandboxed: true on a hook runs it as your program), and from a workspace's agents/harvey.yaml once you confirm them, where they run in the sandbox as a command does: each runs a command before (pre_tool) or after (post_tool) the tool calls it matches, which may block the call, change its arguments or amend its result; or at the session's start (session_start), on each prompt (user_prompt: add context or hold the prompt back) or when a reply ends (stop: send the model on). Claude Code's scripts for the same events work unchanged; harvey hooks import brings them (a project's hooks into that project's config). docs/hooks.md has the contract."})
	add(&Command{Name: "context", Usage: "/context add TEXT|show|clear|load-dir PATH [GLOB]", Summary: "pinned context that survives /clear; load-dir puts a directory's files into the conversation", Handler: cmdContext,
		Help: "load-dir PATH [GLOB] adds every text file under PATH that the model may read (GLOB matches the name, or the path when it has a /), redacted, within the model's result cap, and says what it left out."})
	add(&Command{Name: "template", Usage: "/template list | use NAME [TEXT]", Summary: "send a prompt kept in agents/templates/NAME.md (shown the first time)", Handler: cmdTemplate})
	add(&Command{Name: "safemode", Usage: "/safemode on|off|status|allow CMD|deny CMD|reset", Summary: "command allowlist for /run, ! and run_command", Handler: cmdSafeMode})
	add(&Command{Name: "permissions", Usage: "/permissions list|set PATH PERMS|reset", Summary: "path-prefix read/write/exec/delete permissions", Handler: cmdPermissions,
		Help: "The most specific prefix wins. They apply to what is really touched (a link's target), in every tool and command alike: reads, listings and searches (each file), git output, writes, and delete (/undo removing a file Harvey created)."})
	add(&Command{Name: "audit", Usage: "/audit show [N]|clear|status", Summary: "recent actions and their outcome", Handler: cmdAudit})
	add(&Command{Name: "security", Usage: "/security", Summary: "safe mode, permissions and audit at a glance", Handler: cmdSecurity})
	add(&Command{Name: "record", Usage: "/record start [FILE]|stop|status", Summary: "record the session as Markdown under agents/sessions/", Handler: cmdRecord})
	add(&Command{Name: "mcp", Usage: "/mcp [restart NAME]", Summary: "MCP servers: state, tools and their prompt cost; restart one", Handler: cmdMCP,
		Help: "Servers come from mcp: servers: in your config (harvey mcp add, harvey mcp import) and from a workspace's .mcp.json or agents/harvey.yaml (those start only after you confirm them). Their tools are named SERVER__tool, reach every model unless models: narrows them, within the model's tool budget (a line per server says what was left out and why; tool_search finds the rest), and ask before they run unless your config lists them under read_only. A server's prompts run as /SERVER:PROMPT [ARG=VALUE]..."})
	add(&Command{Name: "tools", Usage: "/tools [on|off|reload|check]", Summary: "list tools and the model's tool mode; turn tools on or off; reload or check agents/tools/*.md", Handler: cmdTools,
		Help: "User tools are Markdown files in agents/tools/NAME.md: YAML front matter (parameters, command as an argv list, timeout, effect) and the description as the body. See docs/user-tools.md."})
	add(&Command{Name: "model", Usage: "/model [NAME | check [NAME...|--all]]", Summary: "list models (with their last check), switch to NAME, or check whether a model can drive Harvey", Handler: cmdModel})
	add(&Command{Name: "ollama", Usage: "/ollama status|list|use NAME|start|stop", Summary: "the local Ollama service", Handler: cmdOllama})
	add(&Command{Name: "route", Usage: "/route add NAME PROVIDER URL MODEL|remove NAME|list|enable NAME|disable NAME", Summary: "named remote endpoints; @NAME PROMPT sends one turn there", Handler: cmdRoute})
	add(&Command{Name: "kb", Usage: knowledge.Usage, Summary: "knowledge base: projects, observations, concepts (agents/knowledge.db)", Handler: cmdKB, Raw: true,
		Help: "\n" + knowledge.Help})
	add(&Command{Name: "summarize", Usage: "/summarize", Summary: "condense the conversation with the model", Handler: cmdSummarize, Aliases: []string{"compact"}})
}

// commandNames lists the primary command names, sorted.
// commandSet is the slash commands by name and alias.
type commandSet map[string]*Command

// names lists each command once, sorted.
func (cs commandSet) names() []string {
	seen := map[string]bool{}
	var names []string
	for _, c := range cs {
		if !seen[c.Name] {
			seen[c.Name] = true
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	return names
}

// Dispatch runs one input line that starts with / or !.
func (a *Agent) Dispatch(ctx context.Context, line string, out io.Writer) error {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "!") {
		return cmdRunLine(ctx, a, strings.TrimSpace(line[1:]), out)
	}
	body := strings.TrimSpace(strings.TrimPrefix(line, "/"))
	if body == "" {
		return errors.New("empty command; try /help")
	}
	name, rest, _ := strings.Cut(body, " ")
	name = strings.ToLower(name)
	rest = strings.TrimSpace(rest)
	c, ok := a.commands[name]
	if server, prompt, isPrompt := strings.Cut(body, ":"); !ok && isPrompt && !strings.Contains(server, " ") {
		// /SERVER:PROMPT: an MCP server's prompt as a slash command.
		prompt, rest, _ := strings.Cut(prompt, " ")
		return runMCPPrompt(ctx, a, server, prompt, splitArgs(strings.TrimSpace(rest)))
	}
	if !ok {
		return fmt.Errorf("unknown command /%s; try /help", name)
	}
	if c.Raw {
		// The rest of the line as typed (a shell command keeps its quoting).
		var args []string
		if rest != "" {
			args = []string{rest}
		}
		return c.Handler(ctx, a, args, out)
	}
	return c.Handler(ctx, a, splitArgs(rest), out)
}

// splitArgs splits a command's arguments at blank space. A word that
// starts with a quote and has a matching quote before the next blank space
// or the end is one argument without its quotes ("func NewReplacer");
// other quotes are ordinary characters (it's), and backslashes are kept,
// so regular expressions pass through unchanged.
func splitArgs(s string) []string {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out
		}
		word, rest := quotedWord(s)
		if rest == s { // not quoted: up to the next blank
			if i := strings.IndexAny(s, " \t"); i >= 0 {
				word, rest = s[:i], s[i:]
			} else {
				word, rest = s, ""
			}
		}
		out = append(out, word)
		s = rest
	}
}

// quotedWord takes a quoted word off the front of s; rest == s when s does
// not start with one.
func quotedWord(s string) (word, rest string) {
	q := s[0]
	if q != '"' && q != '\'' {
		return "", s
	}
	for j := 1; j < len(s); j++ {
		if s[j] == q && (j+1 == len(s) || s[j+1] == ' ' || s[j+1] == '\t') {
			return s[1:j], s[j+1:]
		}
	}
	return "", s
}

// usageError says how a command is used.
func (cs commandSet) usageError(name string) error {
	if c, ok := cs[name]; ok {
		return fmt.Errorf("usage: %s", c.Usage)
	}
	return fmt.Errorf("usage: /%s", name)
}

func cmdHelp(_ context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] != "all" {
		return helpCommand(a, args[0], out)
	}
	width := a.termWidth()
	all := len(args) > 0 && args[0] == "all"
	fmt.Fprint(out, termtext.Wrap("Type a request for the model, or a command:", width, ""))
	line := func(usage, summary string) {
		switch {
		case width > 0 && width < 2+44+1+len(summary):
			// A narrow terminal: the usage, then the summary under it,
			// each wrapped to the width.
			fmt.Fprint(out, termtext.WrapHanging(usage, width, "  ", "    "))
			fmt.Fprint(out, termtext.Wrap(summary, width, "      "))
		case len(usage) > 44: // a long usage gets its own line
			fmt.Fprintf(out, "  %s\n  %-44s %s\n", usage, "", summary)
		default:
			fmt.Fprintf(out, "  %-44s %s\n", usage, summary)
		}
	}
	shown := map[string]bool{}
	if !all {
		// A newcomer's screen (24 rows): Start here in full, then each
		// group's commands by name.
		helpIndex(a, out, width, line)
		return nil
	}
	for _, g := range helpGroups {
		fmt.Fprintf(out, "\n%s\n", g.title)
		for _, n := range g.names {
			switch c, ok := a.commands[n]; {
			case n == "!":
				line("!COMMAND", "run a command in the workspace (as /run); its output goes into the conversation")
			case n == "@":
				line("@ROUTE PROMPT", "send one turn to a named route")
			case ok && !shown[n]:
				line(c.Usage, c.Summary)
				shown[n] = true
			}
		}
	}
	var more []string
	for _, n := range a.commands.names() {
		if !shown[n] {
			more = append(more, n)
		}
	}
	if len(more) > 0 {
		fmt.Fprintln(out, "\nMore")
		for _, n := range more {
			line(a.commands[n].Usage, a.commands[n].Summary)
		}
	}
	fmt.Fprint(out, termtext.Wrap("\nCtrl-C stops a reply or a command, or drops the line you are typing (at a question: answers no); Ctrl-Z moves a running command to the background (a job); Ctrl-D or /exit leaves. /help CMD explains a command.", width, ""))
	return nil
}

// helpCommand is /help CMD: its usage, what it does, its help text and
// aliases, wrapped to the terminal.
func helpCommand(a *Agent, arg string, out io.Writer) error {
	name := strings.ToLower(strings.TrimPrefix(arg, "/"))
	c, ok := a.commands[name]
	if !ok {
		return fmt.Errorf("no command /%s; try /help", name)
	}
	width := a.termWidth()
	fmt.Fprint(out, termtext.Wrap(c.Usage, width, ""))
	fmt.Fprint(out, termtext.Wrap(c.Summary, width, "  "))
	// Help text is laid out in lines; a line too wide for the terminal is
	// wrapped on its own.
	for _, l := range strings.Split(strings.TrimPrefix(c.Help, "\n"), "\n") {
		if width == 0 || len([]rune(l))+2 <= width {
			fmt.Fprintf(out, "  %s\n", l)
		} else {
			fmt.Fprint(out, termtext.Wrap(l, width, "  "))
		}
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(out, "  aliases: /%s\n", strings.Join(c.Aliases, ", /"))
	}
	return nil
}

// helpIndex is /help without an argument: Start here with what each
// command does, then one line per group naming its commands, so it fits
// a 24-row terminal; /help all lists every command with what it does.
func helpIndex(a *Agent, out io.Writer, width int, line func(usage, summary string)) {
	start := helpGroups[0]
	fmt.Fprintf(out, "\n%s\n", start.title)
	for _, n := range start.names {
		switch c, ok := a.commands[n]; {
		case n == "!":
			line("!COMMAND", "run a command in the workspace; its output goes into the conversation")
		case ok:
			line(c.Usage, c.Summary)
		}
	}
	fmt.Fprintln(out, "\nMore, by what it is for (/help CMD explains one):")
	named := map[string]bool{}
	for _, g := range helpGroups[1:] {
		var names []string
		for _, n := range g.names {
			named[n] = true
			if n == "@" {
				names = append(names, "@ROUTE")
			} else if _, ok := a.commands[n]; ok {
				names = append(names, "/"+n)
			}
		}
		fmt.Fprint(out, termtext.WrapHanging(g.title+": "+strings.Join(names, " "), width, "  ", "    "))
	}
	var rest []string
	for _, n := range a.commands.names() {
		if !named[n] && !slices.Contains(start.names, n) {
			rest = append(rest, "/"+n)
		}
	}
	if len(rest) > 0 {
		fmt.Fprint(out, termtext.WrapHanging("Other: "+strings.Join(rest, " "), width, "  ", "    "))
	}
	fmt.Fprint(out, termtext.Wrap("\n/help all lists every command with what it does. Ctrl-C stops a reply or a command; Ctrl-Z moves a running command to the background; Ctrl-D or /exit leaves.", width, ""))
}

// helpGroups is /help's order: what a newcomer needs first, then the rest
// by what it is for. A command no group names is listed under More, so
// none is ever left out.
var helpGroups = []struct {
	title string
	names []string
}{
	{"Start here", []string{"model", "read", "!", "undo", "exit"}},
	{"The conversation", []string{"clear", "retry", "summarize", "context", "template", "apply", "write", "record", "delegate"}},
	{"The workspace and git", []string{"files", "search", "git", "run", "jobs", "tasks", "ports"}},
	{"Models and servers", []string{"status", "ollama", "tools", "mcp", "route", "@"}},
	{"Safety", []string{"security", "safemode", "permissions", "hooks", "audit"}},
	{"Retrieval and knowledge", []string{"rag", "kb"}},
	{"Help", []string{"help"}},
}

func cmdStatus(ctx context.Context, a *Agent, _ []string, out io.Writer) error {
	backend := "none (no model reachable)"
	if a.Client != nil {
		backend = a.Client.Name()
	}
	fmt.Fprintf(out, "workspace:   %s\n", a.Workspace.Root)
	fmt.Fprintf(out, "backend:     %s\n", backend)
	if a.ModelName != "" {
		fmt.Fprintf(out, "tool mode:   %s (tool support: %s)\n", a.toolMode(), a.caps[a.ModelName])
		if l := a.loadedLine(ctx); l != "" {
			fmt.Fprintf(out, "model:       %s\n", l)
		}
	}
	fmt.Fprintf(out, "context:     %s\n", a.contextFill(llm.EstimateTokens(a.History)+a.schemaTokens(&a.toolSet, a.toolMode()), a.numCtx()))
	fmt.Fprintf(out, "history:     %s\n", termtext.Plural(len(a.History), "message"))
	instr := "none (HARVEY.md or AGENTS.md in the workspace are read at start)"
	if len(a.instructions) > 0 {
		instr = strings.Join(a.instructions, ", ")
	}
	fmt.Fprintf(out, "instructions: %s\n", instr)
	rec := "off"
	if a.Recorder != nil {
		rec = a.Recorder.Path
	}
	fmt.Fprintf(out, "recording:   %s\n", rec)
	fmt.Fprintf(out, "safe mode:   %v\n", a.Config.SafeMode)
	fmt.Fprintf(out, "sandbox:     %s\n", sandboxpolicy.ModeName(a.Config.Sandbox))
	fmt.Fprintf(out, "command env: %s\n", commandEnvNames(a.Config.Sandbox))
	if n, ran, fired := a.gate.hooks.Counts(); n > 0 {
		fmt.Fprintf(out, "hooks:       %d (%d run, %d blocked, changed or added something; /hooks)\n", n, ran, fired)
	}
	fmt.Fprintf(out, "retries:     %s\n", llm.PolicyOf(a.Config.Retry).Describe())
	return nil
}

// commandEnvNames lists the variables commands get (names only, never
// values), those sandbox.env adds marked.
func commandEnvNames(p config.SandboxPolicy) string {
	named := map[string]bool{}
	for _, kv := range secrets.Named(os.Environ(), p.Env) {
		n, _, _ := strings.Cut(kv, "=")
		named[n] = true
	}
	var names []string
	for _, kv := range runner.EnvFor(p) {
		n, _, _ := strings.Cut(kv, "=")
		if named[n] {
			n += " (sandbox.env)"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func cmdClear(ctx context.Context, a *Agent, _ []string, out io.Writer) error {
	a.ClearHistory()
	fmt.Fprintln(out, "conversation cleared")
	a.gate.hooks.SessionStart(ctx, "clear")
	return nil
}

// addContext puts command output into the conversation, labelled.
func (cv *conversation) addContext(label, text string) {
	cv.AddMessage(llm.RoleUser, fmt.Sprintf("[context: %s]\n%s", label, text))
}

func cmdRead(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		return a.commands.usageError("read")
	}
	var errs []string
	for _, p := range args {
		rr, err := a.gate.readChecked(ctx, p, 0, 0)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		a.addContext("/read "+rr.Path, rr.Text)
		note := termtext.Plural(rr.Lines, "line")
		if rr.Binary {
			note = rr.Text
		} else if rr.Truncated {
			note += fmt.Sprintf(", cut at %d bytes to fit the context; the model can read on with read_file offset=%d", a.maxOut(), rr.NextLine)
		}
		fmt.Fprintf(out, "read %s into context (%s)\n", rr.Path, note)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

var codeBlockRE = lazyre.New("(?s)```[^\n]*\n(.*?)```")

func cmdWrite(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) != 1 {
		return a.commands.usageError("write")
	}
	last := ""
	for i := len(a.History) - 1; i >= 0; i-- {
		if a.History[i].Role == llm.RoleAssistant && strings.TrimSpace(a.History[i].Content) != "" {
			last = a.History[i].Content
			break
		}
	}
	if last == "" {
		return errors.New("no reply to write yet")
	}
	content := last
	if m := codeBlockRE().FindStringSubmatch(last); m != nil {
		content = m[1]
	}
	msg, err := a.gate.writeChecked(ctx, "/write", args[0], content) // asked as /write, "always" for /write only
	if err != nil {
		return err
	}
	fmt.Fprintln(out, msg)
	return nil
}

func cmdRun(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		return a.commands.usageError("run")
	}
	return cmdRunLine(ctx, a, strings.Join(args, " "), out)
}

// cmdRunLine runs a command line typed by the user (no approval: the user
// typed it) and puts its output into the conversation.
func cmdRunLine(ctx context.Context, a *Agent, line string, out io.Writer) error {
	if line == "" {
		return a.commands.usageError("run")
	}
	if bg, ok := strings.CutSuffix(line, "&"); ok && !strings.HasSuffix(bg, "&") && strings.TrimSpace(bg) != "" {
		// !cmd &: a background job (/jobs lists it).
		st, err := a.gate.startJob(ctx, "", bg)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, termtext.Sanitize(st.text))
		return nil
	}
	// The output is shown as it arrives (and, in the REPL, that it is
	// alive while it is silent); then the status line.
	echo, stop := out, func() {}
	if a.Interactive {
		echo, stop = alive.Watch(out, a.termWidth)
	}
	res, err := a.gate.runCheckedEcho(ctx, "", line, 0, echo, false)
	stop()
	if err != nil {
		return err
	}
	text := res.Text(a.maxOut())
	a.addContext("/run "+line, text)
	if res.Err != nil && !errors.Is(res.Err, context.Canceled) {
		return res.Err // said once, as the error
	}
	fmt.Fprintln(out, termtext.Sanitize(strings.Join(append([]string{res.Status()}, res.Notes()...), "\n")))
	if res.ExitCode != 0 || res.TimedOut {
		return stepFailed{line: line, status: res.Status()}
	}
	return nil
}

// stepFailed is a command the user typed that failed: already said by
// its status line in the REPL; a failed step of a headless run (--run
// exits 1).
type stepFailed struct{ line, status string }

func (e stepFailed) Error() string { return fmt.Sprintf("%s: %s", e.line, e.status) }

func cmdSearch(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 || len(args) > 2 {
		return a.commands.usageError("search")
	}
	p := "."
	if len(args) == 2 {
		p = args[1]
	}
	h, err := a.gate.searchChecked(ctx, args[0], p)
	text := h.Text
	if err != nil {
		if len(args) == 2 && strings.Contains(err.Error(), "no such file") {
			return fmt.Errorf("%v (to search for a phrase with spaces, quote it: /search \"%s %s\")", err, args[0], args[1])
		}
		return err
	}
	fmt.Fprintln(out, termtext.Sanitize(text))
	a.addContext("/search "+strings.Join(args, " "), text)
	return nil
}

func cmdFiles(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	p := "."
	if len(args) > 0 {
		p = args[0]
	}
	text, _, err := a.gate.listChecked(ctx, p)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, termtext.Sanitize(strings.TrimRight(text, "\n")))
	return nil
}

func cmdGit(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		return a.commands.usageError("git")
	}
	text, err := a.gate.gitChecked(ctx, args[0], args[1:])
	if err != nil {
		return err
	}
	for _, l := range strings.Split(termtext.Sanitize(strings.TrimRight(text, "\n")), "\n") {
		fmt.Fprintln(out, colorDiffLine(a.colorize, l))
	}
	a.addContext("/git "+strings.Join(args, " "), text)
	return nil
}

// fencedBlockRE matches a fenced block and its info string.
var fencedBlockRE = lazyre.New("(?s)```([^\n`]*)\n(.*?)```")

type taggedBlock struct{ Path, Content string }

// findTaggedBlocks finds the fences that name a file, as the original
// Harvey read them: a language and a path (```go src/x.go, ```go:src/x.go)
// or a path alone (```README.md, ```src/x.go). A language alone (```go)
// names no file.
func findTaggedBlocks(s string) []taggedBlock {
	var out []taggedBlock
	for _, m := range fencedBlockRE().FindAllStringSubmatch(s, -1) {
		if p := fencePath(m[1]); p != "" {
			out = append(out, taggedBlock{Path: p, Content: m[2]})
		}
	}
	return out
}

// fencePath is the file a fence's info string names, or "".
func fencePath(info string) string {
	info = strings.TrimSpace(info)
	words := strings.Fields(info)
	if len(words) == 1 {
		if lang, p, ok := strings.Cut(words[0], ":"); ok && lang != "" && looksLikePath(p) && !strings.Contains(lang, "/") {
			return p // ```go:src/x.go
		}
	}
	switch {
	case len(words) >= 2 && looksLikePath(words[1]):
		return words[1] // ```go src/x.go
	case len(words) == 1 && looksLikePath(words[0]):
		return words[0] // ```README.md, ```src/x.go
	}
	return ""
}

// looksLikePath: a word with a directory or a file extension (x.go,
// src/main.rs, .gitignore), not a language name (go, c++, objective-c).
func looksLikePath(w string) bool {
	if w == "" || strings.ContainsAny(w, "`") {
		return false
	}
	if strings.Contains(w, "/") {
		return true
	}
	dot := strings.LastIndexByte(w, '.')
	return dot >= 0 && dot < len(w)-1
}

func cmdApply(ctx context.Context, a *Agent, _ []string, out io.Writer) error {
	var last string
	for i := len(a.History) - 1; i >= 0; i-- {
		if a.History[i].Role == llm.RoleAssistant {
			last = a.History[i].Content
			break
		}
	}
	blocks := findTaggedBlocks(last)
	if len(blocks) == 0 {
		return errors.New("no code blocks tagged with a file name in the last reply (fence like ```go path/file.go)")
	}
	// Plan every file first (the path gate, the diff), show the diffs,
	// ask once, then write each one that still holds what was shown.
	var plans []*wsfile.Change
	defer func() {
		for _, fc := range plans {
			fc.Close() // a plan not committed lets go of its directory
		}
	}()
	var errs []string
	for _, b := range blocks {
		content := b.Content
		fc, err := a.gate.planChange(b.Path, content)
		switch {
		case err != nil:
			errs = append(errs, err.Error())
		case fc == nil:
			fmt.Fprintf(out, "  %s is unchanged\n", termtext.Sanitize(termtext.QuotePath(b.Path)))
		default:
			plans = append(plans, fc)
			fmt.Fprintf(out, "%s\n", termtext.Sanitize(fc.Action))
			for _, line := range strings.SplitAfter(strings.TrimSuffix(termtext.Sanitize(changeDiff(fc)), "\n"), "\n") {
				fmt.Fprintf(out, "  %s", strings.TrimSuffix(line, "\n")+"\n")
			}
		}
	}
	for _, e := range errs {
		fmt.Fprintf(out, "  not written: %s\n", termtext.Sanitize(e))
	}
	if len(plans) > 0 {
		// The one approval (approval.go): y, n, always for /apply; headless
		// it is refused unless --yes, counted like every other refusal.
		err := a.gate.confirm(ctx, "/apply", "write "+termtext.Plural(len(plans), "file")+" shown above")
		if err != nil && a.Interactive && ctx.Err() == nil {
			fmt.Fprintln(out, "nothing written")
			return nil
		}
		if err != nil {
			return err
		}
	}
	for _, fc := range plans {
		msg, err := a.gate.commitChange(ctx, changedBy("/apply"), fc)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		fmt.Fprintln(out, termtext.Sanitize(msg))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func cmdContext(ctx context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		return a.commands.usageError("context")
	}
	switch args[0] {
	case "load-dir":
		return loadDir(ctx, a, args[1:], out)
	case "add":
		if len(args) < 2 {
			return a.commands.usageError("context")
		}
		text := strings.Join(args[1:], " ")
		if a.PinnedContext != "" {
			a.PinnedContext += "\n"
		}
		a.PinnedContext += text
		// at most one pinned message: update it in place
		for i, m := range a.History {
			if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, pinnedPrefix) {
				a.History[i].Content = pinnedPrefix + a.PinnedContext
				fmt.Fprintln(out, "pinned context updated")
				return nil
			}
		}
		a.History = append(a.History, llm.Message{Role: llm.RoleUser, Content: pinnedPrefix + a.PinnedContext})
		fmt.Fprintln(out, "pinned context added")
	case "show":
		if a.PinnedContext == "" {
			fmt.Fprintln(out, "no pinned context")
		} else {
			fmt.Fprintln(out, termtext.Sanitize(a.PinnedContext))
		}
	case "clear":
		a.PinnedContext = ""
		kept := a.History[:0]
		for _, m := range a.History {
			if !(m.Role == llm.RoleUser && strings.HasPrefix(m.Content, pinnedPrefix)) {
				kept = append(kept, m)
			}
		}
		a.History = kept
		fmt.Fprintln(out, "pinned context cleared")
	default:
		return a.commands.usageError("context")
	}
	return nil
}

func cmdRecord(_ context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		args = []string{"status"}
	}
	switch args[0] {
	case "start":
		if a.Recorder != nil {
			return fmt.Errorf("already recording to %s", a.Recorder.Path)
		}
		name := ""
		if len(args) > 1 {
			name = args[1]
		}
		r, err := recorder.Start(a.Workspace.Tree, name, a.ModelName, a.maxOut())
		if err != nil {
			return err
		}
		a.Recorder = r
		fmt.Fprintf(out, "recording to %s\n", r.Path)
	case "stop":
		if a.Recorder == nil {
			return errors.New("not recording")
		}
		p := a.Recorder.Path
		a.Recorder.Close()
		a.Recorder = nil
		fmt.Fprintf(out, "recording saved: %s\n", p)
	case "status":
		if a.Recorder == nil {
			fmt.Fprintln(out, "not recording")
		} else {
			fmt.Fprintf(out, "recording to %s (%d turns)\n", a.Recorder.Path, a.Recorder.Turns())
		}
	default:
		return a.commands.usageError("record")
	}
	return nil
}

func cmdTools(_ context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "on":
			a.toolsOff = false
		case "off":
			a.toolsOff = true
		case "reload", "check":
			a.toolProblems = a.reloadUserTools(a.Workspace, a.gate)
			a.confirmUserTools(&a.Terminal, a.Workspace)
			for _, p := range a.toolProblems {
				fmt.Fprintln(out, "problem: "+termtext.Sanitize(p.Error()))
			}
			fmt.Fprintf(out, "%d user tools loaded from %s/, %d of yours from %s/\n", len(a.userTools), UserToolsDir, len(a.ownTools), OwnToolsLabel)
			if len(a.toolProblems) > 0 {
				return fmt.Errorf("%s in tool files; those files were skipped", termtext.Plural(len(a.toolProblems), "problem"))
			}
			if args[0] == "check" {
				return nil
			}
		default:
			return a.commands.usageError("tools")
		}
		a.refreshSystemPrompt()
	}
	mode := a.toolMode()
	if a.ModelName == "" {
		fmt.Fprintln(out, "no model selected")
	} else {
		fmt.Fprintf(out, "model %s: tool mode %s (tool support: %s)\n", a.ModelName, mode, a.caps[a.ModelName])
		if mode == ModeSchema {
			fmt.Fprintf(out, "prompt layout: %s\n", a.layouts[a.ModelName])
		}
	}
	for _, l := range a.Tools.describe() {
		fmt.Fprintln(out, "  "+l)
	}
	if a.mcp != nil && a.ModelName != "" {
		for _, l := range a.offerLines(a.ModelName, a.window(a.Client)) {
			fmt.Fprintln(out, termtext.Sanitize(l))
		}
	}
	return nil
}

func cmdSummarize(ctx context.Context, a *Agent, _ []string, out io.Writer) error {
	start := time.Now()
	before, err := a.summarize(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "history condensed from %d messages (%s)\n", before, time.Since(start).Round(time.Second))
	a.warmStart() // the next request starts with the summary: evaluate it while you type
	return nil
}
