// Package sandboxpolicy decides what a program Harvey starts may use; it
// starts nothing (internal/runner does, internal/sandbox is the launcher).
//
// CommandSpec (spec.go) is the one place a command's sandbox.Spec is built:
// the workspace writable with agents/ hidden and .git's programs read-only
// (internal/guard's Protected and Pinned), the toolchains on PATH readable,
// credential files in them masked, the caches private per workspace
// (overlays, or private directories where there are no namespaces:
// sandbox_view.go), the user's sandbox: paths, the network through the
// registry proxy only (registry_proxy.go) unless the user's config gives
// it; GitSpec is git's, HookView a hook's home. Env is a command's
// environment inside its sandbox (TMPDIR, the private caches, the proxy).
// LookPath is which program a name means (never one found through a
// relative PATH entry). Blocked names the rule a failed command ran into
// and the setting that allows it, in one line; StatusText and Line say
// what the kernel mode keeps; NoSandboxRefusal is the refusal where there
// is no sandbox and the user has not opted out of it.
package sandboxpolicy
