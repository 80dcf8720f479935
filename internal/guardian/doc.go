// Package guardian keeps the end of a Harvey session, however the session
// ends (issue 75).
//
// The harvey a shell starts is the session's guardian: before anything
// else (Main, first in cmd/harvey's main) it starts the session as its
// child — the same program, arguments, environment and standard streams —
// and waits for it. It is the subreaper of everything the session starts,
// so whatever ends the session — /exit, Ctrl-D, a signal the session
// catches, SIGKILL, the OOM killer, a panic — every process the session
// left (jobs, tasks, MCP servers, launchers and whatever their commands
// forked, however deep) comes to the guardian. Once the session has ended,
// the guardian ends all of them at once (sandbox.EndTree), runs the check
// of every journal the session left (guard.RecoverOf: what a job, a server
// or a command changed in .git and agents/ is undone), removes the
// session's private directories (datadir.RemoveTemps: their names
// carry its pid), puts the terminal back as it was, says
// what it did in a line each on standard error, and exits with the
// session's status. Only then does the shell run the user's next command.
//
// The guardian holds nothing else of the session: it reads no config and
// opens nothing in the workspace. It is not dumpable (its environment holds
// the user's keys, as the session's does). SIGTERM and SIGHUP are passed to
// the session, which runs its own end; SIGINT and SIGQUIT only where the
// guardian is not in its terminal's foreground group (there the terminal
// sent them to the session too). Should the guardian itself die, the
// session gets SIGTERM (a parent-death signal) and ends as on SIGTERM;
// should both be killed at once, the journals stay, and the next harvey in
// that workspace (or harvey sandbox) runs their checks before anything
// else.
//
// In the session, Main only takes the guardian's mark out of the
// environment (nothing the session starts inherits it) and keeps the line
// to its guardian, on which Keep names a program started on purpose to
// outlive the session (the ollama serve it starts): it is left running.
// EndOnSignal has the session itself run its end on SIGHUP and SIGTERM.
// Linux only: elsewhere Main starts nothing and the session is the process
// the shell started.
package guardian
