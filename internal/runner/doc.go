// Package runner starts every program Harvey runs for the user or the
// model — /run, !, run_command, git, user tools, a workspace's hooks,
// background jobs, stdio MCP servers — under the sandbox.Spec the caller
// got from internal/sandboxpolicy, and waits for it or keeps it running.
//
// A program that ends (runner.go): Run and RunArgv take a Proc — the
// workspace as working directory, stdin from /dev/null, the environment
// internal/secrets allows (BaseEnv, EnvFor), a session of its own so a
// timeout kills the whole process group, output capped while it streams
// (CapWriter) and echoed redacted line by line — and return a Result,
// whose Text is what the model reads and whose Blocked names the sandbox
// rule it ran into. CommandPolicy is safe mode's allowlist, and
// ParseCommandLine reads a command line as the shell would or says it
// needs one.
//
// A program that keeps running (start.go): Command is the one way a
// long-lived program is made ready — in its sandbox, through the launcher,
// in a process group of its own — for Start (a background job: output to
// one writer, ended with Harvey) and for an MCP server's stdio transport.
//
// The session's network (session_net.go): the holder every command without
// the host's network joins as it starts, and the ports the user publishes
// from it (PublishPort). RemoveTmp ends what the session started, at exit.
package runner
