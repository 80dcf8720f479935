// Package runner starts every program Harvey runs for the user or the
// model — /run, !, run_command, git, user tools, a workspace's hooks,
// stdio MCP servers — and decides what each may use.
//
// Child processes (runner.go): the workspace as working directory, stdin
// from /dev/null, the environment internal/secrets allows (BaseEnv), a
// session of their own so a timeout kills the whole process group, output
// capped while it streams (CapWriter) and echoed redacted line by line;
// Run and RunArgv return a Result, whose Text is what the model reads.
// CommandPolicy is safe mode's allowlist, and ParseCommandLine reads a
// command line as the shell would or says it needs one.
//
// The sandbox's policy (spec.go, sandbox.go, sandbox_view.go):
// CommandSpec is the one place a command's sandbox.Spec is built — the
// workspace writable with agents/ hidden and .git's programs read-only
// (internal/guard's Protected and Pinned), the toolchains on PATH readable,
// credential files in them masked, the caches private per workspace
// (overlays, or private directories where there are no namespaces), the
// user's sandbox: paths, the network through the registry proxy only
// (registry_proxy.go) unless the user's config gives it. Blocked names the
// rule a failed command ran into and the setting that allows it, in one
// line; StatusText and Line say what the kernel mode keeps. The launcher
// itself is internal/sandbox.
package runner
